package assistant

import (
	"bytes"
	"fmt"

	"github.com/mombot/mombot/apology"
)

// checkPDF checks a PDF against the API's limits: a "%PDF-" header in the
// first kilobyte, at most MaxPDFBytes, not encrypted, and at most
// MaxPDFPages page objects (see pdfPages). A PDF that keeps its page
// objects in compressed object streams counts none here, and the API's own
// check then applies.
func checkPDF(data []byte) error {
	head := data[:min(len(data), 1024)]
	switch {
	case !bytes.Contains(head, []byte("%PDF-")):
		return fmt.Errorf("%w: not a PDF (no %%PDF- header)", apology.ErrDocumentType)
	case len(data) > MaxPDFBytes:
		return fmt.Errorf("%w: a PDF of %d bytes, the limit is %d", apology.ErrDocumentTooLarge, len(data), MaxPDFBytes)
	case bytes.Contains(data, []byte("/Encrypt")):
		return fmt.Errorf("%w: the PDF is encrypted", apology.ErrDocumentLocked)
	}
	if n := pdfPages(data, MaxPDFPages+1); n > MaxPDFPages {
		return fmt.Errorf("%w: more than %d pages", apology.ErrDocumentTooLarge, MaxPDFPages)
	}
	return nil
}

// pdfPages counts the page objects written in the clear in data, up to
// limit: each "/Type", then any white space, then the name "/Page" ended
// by white space, a delimiter or the end of data (so the page tree's
// "/Type /Pages" is not one). Every byte of data is read at most twice,
// whatever it holds: the white space after a "/Type" is skipped once, and
// the search goes on after it. A regular expression such as
// `/Type\s*/Page` runs in linear time too, but several times slower on a
// file of "/Type" and long runs of spaces than on random bytes, since its
// literal prefix no longer skips most of the file (docs/benchmarks.md).
func pdfPages(data []byte, limit int) int {
	n := 0
	for n < limit {
		i := bytes.Index(data, typeKey)
		if i < 0 {
			break
		}
		data = data[i+len(typeKey):]
		j := 0
		for j < len(data) && pdfSpace(data[j]) {
			j++
		}
		data = data[j:]
		if bytes.HasPrefix(data, pageName) && (len(data) == len(pageName) || pdfEndsName(data[len(pageName)])) {
			n++
			data = data[len(pageName):]
		}
	}
	return n
}

var (
	typeKey  = []byte("/Type")
	pageName = []byte("/Page")
)

// pdfSpace reports whether c is white space in PDF (ISO 32000-1, 7.2.2):
// NUL, tab, line feed, form feed, carriage return and space.
func pdfSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

// pdfEndsName reports whether c ends a name: white space or a delimiter.
func pdfEndsName(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return pdfSpace(c)
}
