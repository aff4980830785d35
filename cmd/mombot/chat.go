package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/chat"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/internal/logging"
	"github.com/mombot/mombot/phone"
)

const chatUsage = `Usage: mombot chat --from NAME|PHONE [flags]

Talks with the assistant in the terminal as that family member (by their
name in mombot.json, or their phone number with its country code), with
the same memory as WhatsApp. Commands: /history shows the
conversation, /clear forgets it, /quit (or end of input) leaves, /help
lists them. With input from a pipe or a file, one message a line, it
prints the replies alone, without the greeting and the "> " prompts.`

func runChat(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot chat", chatUsage)
	var cfg assistantConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	cfg.registerFrom(fs)
	extra, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return cli.Usagef("chat takes no arguments; type the messages once it starts")
	}
	if err := cfg.checkFrom("chat"); err != nil {
		return err
	}
	a, mem, store, err := cfg.open(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	fc := cfg.file // loaded by checkFrom
	person, inFamily := fc.Family[cfg.from]
	loc, err := fc.Location(person.Timezone)
	if err != nil {
		return err
	}

	// A person at a terminal is greeted and prompted; input from a pipe or
	// a file gets the replies alone.
	prompt := ""
	if logging.IsTerminal(e.stdin) {
		prompt = "> "
		fmt.Fprintf(e.stdout, "Chatting as %s. /history, /clear, /quit, /help.\n", chatName(cfg.from, person.Name, inFamily))
	}
	return chat.Run(ctx, e.stdin, e.stdout, chat.Session{
		Send: func(ctx context.Context, text string) string {
			reply, _ := a.Handle(ctx, assistant.Inbound{From: cfg.from, Text: text}) // failures are logged; the reply says so kindly
			return reply.Text
		},
		History: func(ctx context.Context, w io.Writer) error {
			// Load, not History: looking at an expired conversation must
			// not delete it. Times are the person's.
			c, err := mem.Load(ctx, cfg.from)
			if err != nil {
				return err
			}
			conversation.WriteConversationIn(w, c, mem.Expired(c.LastActive), loc)
			return nil
		},
		Clear: func(ctx context.Context) error {
			if err := mem.Clear(ctx, cfg.from); err != nil && !errors.Is(err, conversation.ErrNotFound) {
				return err
			}
			return nil
		},
		Prompt: prompt,
	})
}

// chatName is who the chat is with, as its greeting says: the family
// member's name with their masked number, or the masked number alone.
func chatName(from, name string, inFamily bool) string {
	switch {
	case from == conversation.SystemSender:
		return from
	case inFamily:
		return fmt.Sprintf("%s (%s)", name, phone.Mask(from))
	}
	return phone.Mask(from)
}
