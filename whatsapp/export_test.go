package whatsapp

import "time"

// Joined exposes joined to the tests of package whatsapp_test: whether
// text[i] belongs to the same user-perceived character as text[i-1].
var Joined = joined

// SetRefusalLogEvery sets the interval of the log of refused requests, for
// the Servers created until restore.
func SetRefusalLogEvery(d time.Duration) (restore func()) {
	old := refusalLogEvery
	refusalLogEvery = d
	return func() { refusalLogEvery = old }
}
