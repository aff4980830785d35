// Package logtest gives tests a log they can read while the code under
// test, on goroutines of its own, is still writing it.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a logger (slog.NewTextHandler,
// slog.NewJSONHandler) may write from many goroutines while a test reads
// it. The zero value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
