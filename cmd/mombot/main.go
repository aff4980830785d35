// Command mombot is a family's Claude assistant on WhatsApp with durable,
// per-person conversation memory. Run "mombot help" for its commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr, once, and returns the exit status: 0 for
// success, 2 for a mistake on the command line (a bad store URL is one), 1
// for anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "mombot: "+err.Error())
	var u cli.UsageError
	if errors.As(err, &u) || errors.Is(err, storeurl.ErrBadURL) {
		return 2
	}
	return 1
}

// env is what a command gets from the process: arguments aside, its whole
// outside world, so tests run commands in-process.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	// insecureEndpoints is MOMBOT_INSECURE_TEST_ENDPOINTS=1, read here
	// once: the Graph API and transcription URLs may be http and (for
	// the Graph API) another host than Meta's. For tests' fakes only.
	insecureEndpoints bool
}

// insecureEndpointsEnv names the variable of env.insecureEndpoints. It is
// read from the environment only, never from the configuration file, which
// whoever can write the data folder might change.
const insecureEndpointsEnv = "MOMBOT_INSECURE_TEST_ENDPOINTS"

// command is one sub-command.
type command struct {
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// commands lists the sub-commands; each lives in its own file.
var commands = map[string]command{
	"history":     {"inspect and manage stored conversations (list, show, clear, migrate)", runHistory},
	"ask":         {"send one message as a family member and print the reply", runAsk},
	"chat":        {"talk with the assistant in the terminal, with the same memory", runChat},
	"serve":       {"run the WhatsApp webhook server (Meta Cloud API)", runServe},
	"lists":       {"show the family's shared lists", runLists},
	"usage":       {"what the assistant's API calls cost, per person and in total", runUsage},
	"erase":       {"delete everything stored about one phone number", runErase},
	"memory":      {"see and forget the family's long-term notes (list, forget)", runMemory},
	"healthcheck": {"ask a running server's /healthz; exit 0 if it answers (for containers)", runHealthcheck},
	"version":     {"print the build: version, VCS revision and time, Go version", runVersion},
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 2 && args[1] == "--version" {
		args = []string{args[0], "version"}
	}
	if len(args) < 2 || args[1] == "-h" || args[1] == "-help" || args[1] == "--help" {
		printUsage(stdout)
		if len(args) < 2 {
			return cli.Usagef("no command given")
		}
		return nil
	}
	name, rest := args[1], args[2:]
	if name == "help" {
		// mombot help CMD [SUB] is mombot CMD [SUB] -h.
		if len(rest) == 0 || rest[0] == "help" {
			printUsage(stdout)
			return nil
		}
		name, rest = rest[0], append(slices.Clone(rest[1:]), "-h")
		e.stderr = stdout // asked for, so it is output
	}
	cmd, ok := commands[name]
	if !ok {
		return cli.Usagef("unknown command %q%s; run \"mombot help\" for the list", name, cli.DidYouMean(name, commandNames()))
	}
	var err error
	if e.log, err = processLogger(stderr, getenv, name); err != nil {
		return err
	}
	switch v := strings.TrimSpace(getenv(insecureEndpointsEnv)); v {
	case "":
	case "1":
		e.insecureEndpoints = true
	default:
		return cli.Usagef("%s=%q: set it to 1, for tests against fake APIs only, or leave it unset", insecureEndpointsEnv, v)
	}
	if err := cmd.run(ctx, e, rest); err != nil && !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}

// commandNames returns the sub-commands' names, sorted.
func commandNames() []string {
	names := append(slices.Collect(maps.Keys(commands)), "help")
	slices.Sort(names)
	return names
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "mombot: a family's Claude assistant on WhatsApp, with conversation memory.")
	fmt.Fprintln(w, "\nUsage: mombot COMMAND [flags] [args]\n\nCommands:")
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-12s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nRun \"mombot help COMMAND\" (or \"mombot COMMAND -h\") for a command's flags. Configuration also comes from MOMBOT_* variables; see docs/configuration.md.")
}
