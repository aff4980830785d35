package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/config"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/cli"
	"github.com/mombot/mombot/phone"
)

// assistantConfig is what the commands that talk to Claude share: the
// memory, the configuration file and the lists file.
type assistantConfig struct {
	mem        memoryConfig
	configPath string
	listsPath  string
	from       string
	// file, if set, is the configuration file already loaded (serve reads
	// it first), so that it is read and checked once.
	file *config.File
	// apiTransport, if set, wraps the Anthropic client's HTTP transport
	// (serve's metrics).
	apiTransport func(http.RoundTripper) http.RoundTripper
	// extraFamily are people the assistant knows besides the
	// configuration's family (serve's page: its guest).
	extraFamily map[string]assistant.Person

	// lists is the shared lists store, once open has opened it.
	lists *lists.Store
}

func (c *assistantConfig) register(fs *flag.FlagSet, e *env) error {
	if err := c.mem.register(fs, e); err != nil {
		return err
	}
	fs.StringVar(&c.configPath, "config", e.getenv("MOMBOT_CONFIG"), "configuration file: family, time zones, model, prompt file (env MOMBOT_CONFIG; default mombot.json if it exists)")
	fs.StringVar(&c.listsPath, "lists", e.getenv("MOMBOT_LISTS"), "the family's shared lists file (env MOMBOT_LISTS; default lists.json next to the conversations)")
	return nil
}

// registerFrom adds --from, the sender of ask and chat.
func (c *assistantConfig) registerFrom(fs *flag.FlagSet) {
	fs.StringVar(&c.from, "from", "", `the sender's phone number, like +14155551234, or "system"`)
}

// checkFrom reports a missing or malformed --from, and otherwise
// normalises it the way WhatsApp's senders and the family's numbers are,
// "+" and digits, so that "+1 (415) 555-1234" and 14155551234 reach the
// same conversation as the WhatsApp messages from that number.
func (c *assistantConfig) checkFrom() error {
	if c.from == conversation.SystemSender {
		return nil
	}
	norm, err := phone.Normalize(c.from)
	if err != nil {
		return cli.Usagef("--from: give the sender's phone number, like +14155551234 (%v)", err)
	}
	c.from = norm
	return nil
}

// listsFile returns where the shared lists are kept: the flag, or next to
// the conversations.
func (c *assistantConfig) listsFile() string {
	if c.listsPath != "" {
		return c.listsPath
	}
	return filepath.Join(storeurl.Dir(c.mem.store), "lists.json")
}

// open builds the assistant. The caller closes the returned store.
func (c *assistantConfig) open(ctx context.Context, e *env) (*assistant.Assistant, *conversation.Memory, conversation.Store, error) {
	key := strings.TrimSpace(e.getenv("ANTHROPIC_API_KEY"))
	if key == "" {
		return nil, nil, nil, errors.New("ANTHROPIC_API_KEY is not set")
	}
	fc := c.file
	if fc == nil {
		var err error
		if fc, err = config.Load(c.configPath); err != nil {
			return nil, nil, nil, err
		}
	}
	opts, err := fc.AssistantOptions(e.getenv, c.mem.maxTurns, e.insecureEndpoints)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.mem.usageRetention, err = fc.UsageRetention(); err != nil {
		return nil, nil, nil, err
	}
	opts.Logger = e.log
	for number, p := range c.extraFamily {
		opts.Family[number] = p
	}
	shared, err := lists.Open(c.listsFile(), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	c.lists = shared
	if opts.Tools, err = assistant.NewRegistry(lists.Tools(shared)...); err != nil {
		return nil, nil, nil, err
	}

	mem, store, err := c.mem.open(ctx, e)
	if err != nil {
		return nil, nil, nil, err
	}
	client := assistant.NewClient(assistant.ClientOptions{APIKey: key, BaseURL: strings.TrimSpace(e.getenv("ANTHROPIC_BASE_URL")), WrapTransport: c.apiTransport})
	a, err := assistant.New(client, mem, &opts)
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	return a, mem, store, nil
}

const askUsage = `Usage: mombot ask --from PHONE [--image FILE | --document FILE | --voice FILE] [flags] MESSAGE

Flags may come before or after the message; after "--" everything is the
message.

Sends MESSAGE to the assistant as the family member with that phone, with
their conversation memory, prints the reply and exits. ANTHROPIC_API_KEY is
required; ANTHROPIC_BASE_URL, when set, names another Messages endpoint.`

func runAsk(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot ask", askUsage)
	var cfg assistantConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	cfg.registerFrom(fs)
	imagePath := fs.String("image", "", "a picture to send with the message (JPEG, PNG, GIF or WebP)")
	docPath := fs.String("document", "", "a file to send with the message (PDF, or plain text: .txt, .csv, .md)")
	voicePath := fs.String("voice", "", "a voice note (OGG/Opus) to transcribe and send (needs \"transcription\" in the configuration)")
	// Flags may come anywhere: ask "hi" --from X as well as ask --from X "hi".
	words, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if err := cfg.checkFrom(); err != nil {
		return err
	}
	in := assistant.Inbound{From: cfg.from, Text: strings.Join(words, " ")}
	if strings.TrimSpace(in.Text) == "" && *imagePath == "" && *docPath == "" && *voicePath == "" {
		return cli.Usagef("ask: give the message to send, like mombot ask --from +14155551234 \"what's on the grocery list?\" (or --image, --document or --voice FILE)")
	}
	if err := in.ReadFiles(assistant.Files{Image: *imagePath, Document: *docPath, Voice: *voicePath}); err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	a, _, store, err := cfg.open(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	reply, err := a.Handle(ctx, in)
	fmt.Fprintln(e.stdout, reply.Text)
	return askError(ctx, err)
}

// Errors of ask once the message was handled. Handle has logged the detail
// (an API error with its status and request id, a store error) and the
// reply printed says what happened kindly, so main, which prints the error,
// only adds one short line and exits 1.
var (
	errAskRefused     = errors.New("ask: message refused")
	errAskFailed      = errors.New("ask: failed; the log above has the detail")
	errAskInterrupted = errors.New("ask: interrupted")
	errAskTimedOut    = errors.New("ask: gave up waiting for Claude; the log above has the detail")
)

// askError returns the short error standing for Handle's err.
func askError(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return errAskInterrupted
	case apology.Unusable(err):
		return errAskRefused
	case errors.Is(err, apology.ErrTimeout):
		return errAskTimedOut
	}
	return errAskFailed
}
