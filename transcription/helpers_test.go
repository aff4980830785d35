package transcription_test

import (
	"bytes"
	"mime/multipart"
)

// multipartWriter writes a form with fields and, if filename is set, the
// part "file"; it returns the Content-Type.
func multipartWriter(b *bytes.Buffer, fields map[string]string, filename string, file []byte) string {
	w := multipart.NewWriter(b)
	if filename != "" {
		p, _ := w.CreateFormFile("file", filename)
		p.Write(file)
	}
	for k, v := range fields {
		w.WriteField(k, v)
	}
	w.Close()
	return w.FormDataContentType()
}
