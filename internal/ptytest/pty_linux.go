package ptytest

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"unsafe"
)

// Open opens a pseudo-terminal pair and returns its two ends: what is
// written to the terminal end (a process's stdin, stdout or stderr) is
// read from the control end, and what is written to the control end is
// read from the terminal end, as typed. Both are closed when the test
// ends.
func Open(t testing.TB) (control, tty *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here (%v): what happens on a terminal is not exercised", err)
	}
	t.Cleanup(func() { control.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, control.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, control.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ptsname: %v", e)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return control, tty
}
