package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/phone"
)

const chatUsage = `Usage: mombot chat --from PHONE [flags]

Talks with the assistant in the terminal as the family member with that
phone, with the same memory as WhatsApp. Commands: /history shows the
conversation, /clear forgets it, /quit (or end of input) leaves, /help
lists them.`

// chatCommands are chat's commands, for suggestions.
var chatCommands = []string{"/clear", "/exit", "/help", "/history", "/quit"}

const chatHelp = `Commands:
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

func runChat(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("mombot chat", chatUsage)
	var cfg assistantConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	cfg.registerFrom(fs)
	extra, err := parseInterleaved(fs, e, args)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return usagef("chat takes no arguments; type the messages once it starts")
	}
	if err := cfg.checkFrom(); err != nil {
		return err
	}
	a, mem, store, err := cfg.open(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()

	fmt.Fprintf(e.stdout, "Chatting as %s. /history, /clear, /quit, /help.\n", phone.Mask(cfg.from))
	lines := bufio.NewScanner(e.stdin)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(e.stdout, "> ")
		if !lines.Scan() {
			fmt.Fprintln(e.stdout)
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
			if err := historyShow(ctx, e.stdout, mem, cfg.from, false); err != nil {
				fmt.Fprintln(e.stdout, "(no conversation yet)")
			}
			continue
		case "/clear":
			if err := mem.Clear(ctx, cfg.from); err != nil && !errors.Is(err, conversation.ErrNotFound) {
				return fmt.Errorf("chat: %w", err)
			}
			fmt.Fprintln(e.stdout, "(conversation forgotten)")
			continue
		case "/help", "/?":
			fmt.Fprintln(e.stdout, chatHelp)
			continue
		}
		if cmd, ok := slashCommand(line); ok {
			// A slip like /hsitory would otherwise go to Claude as a
			// message, and into the conversation.
			fmt.Fprintf(e.stdout, "(unknown command %s%s; /help lists them. To send it as a message, start it with a space or //)\n",
				cmd, cli.DidYouMean(cmd, chatCommands))
			continue
		}
		if strings.HasPrefix(line, "//") {
			line = line[1:] // an escaped slash: the message starts with /
		}
		reply, _ := a.Handle(ctx, assistant.Inbound{From: cfg.from, Text: line}) // failures are logged; the reply says so kindly
		fmt.Fprintln(e.stdout, reply.Text)
		if ctx.Err() != nil {
			return nil
		}
	}
}
