package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/phone"
)

// Defaults of [Options].
const (
	DefaultModel             = anthropic.ModelClaudeSonnet5_5
	DefaultMaxTokens         = 4096
	DefaultMaxToolIterations = 25
)

// Person is a member of the family, as the assistant addresses them.
type Person struct {
	// Name is how the person is called in the conversation ("Erin").
	Name string
	// Location is the person's time zone, used for the date and time put
	// in front of their messages; nil means the Options' Location.
	Location *time.Location
}

// Ledger records what each person's messages cost; *conversation.Memory is
// one.
type Ledger interface {
	AddUsage(ctx context.Context, phone string, at time.Time, u conversation.Usage) error
}

// Options configure an [Assistant]. The zero value means the defaults.
type Options struct {
	// Model is the Claude model; "" means DefaultModel.
	Model string
	// MaxTokens bounds each response; 0 means DefaultMaxTokens.
	MaxTokens int
	// SystemPrompt is the system prompt; "" means DefaultSystemPrompt.
	// Commands read it from a file; it must not change while the
	// assistant runs, so that the prompt cache can serve it.
	SystemPrompt string
	// MaxToolIterations is the most tool rounds one message may run; 0
	// means DefaultMaxToolIterations.
	MaxToolIterations int
	// Family maps a phone number, as the messages come in
	// ("+14155551234"), to the person it belongs to. Senders not in it
	// are called by their masked number, and the system sender by
	// SystemName.
	Family map[string]Person
	// Location is the time zone of senders whose Person has none; nil
	// means UTC.
	Location *time.Location
	// Tools are the tools offered to the model; nil means none.
	Tools *Registry
	// Locker serialises each sender's messages in Handle; nil means a
	// new [delivery.Local]. A caller that holds the sender's lock already
	// (the delivery pipeline) calls HandleLocked, which takes none.
	Locker delivery.Locker
	// Logger receives one record per message handled and the detail of
	// every failure; nil means no logging. Phones are masked and keys are
	// never logged.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Ledger records each message's usage, per person and day; nil means
	// the memory's own ledger ([conversation.Memory.AddUsage]). Recording
	// never changes what is sent to the API, and a failure to record is
	// logged, not returned.
	Ledger Ledger

	// FallbackModel is tried once for a message when Model is overloaded
	// (529), keeps failing with 5xx, does not answer in time, or refuses;
	// the rest of that message runs on it. "" (or Model itself) means no
	// fallback.
	FallbackModel string
	// RequestTimeout bounds each attempt of an API call; 0 means
	// DefaultRequestTimeout. See [DefaultRequestTimeout] for the whole
	// bound on a message's wait.
	RequestTimeout time.Duration
	// MessageTimeout bounds the handling of one message once its sender's
	// turn has come, every API call and tool round included; 0 means
	// DefaultMessageTimeout.
	MessageTimeout time.Duration
	// Window bounds the history sent with each message; the zero value
	// means the defaults. See [WindowOptions].
	Window WindowOptions
	// CacheTTL is the prompt cache lifetime policy: TTLAuto (or "") chooses
	// each person's history lifetime from the pauses between their
	// messages, TTL5m uses 5-minute entries everywhere, TTL1h 1-hour ones.
	// The tools and system prompt live an hour unless it is TTL5m.
	CacheTTL string

	// Transcriber turns voice notes into text; nil means voice notes are
	// not set up, and the person is told so.
	Transcriber Transcriber

	// Summaries, if set, turns the running summaries on (summarize.go):
	// the turns that left a person's conversation are folded into their
	// summary at the start of their next session, if the sweep has not
	// done it; nil means none.
	Summaries *SummarizerOptions

	// Notes, if set, keeps the family's long-term notes: the members of
	// Family are offered the remember and forget tools and shown the
	// notes they see (see [NotesOptions]); nil means no notes.
	Notes *NotesOptions
}

// Sentinel errors of [Assistant.Handle]. Each comes with a reply for the
// person that says what to do instead. They are package apology's, so that
// every caller derives the same sentence from them ([ErrorMessage]).
var (
	// ErrEmptyMessage: the message has neither text nor an image.
	ErrEmptyMessage = apology.ErrEmptyMessage
	// ErrImageType: the image is not JPEG, PNG, GIF or WebP.
	ErrImageType = apology.ErrImageType
	// ErrImageTooLarge: the image is over the API's 5 MB base64 limit.
	ErrImageTooLarge = apology.ErrImageTooLarge
)

