package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

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
// memory, the configuration file and the lists file to import.
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
	fs.StringVar(&c.listsPath, "lists", e.getenv("MOMBOT_LISTS"), "a lists file of an earlier release to import into the store at start, then renamed *.imported (env MOMBOT_LISTS; default lists.json next to the conversations)")
	return nil
}

// registerFrom adds --from, the sender of ask and chat.
func (c *assistantConfig) registerFrom(fs *flag.FlagSet) {
	fs.StringVar(&c.from, "from", "", `the sender: a family member's name or phone number, like Erin or +14155551234, or "system" (default: the only family member, if there is one)`)
}

// loadFile loads the configuration file once, for the family that --from
// names and then for open.
func (c *assistantConfig) loadFile() (*config.File, error) {
	if c.file == nil {
		fc, err := config.Load(c.configPath)
		if err != nil {
			return nil, err
		}
		c.file = fc
	}
	return c.file, nil
}

// checkFrom resolves --from of the command cmd to the key of the sender's
// conversation. It is the name of someone in the family (in any case), or
// a phone number read as the configuration file reads the family's: with
// "+" and its country code, so that 4155551234 is refused rather than
// taken for a number in Switzerland (+41), and "+1 (415) 555-1234" reaches
// the same conversation as WhatsApp's messages from +14155551234. Without
// --from, a family of one is that one. Every mistake is a usage error that
// says what to give.
func (c *assistantConfig) checkFrom(cmd string) error {
	fc, err := c.loadFile()
	if err != nil {
		return err
	}
	from := strings.TrimSpace(c.from)
	if from == conversation.SystemSender {
		return nil
	}
	if from == "" {
		if len(fc.Family) == 1 {
			for number := range fc.Family {
				c.from = number
			}
			return nil
		}
		return cli.Usagef("%s: --from is needed: who is writing? Give a phone number, like --from +14155551234%s", cmd, familyHint(fc))
	}
	var named []string
	for number, p := range fc.Family {
		if strings.EqualFold(strings.TrimSpace(p.Name), from) {
			named = append(named, number)
		}
	}
	switch len(named) {
	case 1:
		c.from = named[0]
		return nil
	case 0:
	default:
		slices.Sort(named)
		return cli.Usagef("%s: --from %s: %d family members have that name; give the phone number (%s)", cmd, from, len(named), strings.Join(named, ", "))
	}
	norm, err := phone.International(from)
	switch {
	case err == nil:
		c.from = norm
		return nil
	case errors.Is(err, phone.ErrNoCountryCode):
		return cli.Usagef("%s: --from %s: no country code; write the number in international form, as mombot.json does, like +14155551234%s", cmd, from, sameDigits(fc, from))
	case strings.ContainsFunc(from, unicode.IsLetter):
		if names := familyNames(fc); names != "" {
			return cli.Usagef("%s: --from %q is neither a phone number nor a name in mombot.json (%s)", cmd, from, names)
		}
		return cli.Usagef("%s: --from %q is not a phone number, and mombot.json names nobody; give a number like +14155551234", cmd, from)
	}
	return cli.Usagef("%s: --from %q: %s; give a phone number like +14155551234%s", cmd, from, strings.TrimPrefix(err.Error(), "phone: "), familyHint(fc))
}

// familyHint offers the family's names, for an error about --from: ", or
// a name from mombot.json: Erin, Jason", or "" without a family.
func familyHint(fc *config.File) string {
	if names := familyNames(fc); names != "" {
		return ", or a name from mombot.json: " + names
	}
	return ""
}

// familyNames lists the family's names, sorted: "Erin, Jason".
func familyNames(fc *config.File) string {
	var names []string
	for _, p := range fc.Family {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// sameDigits suggests the family member whose number ends with the digits
// of from, a number written without its country code: "; did you mean
// +14155551234 (Erin)?", or "" when not exactly one does.
func sameDigits(fc *config.File, from string) string {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, from)
	var match string
	for number := range fc.Family {
		if strings.HasSuffix(number, digits) {
			if match != "" {
				return ""
			}
			match = number
		}
	}
	if match == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s (%s)?", match, fc.Family[match].Name)
}

// listsFile returns the lists file of an earlier release to import: the
// flag, or next to the conversations.
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
	baseURL, err := anthropicBaseURL(e.getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	fc, err := c.loadFile()
	if err != nil {
		return nil, nil, nil, err
	}
	opts, err := fc.AssistantOptions(e.getenv, c.mem.maxTurns, e.insecureEndpoints)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.mem.usageRetention, err = fc.UsageRetention(); err != nil {
		return nil, nil, nil, err
	}
	// Only the family's members keep a running summary: not the page's
	// guest, not strangers.
	if _, c.mem.summaryKeep, err = fc.Summaries(); err != nil {
		return nil, nil, nil, err
	}
	if opts.Summaries != nil {
		c.mem.summarize = fc.Member
	}
	opts.Logger = e.log
	for number, p := range c.extraFamily {
		opts.Family[number] = p
	}
	mem, store, err := c.mem.open(ctx, e)
	if err != nil {
		return nil, nil, nil, err
	}
	a, err := func() (*assistant.Assistant, error) {
		shared := lists.New(mem, nil)
		file := c.listsFile()
		n, err := shared.Import(ctx, file)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			e.log.Info("lists: imported a lists file into the store", "renamed_to", file+lists.ImportedSuffix, "items_added", n)
		}
		c.lists = shared
		if opts.Tools, err = assistant.NewRegistry(lists.Tools(shared)...); err != nil {
			return nil, err
		}
		client := assistant.NewClient(assistant.ClientOptions{APIKey: key, BaseURL: baseURL, WrapTransport: c.apiTransport})
		return assistant.New(client, mem, &opts)
	}()
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	return a, mem, store, nil
}

// anthropicBaseURL returns ANTHROPIC_BASE_URL, or "" for the API's own.
// A value that is not an http(s) URL with a host is a usage error at
// start: the client would otherwise fail on every message, and the person
// would hear only that the assistant cannot be reached. The error shows
// the value without anything before an "@", where a password may be.
func anthropicBaseURL(getenv func(string) string) (string, error) {
	v := strings.TrimSpace(getenv("ANTHROPIC_BASE_URL"))
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return v, nil
	}
	shown := v
	if i := strings.LastIndex(v, "@"); i >= 0 {
		shown = "..." + v[i:]
	}
	if !strings.Contains(v, "://") {
		return "", cli.Usagef("ANTHROPIC_BASE_URL=%s has no scheme; write the whole URL, like https://%s (or http:// for a local endpoint)", shown, shown)
	}
	return "", cli.Usagef("ANTHROPIC_BASE_URL=%s is not an http or https URL with a host, like https://api.anthropic.com", shown)
}

const askUsage = `Usage: mombot ask --from NAME|PHONE [--image FILE | --document FILE | --voice FILE] [flags] MESSAGE

Flags may come before or after the message; after "--" everything is the
message.

Sends MESSAGE to the assistant as that family member (by their name in
mombot.json, or their phone number with its country code), with their
conversation memory, prints the reply and exits. ANTHROPIC_API_KEY is
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
	if err := cfg.checkFrom("ask"); err != nil {
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
