// Package chat is a conversation with the assistant at a terminal, one
// line a message: the loop of the chat command, with its own commands
// (/history, /clear, /quit, /help) and the rules that tell a command from
// a message. A mistyped command ("/hsitory") gets a suggestion rather
// than going to the assistant, and into the conversation; a line that
// starts with a space or "//" is sent as it is, so "//etc" sends "/etc",
// and a path-like line ("/etc/hosts?") is a message.
package chat

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/mombot/mombot/internal/cli"
)

// Session is what a chat talks to, for one person.
type Session struct {
	// Send sends text to the assistant and returns the reply to print,
	// kind when something went wrong.
	Send func(ctx context.Context, text string) string
	// History writes the conversation so far; an error prints that there
	// is none yet.
	History func(ctx context.Context, w io.Writer) error
	// Clear forgets the conversation; an error ends the chat.
	Clear func(ctx context.Context) error
	// Prompt is written before each line is read, for a person at a
	// terminal; empty means none, when the input is a pipe or a file, so
	// that the output is the replies alone.
	Prompt string
}

// commands are chat's commands, for suggestions.
var commands = []string{"/clear", "/exit", "/help", "/history", "/quit"}

// Help lists the commands, as /help prints them.
const Help = `Commands:
  /history   show this conversation
  /clear     forget this conversation
  /quit      leave (so does /exit, or end of input)
  /help      this list
Anything else is sent to the assistant. A line starting with a space or //
is sent as it is, so "//etc" sends "/etc".`

// slashCommand reports whether line is meant as a chat command: a slash
// and a single word of letters, like /hsitory. "/etc/hosts?" is a message.
func slashCommand(line string) (string, bool) {
	if !strings.HasPrefix(line, "/") || strings.HasPrefix(line, "//") {
		return "", false
	}
	word := strings.Fields(line)[0]
	for _, r := range word[1:] {
		if !unicode.IsLetter(r) {
			return "", false
		}
	}
	return strings.ToLower(word), len(word) > 1
}

// Run reads lines from in, answering each on out after s.Prompt, until
// /quit or /exit, the end of in, or the end of ctx after a reply. What it
// writes ends with a newline. It returns in's read error or Clear's, and
// nil otherwise.
func Run(ctx context.Context, in io.Reader, out io.Writer, s Session) error {
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(out, s.Prompt)
		if !lines.Scan() {
			if s.Prompt != "" {
				fmt.Fprintln(out) // the end of input came at the prompt
			}
			return lines.Err()
		}
		raw := lines.Text()
		line := strings.TrimSpace(raw)
		if line != "" && raw[0] == ' ' {
			// A leading space sends a line that looks like a command as a
			// message.
			line = " " + line
		}
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		case "/history":
			if err := s.History(ctx, out); err != nil {
				fmt.Fprintln(out, "(no conversation yet)")
			}
			continue
		case "/clear":
			if err := s.Clear(ctx); err != nil {
				return fmt.Errorf("chat: %w", err)
			}
			fmt.Fprintln(out, "(conversation forgotten)")
			continue
		case "/help", "/?":
			fmt.Fprintln(out, Help)
			continue
		}
		if cmd, ok := slashCommand(line); ok {
			// A slip like /hsitory would otherwise go to Claude as a
			// message, and into the conversation.
			fmt.Fprintf(out, "(unknown command %s%s; /help lists them. To send it as a message, start it with a space or //)\n",
				cmd, cli.DidYouMean(cmd, commands))
			continue
		}
		if strings.HasPrefix(line, "//") {
			line = line[1:] // an escaped slash: the message starts with /
		}
		fmt.Fprintln(out, s.Send(ctx, line))
		if ctx.Err() != nil {
			return nil
		}
	}
}