// Replies sent to the person when something goes wrong: [ErrorMessage]'s
// sentences for the errors of Handle. They are short and kind and say
// nothing about the cause; the log has the detail.
const (
	ReplyAPIFailure   = apology.Unavailable
	ReplyAPIPartial   = apology.Partial
	ReplyInternal     = apology.Internal
	ReplyEmpty        = apology.EmptyMessage
	ReplyImageType    = apology.ImageType
	ReplyImageTooBig  = apology.ImageTooLarge
	ReplyNoAnswer     = "Sorry, I don't have an answer for that."
	replyCapFormat    = "I had to stop: that needed more than %d steps. What's done is done; tell me what's left and I'll carry on."
	replyDoneNoAnswer = "Done."
)

// Assistant answers the family's messages with Claude, remembering each
// person's recent conversation. It is safe for concurrent use; messages of
// one sender are handled one at a time, in the order they arrive.
type Assistant struct {
	client  anthropic.Client
	mem     *conversation.Memory
	model   string
	maxTok  int
	maxIter int
	family  map[string]Person
	loc     *time.Location
	tools   *Registry
	ledger  Ledger
	locker  delivery.Locker
	log     *slog.Logger
	now     func() time.Time
	prefix  []byte // the request body up to the first message

	reqTimeout time.Duration
	msgTimeout time.Duration
	// fallback is this assistant with the fallback model and its own
	// prefix (the model is in it), or nil.
	fallback *Assistant

	window       WindowOptions // resolved
	ttl          string        // the lifetime policy
	minCache     int           // the model's minimum cacheable tokens
	staticTokens int           // tools and system prompt, estimated
	staticTTL    string        // the static prefix's breakpoint, if any

	transcriber Transcriber // nil: voice notes are not set up

	summarizer *Summarizer // nil: no running summaries

	// The notes (notes.go): fam is the notes' family; members, when
	// notes are on, is this assistant with the note tools, which answers
	// the family's members; notes is set on that one.
	fam     conversation.Family
	members *Assistant
	notes   bool
}

