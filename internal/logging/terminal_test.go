package logging_test

import (
	"bufio"
	"strings"
	"testing"

	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/internal/ptytest"
)

// On a terminal, the default format is text, for a person to read; an
// explicit json still wins.
func TestAutoIsTextOnATerminal(t *testing.T) {
	control, tty := ptytest.Open(t)
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
