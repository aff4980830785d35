package anthropictest

import (
	"bytes"
	"encoding/base64"
)

// document checks a document block as the API does for the sources a
// client sends inline (https://docs.claude.com/en/docs/build-with-claude/pdf-support
// and .../citations): a base64 source is a PDF, media type
// "application/pdf", whose data decodes and begins as a PDF does; a text
// source is plain text, media type "text/plain", with its data. Sources by
// URL, file id or content blocks are left to the real API.
func document(at string, b block) *apiError {
	if b.Source == nil {
		return invalid("%s.document.source: Field required", at)
	}
	switch b.Source.Type {
	case "base64":
		if b.Source.MediaType != "application/pdf" {
			return invalid("%s.document.source.base64.media_type: Input should be 'application/pdf'", at)
		}
		if b.Source.Data == nil {
			return invalid("%s.document.source.base64.data: Field required", at)
		}
		pdf, err := base64.StdEncoding.DecodeString(*b.Source.Data)
		if err != nil {
			return invalid("%s.document.source.base64.data: Invalid base64 data", at)
		}
		if !bytes.Contains(pdf[:min(len(pdf), 1024)], []byte("%PDF-")) {
			return invalid("The PDF specified was not valid.")
		}
	case "text":
		if b.Source.MediaType != "text/plain" {
			return invalid("%s.document.source.text.media_type: Input should be 'text/plain'", at)
		}
		if b.Source.Data == nil {
			return invalid("%s.document.source.text.data: Field required", at)
		}
	case "url", "file", "content":
	default:
		return invalid("%s.document.source: Input tag '%s' found using 'type' does not match any of the expected tags: 'base64', 'content', 'file', 'text', 'url'", at, b.Source.Type)
	}
	return nil
}
