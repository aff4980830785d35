package web_test

import (
	"runtime"
	"time"
)

// time0 is the zero time: the whole usage ledger.
var time0 time.Time

// waitABit lets the page's goroutines run while a test waits for them to
// reach a state it polls for.
func waitABit() {
	runtime.Gosched()
	time.Sleep(time.Millisecond)
}
