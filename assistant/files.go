package assistant

import (
	"mime"
	"os"
	"path/filepath"
)

// Files names files to send with a message, as the ask command's --image,
// --document and --voice do; "" means none.
type Files struct {
	Image, Document, Voice string
}

// ReadFiles reads the files f names into in: the picture as it is (its
// type is detected from its bytes), the document with the media type of
// its extension and its base name as the file name, the voice note as it
// is. The first file that cannot be read is the error.
func (in *Inbound) ReadFiles(f Files) error {
	if f.Image != "" {
		data, err := os.ReadFile(f.Image)
		if err != nil {
			return err
		}
		in.Image = data
	}
	if f.Document != "" {
		data, err := os.ReadFile(f.Document)
		if err != nil {
			return err
		}
		in.Document = &Document{Data: data, MediaType: mime.TypeByExtension(filepath.Ext(f.Document)), Filename: filepath.Base(f.Document)}
	}
	if f.Voice != "" {
		data, err := os.ReadFile(f.Voice)
		if err != nil {
			return err
		}
		in.Voice = data
	}
	return nil
}
