package jsonfile

// SetParseFailedHook makes f run when a read without the lock file finds a
// file that does not parse, until the returned function is called.
func SetParseFailedHook(f func()) (restore func()) {
	testHookParseFailed = f
	return func() { testHookParseFailed = nil }
}

// DefaultPathIn is DefaultPath with the container's data folder at dockerDir.
var DefaultPathIn = defaultPathIn
