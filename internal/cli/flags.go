package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// UsageError is a mistake on the command line, said in one line; a
// command exits with status 2 for it.
type UsageError struct{ msg string }

func (u UsageError) Error() string { return u.msg }

// Usagef returns a UsageError with the formatted message.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// NewFlagSet returns the flag set of the command name ("mombot ask"),
// which returns its errors: its -h prints usage, then the flags.
func NewFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args with fs. With -h or -help it prints fs's usage on
// stderr and returns flag.ErrHelp; any other mistake is a one-line
// UsageError that names the command and points at its -h, rather than the
// whole usage text.
func Parse(fs *flag.FlagSet, stderr io.Writer, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	default:
		return Usagef("%s: %v (see %s -h)", strings.TrimPrefix(fs.Name(), "mombot "), err, fs.Name())
	}
}

// ParseInterleaved parses args as Parse does, letting flags come before,
// between and after the positional arguments, which it returns in order.
// After "--" everything is positional.
func ParseInterleaved(fs *flag.FlagSet, stderr io.Writer, args []string) ([]string, error) {
	var pos []string
	for {
		if err := Parse(fs, stderr, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