// New returns an assistant that calls the Messages API with client and
// keeps conversations in mem. The client carries the key, the base URL and
// the retry policy (see the SDK's option package).
func New(client anthropic.Client, mem *conversation.Memory, opts *Options) (*Assistant, error) {
	if mem == nil {
		return nil, errors.New("assistant: new: nil memory")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxTokens < 0:
		return nil, fmt.Errorf("assistant: new: max tokens must not be negative, got %d", o.MaxTokens)
	case o.MaxToolIterations < 0:
		return nil, fmt.Errorf("assistant: new: max tool iterations must not be negative, got %d", o.MaxToolIterations)
	case o.RequestTimeout < 0:
		return nil, fmt.Errorf("assistant: new: request timeout must not be negative, got %s", o.RequestTimeout)
	case o.MessageTimeout < 0:
		return nil, fmt.Errorf("assistant: new: message timeout must not be negative, got %s", o.MessageTimeout)
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MessageTimeout == 0 {
		o.MessageTimeout = DefaultMessageTimeout
	}
	if err := checkTTL(o.CacheTTL); err != nil {
		return nil, fmt.Errorf("assistant: new: %w", err)
	}
	win, err := o.Window.resolve(mem.Limits().MaxTurns)
	if err != nil {
		return nil, fmt.Errorf("assistant: new: %w", err)
	}
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.MaxToolIterations == 0 {
		o.MaxToolIterations = DefaultMaxToolIterations
	}
	if strings.TrimSpace(o.SystemPrompt) == "" {
		o.SystemPrompt = DefaultSystemPrompt
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Locker == nil {
		o.Locker = &delivery.Local{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Ledger == nil {
		o.Ledger = mem
	}
	family := make(map[string]Person, len(o.Family))
	for phone, p := range o.Family {
		if err := conversation.CheckPhone(phone); err != nil {
			return nil, fmt.Errorf("assistant: new: family: %w", err)
		}
		family[phone] = p
	}
	a := &Assistant{
		client: client, mem: mem, model: o.Model, maxTok: o.MaxTokens,
		maxIter: o.MaxToolIterations, family: family, loc: o.Location,
		tools: o.Tools, locker: o.Locker, log: o.Logger, now: o.Now, ledger: o.Ledger,
		reqTimeout: o.RequestTimeout, msgTimeout: o.MessageTimeout,
		transcriber: o.Transcriber,
	}
	a.window, a.ttl, a.minCache = win, o.CacheTTL, MinCacheableTokens(o.Model)
	// The static prefix's size, estimated at 4 bytes to a token, decides
	// whether it gets a breakpoint of its own.
	a.staticTokens = len(renderPrefix(o.Model, o.MaxTokens, o.SystemPrompt, o.Tools.Tools(), "")) / bytesPerToken
	a.staticTTL = staticTTL(o.CacheTTL, a.staticTokens, a.minCache)
	a.prefix = renderPrefix(o.Model, o.MaxTokens, o.SystemPrompt, o.Tools.Tools(), a.staticTTL)
	if fb := strings.TrimSpace(o.FallbackModel); fb != "" && fb != o.Model {
		// The same assistant but for the model, which is baked into the
		// prefix: the fallback's requests get a prefix of their own, with
		// the breakpoints its minimum cacheable length allows.
		f := *a
		f.model = fb
		f.minCache = MinCacheableTokens(fb)
		f.staticTTL = staticTTL(o.CacheTTL, f.staticTokens, f.minCache)
		f.prefix = renderPrefix(fb, o.MaxTokens, o.SystemPrompt, o.Tools.Tools(), f.staticTTL)
		a.fallback = &f
	}
	if o.Notes != nil {
		if a.fam, err = notesFamily(o.Notes, family); err != nil {
			return nil, fmt.Errorf("assistant: new: %w", err)
		}
	}
	// The summarizer first: the members' copy below shares it.
	if o.Summaries != nil {
		if a.summarizer, err = newSummarizer(client, mem, o, a.fam); err != nil {
			return nil, fmt.Errorf("assistant: new: %w", err)
		}
	}
	if o.Notes != nil {
		if a.members, err = a.withNotes(o); err != nil {
			return nil, fmt.Errorf("assistant: new: %w", err)
		}
	}
	return a, nil
}

// Inbound is one message from a person.
type Inbound struct {
	// From is the sender's phone, the conversation's key, or
	// conversation.SystemSender for automated messages, which get no
	// history and are not stored.
	From string
	// Text is what the person wrote; it may be empty with an image.
	Text string
	// Image is a picture sent with the message, if any.
	Image []byte
	// ImageType is the picture's media type ("image/jpeg"); empty means
	// detect it from the bytes.
	ImageType string
	// Time is when the message was sent, written in front of it in the
	// sender's time zone; the zero value means the time Handle is called.
	Time time.Time

	// ID is the message's id (WhatsApp's "wamid."), if it has one: the
	// message is remembered by it for a week
	// ([conversation.Memory.Remember]), so that a later reply quoting it
	// brings its text.
	ID string
	// ReplyTo is the id of the earlier message this one replies to
	// (WhatsApp's swipe-to-reply), if any: the model gets the quoted text
	// with the message, "[Replying to your message: "..."]", while it is
	// remembered.
	ReplyTo string
	// Forwarded is set for a message the person forwarded rather than
	// wrote, ForwardedMany for one WhatsApp marks as forwarded many
	// times: the model reads it marked "[Forwarded message]", as
	// something to know about, not the person's own request.
	Forwarded     bool
	ForwardedMany bool
	// Voice is a voice note (OGG/Opus, as WhatsApp records it): it is
	// transcribed with Options.Transcriber and the transcript, marked as
	// such, is the person's message. Text, if any, follows it.
	Voice []byte
	// Document is a file the person sent, with Text its caption: a PDF or
	// a plain-text file (see [TextDocumentTypes]); other types are
	// refused with a reply that says which work.
	Document *Document
	// Location is a location the person shared; it reaches the model as
	// text.
	Location *Location
	// Contacts are contact cards the person shared; they reach the model
	// as text.
	Contacts []Contact
	// Video is set for a video, with Text its caption: the model reads the
	// caption and knows it cannot watch the video. A video without a
	// caption is answered without the model.
	Video bool
}

// Reply is the outcome of handling one message.
type Reply struct {
	// Text is what to send back to the person. It is never empty, and on
	// failure it is a short, kind sentence.
	Text string
	// Usage is the token usage of every API call the message made.
	Usage Usage
	// ToolRounds is the number of tool rounds run.
	ToolRounds int
	// Model is the model that gave the last answer: Options.Model, or
	// Options.FallbackModel when the message fell back to it; empty when
	// no API call answered.
	Model string
	// Stored reports whether the turn was saved to the sender's
	// conversation, so that the next message remembers it.
	Stored bool
}

// messageIDKey is the turn's extra key holding the id of the message it
// answers (Inbound.ID), when it has one.
const messageIDKey = "message_id"

// answeredIn returns the answer of the turn of c that answers message id,
// if c holds one.
func answeredIn(c conversation.Conversation, id string) (string, bool) {
	if id == "" {
		return "", false
	}
	for i := len(c.Turns) - 1; i >= 0; i-- {
		t := c.Turns[i]
		var got string
		if json.Unmarshal(t.Extra[messageIDKey], &got) != nil || got != id {
			continue
		}
		for j := len(t.Messages) - 1; j >= 0; j-- {
			if m := t.Messages[j]; m.Role == conversation.RoleAssistant {
				if text := strings.TrimSpace(m.Text()); text != "" {
					return text, true
				}
			}
		}
		return "", false
	}
	return "", false
}

// SystemName is what the system sender (conversation.SystemSender) is
// called in its messages: "[From system]".
const SystemName = "system"

// person returns who sent a message from phone, as the message names them:
// their configured name, SystemName for the system sender, or else their
// masked number.
func (a *Assistant) person(from string) Person {
	p := a.configured(from)
	switch {
	case from == conversation.SystemSender:
		p.Name = SystemName
	case p.Name == "":
		p.Name = phone.Mask(from)
	}
	return p
}

// configured returns the family member with phone as configured, with
// their time zone filled in; the Name is empty for anyone else.
func (a *Assistant) configured(phone string) Person {
	p := a.family[phone]
	if p.Location == nil {
		p.Location = a.loc
	}
	return p
}

// Handle handles one inbound message: it loads the sender's history, runs
// the tool-use loop, saves the turn and returns the reply.
//
// Reply.Text is always something to send. When err is nil it is the answer
// (or, when the tool loop hit its cap, a sentence saying so). When err is
// not nil it is a short, kind sentence, ErrorMessage(err), and err says
// what went wrong: it wraps ErrEmptyMessage, ErrImageType or
// ErrImageTooLarge for a message refused before any API call; for an API
// failure, the SDK's *anthropic.Error wrapped in the apology sentinel for
// its kind (apology.ErrOverloaded, ErrRateLimited, ErrUnavailable,
// ErrPromptTooLong); apology.ErrTimeout when the attempts or the message's
// deadline ran out; an *apology.RefusalError when the model declined;
// apology.ErrCutOff for an answer cut off with nothing to send;
// apology.ErrPartial with any of these after a tool round; the caller's
// context error; or a store error. Handle has already logged the detail,
// so callers send Reply.Text and need not log err again; they may use it
// to choose an exit status.
//
// The turn is saved on every path that made an API call and got at least
// one tool round or a final answer; a message refused before the API, an
// API failure before any tool ran, or a refusal by the model stores
// nothing. The usage of every call that returned a message is added to the
// usage ledger (see [Options].Ledger) on every path, failures and refusals
// included, except for the system sender.
//
// Handle takes the sender's lock from Options.Locker for the while, so that
// one sender's messages are handled one at a time; a caller that holds it
// already calls [Assistant.HandleLocked].
func (a *Assistant) Handle(ctx context.Context, in Inbound) (Reply, error) {
	return a.handle(ctx, nil, in)
}

// HandleLocked is [Assistant.Handle] for a caller that holds the sender's
// lock: held is that lock as [delivery.Locker.Lock] returned it, done once
// the lock is no longer held. When held ends (a lock shared by replicas
// lost to another holder, who answers the message), HandleLocked stops and
// saves nothing.
func (a *Assistant) HandleLocked(ctx, held context.Context, in Inbound) (Reply, error) {
	if held == nil {
		err := errors.New("assistant: handle: no lock held")
		return Reply{Text: ErrorMessage(err)}, err
	}
	return a.handle(ctx, held, in)
}

// handle handles in under held, the sender's lock, or with held nil under
// the lock it takes from the Locker.
func (a *Assistant) handle(ctx, held context.Context, in Inbound) (Reply, error) {
	start := a.now()
	log := a.log.With("phone", phone.Mask(in.From))
	if err := conversation.CheckPhone(in.From); err != nil {
		log.Warn("assistant: refused message", "err", err)
		err = fmt.Errorf("assistant: handle: %w", err)
		return Reply{Text: ErrorMessage(err)}, err
	}
	mediaType, err := checkMessage(in)
	var doc docKind
	if err == nil {
		doc, err = a.checkKinds(in)
	}
	if err != nil {
		log.Info("assistant: refused message", "reason", err)
		err = fmt.Errorf("assistant: handle: %w", err)
		return Reply{Text: ErrorMessage(err)}, err
	}

	// The lock is taken before anything slow, such as encoding a photo,
	// so that the sender's messages take it in the order they came.
	system := in.From == conversation.SystemSender
	if held == nil && !system {
		var unlock func()
		held, unlock, err = a.locker.Lock(ctx, in.From)
		if err != nil {
			log.Warn("assistant: waiting for the sender's previous message", "err", err)
			err = fmt.Errorf("assistant: handle: lock: %w", err)
			return Reply{Text: ErrorMessage(err)}, err
		}
		defer unlock()
	}
	if held != nil {
		// A lock shared by replicas may be lost (its holder cut off from
		// Redis); the next holder answers, so this one stops, saving
		// nothing.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(held, func() { cancel(context.Cause(held)) })()
		// AfterFunc calls its function in a goroutine of its own even for
		// a lock already lost, which a busy machine may run only after the
		// message is answered and saved: a lost lock is checked here too.
		if held.Err() != nil {
			cancel(context.Cause(held))
		}
	}
	// The deadline starts once the sender's turn has come, so that each
	// message gets the whole of it; the lock is held no longer than it
	// (and the save after it).
	ctx, cancel := context.WithTimeoutCause(ctx, a.msgTimeout, errMessageDeadline)
	defer cancel()
	sentAt := in.Time
	if sentAt.IsZero() {
		sentAt = start
	}
	words, err := a.prepareKinds(ctx, in, log)
	if err != nil {
		return Reply{Text: ErrorMessage(err)}, err
	}
	user, stored := userMessage(in, mediaType, doc, words, a.person(in.From), sentAt)

	win := &window{tokensPerByte: 0.25}
	var c conversation.Conversation
	loaded := false
	if !system {
		c, err = a.mem.Current(ctx, in.From)
		if text, ok := answeredIn(c, in.ID); err == nil && ok {
			// Its holder died between saving the turn and sending the
			// reply (or recording it sent): the person gets that answer,
			// and the conversation holds the turn once.
			log.Info("assistant: message answered and saved already; its answer is sent again without asking the model", "id", in.ID)
			return Reply{Text: text, Stored: true}, nil
		}
		if err == nil {
			win, loaded = planWindow(c, start, a.window), true
		} else {
			if ctx.Err() != nil {
				err = fmt.Errorf("assistant: handle: %w", err)
				return Reply{Text: ErrorMessage(err)}, err
			}
			// The store is down (Redis restarting, a full disk): an
			// answer without memory beats no answer. Saving this turn
			// is tried as usual and works again once the store is back.
			log.Error("assistant: conversation memory unavailable; answering without history", "err", err)
		}
	}

	t := &turn{a: a.memberOf(in.From), in: in, person: a.configured(in.From), win: win, history: win.history(), msgs: []conversation.Message{user}, storedUser: stored, log: log}
	t.startMemory(ctx, c, loaded)
	reply, err := t.run(ctx)
	t.recordUsage(ctx)
	if !t.forgotten {
		a.rememberInbound(ctx, in, words, sentAt, log)
	}
	log.Info("assistant: message handled",
		"history_messages", len(t.history),
		"window_turns", len(win.sent()),
		"window_jumped", win.jumped,
		"history_ttl", t.mark,
		"tool_rounds", t.rounds,
		"api_calls", t.usage.Calls,
		"input_tokens", t.usage.InputTokens,
		"output_tokens", t.usage.OutputTokens,
		"cache_creation_input_tokens", t.usage.CacheCreationInputTokens,
		"cache_creation_1h_input_tokens", t.usage.CacheCreation.Ephemeral1hInputTokens,
		"cache_read_input_tokens", t.usage.CacheReadInputTokens,
		"stored", t.stored,
		"outcome", t.outcome,
		"model", t.model,
		"fallback", t.onFallback,
		"duration", a.now().Sub(start),
	)
	reply.Usage, reply.ToolRounds, reply.Model, reply.Stored = t.usage, t.rounds, t.model, t.stored
	return reply, err
}
