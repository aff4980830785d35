package logging_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/mombot/mombot/internal/logging"
)

// openPTY opens a pseudo-terminal pair and returns its two ends: what is
// written to the terminal end (the one a process's stderr would be) is
// read from the control end.
func openPTY(t *testing.T) (control, tty *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here (%v): Auto's choice of text on a terminal is not exercised", err)
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

// On a terminal, the default format is text, for a person to read; an
// explicit json still wins.
func TestAutoIsTextOnATerminal(t *testing.T) {
	control, tty := openPTY(t)
	if !logging.IsTerminal(tty) {
		t.Fatal("IsTerminal is false for a pseudo-terminal")
	}
	if got := logging.ResolveFormat(logging.Auto, tty); got != logging.Text {
		t.Errorf("Auto on a terminal resolves to %v, want text", got)
	}
	if got := logging.ResolveFormat(logging.JSON, tty); got != logging.JSON {
		t.Errorf("JSON on a terminal resolves to %v, want json", got)
	}

	logging.New(tty, nil).Info("hello", "k", "v")
	line, err := bufio.NewReader(control).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "time=") || !strings.Contains(line, "level=INFO msg=hello k=v") {
		t.Errorf("the terminal got %q, want a key=value line", line)
	}
}
