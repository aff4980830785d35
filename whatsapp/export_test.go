package whatsapp

import "time"

// Joined exposes joined to the tests of package whatsapp_test: whether
// text[i] belongs to the same user-perceived character as text[i-1].
var Joined = joined

// SetShutdownLockWait sets how long a drain waits, once a shutdown has
// begun, for a lock another holds, for the Servers created until restore.
func SetShutdownLockWait(d time.Duration) (restore func()) {
	old := shutdownLockWait
	shutdownLockWait = d
	return func() { shutdownLockWait = old }
}

// SetRefusalLogEvery sets the interval of the log of refused requests, for
// the Servers created until restore.
func SetRefusalLogEvery(d time.Duration) (restore func()) {
	old := refusalLogEvery
	refusalLogEvery = d
	return func() { refusalLogEvery = old }
}
