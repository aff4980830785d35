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
	"github.com/mombot/mombot/phone"
)

const chatUsage = `Usage: mombot chat --from NAME|PHONE [flags]

Talks with the assistant in the terminal as that family member (by their
name in mombot.json, or their phone number with its country code), with
the same memory as WhatsApp. Commands: /history shows the
conversation, /clear forgets it, /quit (or end of input) leaves, /help
lists them.`

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

	fmt.Fprintf(e.stdout, "Chatting as %s. /history, /clear, /quit, /help.\n", phone.Mask(cfg.from))
	return chat.Run(ctx, e.stdin, e.stdout, chat.Session{
		Send: func(ctx context.Context, text string) string {
			reply, _ := a.Handle(ctx, assistant.Inbound{From: cfg.from, Text: text}) // failures are logged; the reply says so kindly
			return reply.Text
		},
		History: func(ctx context.Context, w io.Writer) error { return historyShow(ctx, w, mem, cfg.from, false) },
		Clear: func(ctx context.Context) error {
			if err := mem.Clear(ctx, cfg.from); err != nil && !errors.Is(err, conversation.ErrNotFound) {
				return err
			}
			return nil
		},
	})
}
