package delivery

import (
	"io"
	"os"
	"sync/atomic"
)

// CountFileWrites counts, until the test's cleanup, the fsyncs of the
// records a File appends and the files it rewrites whole, and sets how
// many records beyond twice its state a log may hold (minCompact).
func CountFileWrites(cleanup func(func()), slack int) (syncs, rewrites *atomic.Int64) {
	syncs, rewrites = new(atomic.Int64), new(atomic.Int64)
	sync0, rewrite0, min0 := syncFile, rewriteFile, minCompact
	syncFile = func(f *os.File) error { syncs.Add(1); return sync0(f) }
	rewriteFile = func(path string, w func(io.Writer) error) error { rewrites.Add(1); return rewrite0(path, w) }
	minCompact = slack
	cleanup(func() { syncFile, rewriteFile, minCompact = sync0, rewrite0, min0 })
	return syncs, rewrites
}
