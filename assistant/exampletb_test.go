package assistant_test

import "testing"

// exampleTB lets examples start a fake server, which wants a testing.TB.
type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (t *exampleTB) Helper()          {}
func (t *exampleTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
