package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// fake is a session that records what was sent.
type fake struct {
	sent    []string
	cleared int
	history error
	clear   error
}

func (f *fake) session() Session {
	return Session{
		Send: func(_ context.Context, text string) string {
			f.sent = append(f.sent, text)
			return fmt.Sprintf("reply %d", len(f.sent))
		},
		History: func(_ context.Context, w io.Writer) error {
			if f.history != nil {
				return f.history
			}
			_, err := fmt.Fprintf(w, "%d messages\n", len(f.sent))
			return err
		},
		Clear: func(context.Context) error { f.cleared++; return f.clear },
	}
}

// Each rule of a line: what goes to the assistant, what is a command, what
// gets a suggestion.
func TestRun(t *testing.T) {
	tests := []struct {
		name, input string
		sent        []string
		out         []string
	}{
		{"messages are sent and answered", "hi\nare you there?\n", []string{"hi", "are you there?"}, []string{"reply 1\n", "reply 2"}},
		{"blank lines are skipped", "\n   \nhi\n", []string{"hi"}, nil},
		{"/quit leaves before the rest", "/quit\nhi\n", nil, nil},
		{"/exit leaves too", "/exit\nhi\n", nil, nil},
		{"/history writes the conversation", "hi\n/history\n", []string{"hi"}, []string{"1 messages"}},
		{"/clear forgets", "/clear\n", nil, []string{"(conversation forgotten)"}},
		{"/help lists the commands", "/help\n/?\n", nil, []string{"/history   show this conversation"}},
		{"a mistyped command gets a suggestion and is not sent", "/hsitory\n", nil, []string{`unknown command /hsitory (did you mean "/history"?)`}},
		{"an unknown command is not sent either", "/weather\n", nil, []string{"unknown command /weather;"}},
		{"a path-like line is a message", "/etc/hosts, what is it?\n", []string{"/etc/hosts, what is it?"}, nil},
		{"// escapes a slash", "//slash\n", []string{"/slash"}, nil},
		{"a leading space sends a command as a message", " /help\n", []string{" /help"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fake
			var out strings.Builder
			if err := Run(context.Background(), strings.NewReader(tt.input), &out, f.session()); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(f.sent) != fmt.Sprint(tt.sent) {
				t.Errorf("sent %q, want %q", f.sent, tt.sent)
			}
			for _, want := range tt.out {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// With a prompt (input from a terminal) each line is asked for; without
// one (a pipe, a file) the output is the replies alone. Either way it ends
// with a newline, whether the input ends or /quit ends the chat.
func TestRunPrompt(t *testing.T) {
	tests := []struct {
		name, prompt, input, want string
	}{
		{"a pipe: the replies alone", "", "hi\nagain\n", "reply 1\nreply 2\n"},
		{"a pipe, ended by /quit", "", "hi\n/quit\n", "reply 1\n"},
		{"a pipe without a last newline", "", "hi\nagain", "reply 1\nreply 2\n"},
		{"a terminal", "> ", "hi\n", "> reply 1\n> \n"},
		{"a terminal, ended by /quit", "> ", "hi\n/quit\n", "> reply 1\n> "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fake
			s := f.session()
			s.Prompt = tt.prompt
			var out strings.Builder
			if err := Run(context.Background(), strings.NewReader(tt.input), &out, s); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("wrote %q, want %q", got, tt.want)
			}
		})
	}
}

// A failing history says there is none; a failing clear ends the chat
// with its error.
func TestRunErrors(t *testing.T) {
	f := fake{history: errors.New("not found")}
	var out strings.Builder
	if err := Run(context.Background(), strings.NewReader("/history\n"), &out, f.session()); err != nil || !strings.Contains(out.String(), "(no conversation yet)") {
		t.Errorf("history failing: %v, %q", err, out.String())
	}
	broken := errors.New("disk full")
	f = fake{clear: broken}
	if err := Run(context.Background(), strings.NewReader("/clear\nhi\n"), io.Discard, f.session()); !errors.Is(err, broken) || len(f.sent) != 0 {
		t.Errorf("clear failing: %v, sent %q", err, f.sent)
	}
	// The chat ends after the reply in hand once ctx is done.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f = fake{}
	if err := Run(ctx, strings.NewReader("hi\nagain\n"), io.Discard, f.session()); err != nil || len(f.sent) != 1 {
		t.Errorf("cancelled: %v, sent %q", err, f.sent)
	}
}
