package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/phone"
)

const chatUsage = `Usage: mombot chat --from PHONE [flags]

Talks with the assistant in the terminal as the family member with that
phone, with the same memory as WhatsApp. Commands: /history shows the
conversation, /clear forgets it, /quit (or end of input) leaves.`

func runChat(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("mombot chat", flag.ContinueOnError)
	var cfg assistantConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	cfg.registerFrom(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), chatUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
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

	fmt.Fprintf(e.stdout, "Chatting as %s. /history, /clear, /quit.\n", phone.Mask(cfg.from))
	lines := bufio.NewScanner(e.stdin)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(e.stdout, "> ")
		if !lines.Scan() {
			fmt.Fprintln(e.stdout)
			return lines.Err()
		}
		line := strings.TrimSpace(lines.Text())
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
		}
		reply, _ := a.Handle(ctx, assistant.Inbound{From: cfg.from, Text: line}) // failures are logged; the reply says so kindly
		fmt.Fprintln(e.stdout, reply.Text)
		if ctx.Err() != nil {
			return nil
		}
	}
}
