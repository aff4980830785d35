package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/mombot/mombot/internal/logging"
)

// Progress draws a one-line progress bar. A nil *Progress draws nothing,
// so callers need not check.
type Progress struct {
	w    io.Writer
	last int
}

// NewProgress returns a progress bar on w, or nil (which draws nothing)
// when w is not a terminal: its \r frames would fill a log or a pipe.
func NewProgress(w io.Writer) *Progress {
	if !logging.IsTerminal(w) {
		return nil
	}
	return &Progress{w: w, last: -1}
}

// Show draws done of total, once per percent.
func (p *Progress) Show(done, total int) {
	if p == nil || total == 0 {
		return
	}
	pct := done * 100 / total
	if pct == p.last {
		return
	}
	p.last = pct
	const width = 30
	fill := done * width / total
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, done, total)
}

// Done ends the bar's line, if one was drawn.
func (p *Progress) Done() {
	if p != nil && p.last >= 0 {
		fmt.Fprintln(p.w)
	}
}
