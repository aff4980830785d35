package conversation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	phonepkg "github.com/mombot/mombot/phone"
)

// Defaults of the original design (data model 001, "Constants").
const (
	DefaultTimeout  = 1800 * time.Second
	DefaultMaxTurns = 10
)

// ParseTimeout reads a conversation timeout as a person configures it: a
// number of seconds, as the original design's constant is given ("1800"),
// or a duration ("30m"). It must be positive.
func ParseTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("want seconds (1800) or a duration (30m), got %q", v)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %q", v)
	}
	return d, nil
}

// ParseMaxTurns reads a number of turns to keep, a whole number of at
// least 1.
func ParseMaxTurns(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a whole number of turns of at least 1, got %q", v)
	}
	return n, nil
}

// SystemSender is the sender of automated messages. Its messages are never
// stored and it never gets a history (FR-007 of the original design).
const SystemSender = "system"

// ErrInvalidPhone is returned when a phone is empty, too long or holds
// control characters.
var ErrInvalidPhone = errors.New("invalid phone")

// Options configure a [Memory]. The zero value means the defaults.
type Options struct {
	// Timeout is the inactivity after which a conversation expires;
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxTurns is the number of most recent turns kept; 0 means
	// DefaultMaxTurns.
	MaxTurns int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Location is the time zone last_active is written in, naive, as the
	// original Python module writes it; nil means time.Local, which is
	// what that module reads.
	Location *time.Location
	// UsageRetention is how long the usage ledger keeps each person's
	// days; older days are folded into anonymous totals by [Memory.Sweep].
	// 0 means DefaultUsageRetention.
	UsageRetention time.Duration
	// Summarize reports whether a phone keeps a running summary of the
	// turns that leave its conversation (summary.go): the family's
	// members, when summaries are on. nil means nobody does, and turns
	// that leave a conversation are gone. The system sender never does.
	Summarize func(phone string) bool
	// SummaryKeep is how long a summary is kept after it was last
	// written; older ones are deleted by [Memory.Sweep]. 0 means
	// DefaultSummaryKeep.
	SummaryKeep time.Duration
	// Log receives a warning when a stored conversation had to be
	// repaired on load, and what a sweep folded; nil discards it.
	Log *slog.Logger
}

// Memory is the conversation memory of the original design's contract (002):
// History, SaveTurn and Clear, over a [Store]; it is where the policy lives.
// It is safe for concurrent use as far as its store is.
//
// Two saves for one person never lose a turn: each reads the conversation,
// applies the policy and writes it back on the condition that the stored
// version is the one it read, and reads again if it is not. Memory does
// not order the turns of one sender: two messages handled at once both read
// the same history. Callers that need turns in order (the assistant does)
// run one message per sender at a time.
type Memory struct {
	store     Store
	lim       Limits
	usageKeep time.Duration
	now       func() time.Time
	loc       *time.Location
	log       *slog.Logger
	read      readCache

	summarize   func(phone string) bool
	summaryKeep time.Duration
}

// New returns a Memory over store. It fails if opts holds a negative timeout
// or turn count.
func New(store Store, opts *Options) (*Memory, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("conversation: timeout must not be negative, got %v", o.Timeout)
	}
	if o.UsageRetention < 0 {
		return nil, fmt.Errorf("conversation: usage retention must not be negative, got %v", o.UsageRetention)
	}
	if o.UsageRetention == 0 {
		o.UsageRetention = DefaultUsageRetention
	}
	if o.MaxTurns < 0 {
		return nil, fmt.Errorf("conversation: max turns must not be negative, got %d", o.MaxTurns)
	}
	if o.SummaryKeep < 0 {
		return nil, fmt.Errorf("conversation: summary keep must not be negative, got %v", o.SummaryKeep)
	}
	if o.SummaryKeep == 0 {
		o.SummaryKeep = DefaultSummaryKeep
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTurns == 0 {
		o.MaxTurns = DefaultMaxTurns
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Memory{store: store, lim: Limits{Timeout: o.Timeout, MaxTurns: o.MaxTurns}, usageKeep: o.UsageRetention, now: o.Now, loc: o.Location, log: o.Log,
		summarize: o.Summarize, summaryKeep: o.SummaryKeep}, nil
}

// Limits returns the timeout and turn cap in force.
func (m *Memory) Limits() Limits { return m.lim }

// Store returns the store m uses.
func (m *Memory) Store() Store { return m.store }

// History returns phone's stored messages, every turn flattened, oldest
// first, ready to put in front of a new user message. It returns an empty
// slice when there is no conversation, when phone is the system sender, and
// when the conversation has expired; an expired conversation is deleted from
// the store before History returns.
func (m *Memory) History(ctx context.Context, phone string) ([]Message, error) {
	c, err := m.Current(ctx, phone)
	if err != nil {
		return nil, err
	}
	return c.Messages(), nil
}

// Current returns phone's conversation as [Memory.History] sees it, by the
// same rules, with its turns and their extra keys: no turns when there is
// no conversation, when phone is the system sender and when it has expired
// (an expired conversation is deleted from the store first), and at most
// the turn cap's most recent turns. LastActive is zero when there are no
// turns. It is for callers that keep their own state on the turns, such as
// the assistant's request window.
func (m *Memory) Current(ctx context.Context, phone string) (Conversation, error) {
	if err := CheckPhone(phone); err != nil {
		return Conversation{}, err
	}
	c, err := m.current(ctx, phone, true)
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation: current: %w", err)
	}
	return c, nil
}

// Peek returns what [Memory.History] would return for phone now, by the
// same rules and the same clock, but leaves an expired conversation in the
// store. It is for looking without changing anything, such as the history
// command's output.
func (m *Memory) Peek(ctx context.Context, phone string) ([]Message, error) {
	if err := CheckPhone(phone); err != nil {
		return nil, err
	}
	c, err := m.current(ctx, phone, false)
	if err != nil {
		return nil, fmt.Errorf("conversation: peek: %w", err)
	}
	return c.Messages(), nil
}

// Load returns phone's stored conversation as it is, expired or not, or an
// error wrapping ErrNotFound. Turns the API would refuse are left out.
func (m *Memory) Load(ctx context.Context, phone string) (Conversation, error) {
	if err := CheckPhone(phone); err != nil {
		return Conversation{}, err
	}
	c, err := m.load(ctx, phone)
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation: load: %w", err)
	}
	return c, nil
}

// Expired reports whether a conversation last active at lastActive has
// expired by the memory's clock and timeout.
func (m *Memory) Expired(lastActive time.Time) bool {
	return expired(lastActive, m.now(), m.lim.Timeout)
}

func (m *Memory) load(ctx context.Context, phone string) (Conversation, error) {
	rec, err := m.store.Get(ctx, Conversations, phone)
	if err != nil {
		return Conversation{}, err
	}
	if c, ok := m.read.get(phone, rec.Version); ok {
		return c, nil
	}
	c, dropped, err := decodeConversation(phone, rec, m.loc)
	if err != nil {
		return Conversation{}, err
	}
	if dropped > 0 {
		m.log.Warn("conversation: left out stored turns the API would refuse", "phone", phonepkg.Mask(phone), "dropped", dropped)
	}
	m.read.put(c)
	return c, nil
}

func (m *Memory) current(ctx context.Context, phone string, expire bool) (Conversation, error) {
	none := Conversation{Phone: phone, Turns: []Turn{}}
	if phone == SystemSender {
		return none, nil
	}
	c, err := m.load(ctx, phone)
	if errors.Is(err, ErrNotFound) {
		return none, nil
	}
	if err != nil {
		return Conversation{}, err
	}
	if m.Expired(c.LastActive) {
		if expire {
			if err := m.expire(ctx, c); err != nil {
				return Conversation{}, fmt.Errorf("expire: %w", err)
			}
		}
		return none, nil
	}
	// More turns than the cap, if the cap was lowered since they were
	// saved: the oldest whole turns are not sent.
	if len(c.Turns) > m.lim.MaxTurns {
		c.Turns = c.Turns[len(c.Turns)-m.lim.MaxTurns:]
	}
	return c, nil
}

// SaveTurn saves the messages of one turn for phone: from the person's
// message to the final reply, tool rounds included. See [Memory.Save].
func (m *Memory) SaveTurn(ctx context.Context, phone string, messages []Message) error {
	return m.Save(ctx, phone, Turn{Messages: messages})
}

// maxAttempts bounds the reads and conditional writes of one change when
// other writers keep coming first.
const maxAttempts = 50

// maxBackoff is the longest wait between two attempts of one change.
const maxBackoff = 200 * time.Millisecond

// Save appends turn to phone's conversation and sets its last activity to
// now. If the conversation had expired it starts anew; beyond the turn cap
// the oldest whole turns are dropped. Base64 images and documents are
// replaced by placeholders ([ImagePlaceholder], [DocumentPlaceholder]). The
// turn is durable when Save returns nil.
//
// Extra keys, of the turn and of its messages, are stored compacted.
//
// A turn for the system sender is not stored, and Save returns nil. A turn
// that would break the history (see [ValidateTurn]), or whose extra keys are
// not valid JSON, is rejected with an error wrapping [ErrInvalidTurn] and
// nothing is stored; so is a turn that reuses a tool_use id of a turn that
// stays in the history next to it (the API wants ids unique across a
// request).
func (m *Memory) Save(ctx context.Context, phone string, turn Turn) error {
	return m.save(ctx, phone, turn, nil)
}

// save is Save, and SaveShown with shown set.
func (m *Memory) save(ctx context.Context, phone string, turn Turn, shown *Shown) error {
	if err := CheckPhone(phone); err != nil {
		return err
	}
	if phone == SystemSender {
		return nil
	}
	clean, err := prepareTurn(turn)
	if err != nil {
		return fmt.Errorf("conversation: save turn: %w", err)
	}
	ids := clean.checked.toolUseIDs
	err = m.update(ctx, phone, func(c *Conversation, now time.Time) error {
		// The turns this save drops are kept for the summary first.
		if err := m.pend(ctx, phone, droppedTurns(*c, now, m.lim)); err != nil {
			return err
		}
		kept := keptTurns(c.Turns, c.LastActive, now, m.lim)
		if len(ids) > 0 { // most turns call no tool: no blocks to read
			for _, t := range kept {
				if err := checkToolIDs(ids, t.toolUseIDs()); err != nil {
					return err
				}
			}
		}
		// A session that starts anew shows no memory of the one before.
		if err := m.sessionMemory(ctx, c, len(kept) == 0, shown); err != nil {
			return err
		}
		c.Turns = append(kept, clean)
		c.LastActive = now
		return nil
	})
	if err != nil {
		return fmt.Errorf("conversation: save turn: %w", err)
	}
	return nil
}

// keep is how long a store may keep a conversation without a write: a
// minute past its expiry, so that a store that drops records on its own
// (Redis) never drops one the policy still counts as live.
func (m *Memory) keep() time.Duration { return m.lim.Timeout + time.Minute }

// keptTurns returns the turns of a conversation that stay next to a turn
// saved at now: none if it has expired, else the most recent lim.MaxTurns-1.
func keptTurns(turns []Turn, lastActive, now time.Time, lim Limits) []Turn {
	if len(turns) == 0 || expired(lastActive, now, lim.Timeout) {
		return nil
	}
	if len(turns) >= lim.MaxTurns {
		turns = turns[len(turns)-lim.MaxTurns+1:]
	}
	return slices.Clip(turns)
}

// checkToolIDs returns an error wrapping ErrInvalidTurn if one of ids is in
// inUse.
func checkToolIDs(ids, inUse []string) error {
	for _, id := range ids {
		if slices.Contains(inUse, id) {
			return fmt.Errorf("%w: tool_use id %s of this turn is already in the conversation's history; ids must be unique", ErrInvalidTurn, id)
		}
	}
	return nil
}

// backoff waits a random while below a ceiling that doubles after each
// failed attempt, from 1 ms up to maxBackoff, so that writers that keep
// colliding spread out even when a write takes longer than a few
// milliseconds (a SQLite commit's fsync on a busy disk).
func backoff(ctx context.Context, attempt int) error {
	ceiling := min(time.Millisecond<<min(attempt, 16), maxBackoff)
	d := time.Duration(rand.Int64N(int64(ceiling)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// updateRecord reads the record of kind under key, lets change turn its
// data (nil when none is stored) into the data to store, and writes that on
// the condition that nobody wrote the record meanwhile, reading again when
// somebody did. Data nil deletes the record; errUnchanged from change
// writes nothing and updateRecord returns nil; another error of change is
// returned as it is. keep is passed to [Store.Put].
func (m *Memory) updateRecord(ctx context.Context, kind Kind, key string, keep time.Duration, change func(data []byte) ([]byte, error)) error {
	for attempt := range maxAttempts {
		rec, err := m.store.Get(ctx, kind, key)
		if errors.Is(err, ErrNotFound) {
			rec, err = Record{}, nil
		}
		if err != nil {
			return err
		}
		data, err := change(rec.Data)
		switch {
		case errors.Is(err, errUnchanged), err == nil && data == nil && rec.Version == 0:
			return nil
		case err != nil:
			return err
		case data == nil:
			if err = m.store.Delete(ctx, kind, key, rec.Version); errors.Is(err, ErrNotFound) {
				return nil
			}
		default:
			_, err = m.store.Put(ctx, kind, Record{Key: key, Data: data, Version: rec.Version}, keep)
		}
		if !errors.Is(err, ErrConflict) {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
	return fmt.Errorf("%d writers came first: %w", maxAttempts, ErrConflict)
}

// update reads phone's conversation (an empty one when none is stored),
// lets change edit it, and writes it back on the condition that nobody
// wrote it meanwhile, reading again when somebody did. The first attempt
// starts from the conversation as this Memory last read or wrote it, when
// it has it, without reading: the conditional write fails if another
// writer came since, and the next attempt reads. A save after the read of
// the same message's history so costs one write, not a read and a write.
func (m *Memory) update(ctx context.Context, phone string, change func(c *Conversation, now time.Time) error) error {
	c, cached := m.read.latest(phone)
	for attempt := range maxAttempts {
		if !cached {
			var err error
			c, err = m.load(ctx, phone)
			if errors.Is(err, ErrNotFound) {
				c, err = Conversation{Phone: phone}, nil
			}
			if err != nil {
				return err
			}
		}
		if err := change(&c, m.now()); err != nil {
			if cached {
				// Decided on this Memory's copy, which may be old (a
				// turn another writer cleared away): read, decide again.
				cached = false
				continue
			}
			return err
		}
		data, err := encodeConversation(c, m.loc)
		if err != nil {
			return err
		}
		c.Version, err = m.store.Put(ctx, Conversations, Record{Key: phone, Data: data, Version: c.Version}, m.keep())
		if err == nil {
			m.read.keep(c)
		}
		if !errors.Is(err, ErrConflict) {
			return err
		}
		if cached {
			cached = false // not contention: this Memory's copy was old
			continue
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
	return fmt.Errorf("%d writers came first: %w", maxAttempts, ErrConflict)
}

// Replace writes c as the whole of c.Phone's conversation, its last activity
// and every turn, if the store still holds the version c.Version of it (0:
// none), in one atomic step, as copying a conversation between stores needs.
// It applies no turn cap; a turn the API would refuse is an error wrapping
// [ErrInvalidTurn]. Otherwise it returns an error wrapping [ErrConflict] and
// changes nothing.
func (m *Memory) Replace(ctx context.Context, c Conversation) error {
	if err := CheckPhone(c.Phone); err != nil {
		return err
	}
	if c.Phone == SystemSender {
		return nil
	}
	if _, dropped := repair(c.Turns); dropped > 0 {
		return fmt.Errorf("conversation: replace: %w: %d turns the API would refuse", ErrInvalidTurn, dropped)
	}
	// The turns come from outside and may have been changed since this
	// package checked them: encode them as turns it knows nothing of.
	c.Turns = slices.Clone(c.Turns)
	for i := range c.Turns {
		c.Turns[i].checked = nil
	}
	data, err := encodeConversation(c, m.loc)
	if err == nil {
		_, err = m.store.Put(ctx, Conversations, Record{Key: c.Phone, Data: data, Version: c.Version}, m.keep())
	}
	if err != nil {
		return fmt.Errorf("conversation: replace: %w", err)
	}
	return nil
}

// Clear deletes phone's conversation and the recent messages remembered for
// phone ([Memory.Remember]). It returns an error wrapping [ErrNotFound] if
// there was no conversation (the recent messages are forgotten all the
// same), which callers that only want it gone may ignore. Phone's usage
// stays in the ledger.
func (m *Memory) Clear(ctx context.Context, phone string) error {
	if err := CheckPhone(phone); err != nil {
		return err
	}
	// The recent messages go first and whether or not a conversation is
	// stored: they outlive it, and clearing is the person's way to have
	// everything forgotten.
	if err := m.forget(ctx, phone); err != nil {
		return err
	}
	m.read.drop(phone)
	if err := m.store.Delete(ctx, Conversations, phone, 0); err != nil {
		return fmt.Errorf("conversation: clear: %w", err)
	}
	return nil
}

// List returns a summary of every stored conversation, ordered by phone, with
// Expired set by the policy, without deleting anything.
func (m *Memory) List(ctx context.Context) ([]Summary, error) {
	recs, err := m.store.List(ctx, Conversations, "")
	if err != nil {
		return nil, fmt.Errorf("conversation: list: %w", err)
	}
	now := m.now()
	sums := make([]Summary, 0, len(recs))
	for _, rec := range recs {
		if rec.Key == SystemSender {
			continue
		}
		c, _, err := decodeConversation(rec.Key, rec, m.loc)
		if err != nil {
			// Not a conversation (another program's member of the
			// file): not listed, and left as it is.
			m.log.Warn("conversation: list: a stored value is not a conversation", "phone", phonepkg.Mask(rec.Key), "err", err)
			continue
		}
		sums = append(sums, Summary{Phone: c.Phone, LastActive: c.LastActive, Turns: len(c.Turns),
			Expired: expired(c.LastActive, now, m.lim.Timeout)})
	}
	return sums, nil
}

// MaxPhoneLen is the longest phone key accepted, in bytes.
const MaxPhoneLen = 64

// CheckPhone returns an error wrapping [ErrInvalidPhone] unless phone can be
// a conversation key: 1 to MaxPhoneLen bytes of UTF-8 without control
// characters or surrounding white space.
func CheckPhone(phone string) error {
	switch {
	case phone == "":
		return fmt.Errorf("conversation: %w: empty", ErrInvalidPhone)
	case len(phone) > MaxPhoneLen:
		return fmt.Errorf("conversation: %w: longer than %d bytes", ErrInvalidPhone, MaxPhoneLen)
	case !utf8.ValidString(phone):
		return fmt.Errorf("conversation: %w: not UTF-8", ErrInvalidPhone)
	case strings.TrimSpace(phone) != phone:
		return fmt.Errorf("conversation: %w: surrounding white space", ErrInvalidPhone)
	case strings.ContainsFunc(phone, unicode.IsControl):
		return fmt.Errorf("conversation: %w: control character", ErrInvalidPhone)
	}
	return nil
}

// Key returns the key under which the conversation of number is stored:
// number in E.164 form (phone.Normalize), the way the assistant stores
// it, so that "14155551234" and "+1 (415) 555-1234" find "+14155551234";
// or number as written when only that is stored (a key another program
// wrote, the system sender). It returns an error wrapping ErrInvalidPhone
// when number cannot be a key.
func (m *Memory) Key(ctx context.Context, number string) (string, error) {
	if err := CheckPhone(number); err != nil {
		return "", err
	}
	norm, err := phonepkg.Normalize(number)
	if err != nil || norm == number {
		return number, nil
	}
	if _, err := m.store.Get(ctx, Conversations, norm); !errors.Is(err, ErrNotFound) {
		return norm, nil
	}
	if _, err := m.store.Get(ctx, Conversations, number); err == nil {
		return number, nil
	}
	return norm, nil
}

// SweepEvery calls Sweep now and every interval until ctx is done, so that
// people who never come back do not stay on disk, and, with sum not nil,
// FoldAll after each sweep, so that the turns of conversations that
// expired are in their person's summary before the next session; it logs
// what it deletes and folds and its failures on log.
func (m *Memory) SweepEvery(ctx context.Context, every time.Duration, log *slog.Logger, sum Summarizer) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if n, err := m.Sweep(ctx); err != nil && ctx.Err() == nil {
			log.Warn("conversation: sweeping expired conversations failed", "err", err)
		} else if n > 0 {
			log.Info("conversation: swept expired conversations", "deleted", n)
		}
		if sum != nil {
			if n, err := m.FoldAll(ctx, sum); err != nil && ctx.Err() == nil {
				log.Warn("conversation: folding turns into summaries failed; they stay pending", "err", err, "folded", n)
			} else if n > 0 {
				log.Info("conversation: folded turns into summaries", "summaries", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Sweep deletes every conversation that has expired by now and the recent
// messages that are past [RecentWindow], and folds the usage ledger's days
// older than [Options.UsageRetention] into anonymous totals ([Anonymous]),
// so that people who never come back do not stay in the store for ever. The
// turns of an expired conversation of someone who keeps a summary are
// moved to its pending turns first ([Memory.FoldAll] folds them), and
// summaries not written for [Options.SummaryKeep] are deleted. It returns
// how many conversations it deleted. A conversation saved to since it was
// listed is left alone.
func (m *Memory) Sweep(ctx context.Context) (int, error) {
	recs, err := m.store.List(ctx, Conversations, "")
	if err != nil {
		return 0, fmt.Errorf("conversation: sweep: %w", err)
	}
	now, n := m.now(), 0
	for _, rec := range recs {
		c, _, err := decodeConversation(rec.Key, rec, m.loc)
		if err != nil || !expired(c.LastActive, now, m.lim.Timeout) {
			continue // what is not a conversation is not the sweep's to delete
		}
		if CheckPhone(rec.Key) == nil {
			if err := m.pend(ctx, rec.Key, c.Turns); err != nil {
				return n, fmt.Errorf("conversation: sweep: %w", err)
			}
		}
		err = m.store.Delete(ctx, Conversations, rec.Key, rec.Version)
		switch {
		case err == nil:
			n++
		case !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict):
			return n, fmt.Errorf("conversation: sweep: %w", err)
		}
	}
	if err := m.sweepRecent(ctx, now); err != nil {
		return n, fmt.Errorf("conversation: sweep: %w", err)
	}
	if dropped, err := m.sweepSummaries(ctx, now); err != nil {
		return n, fmt.Errorf("conversation: sweep: summaries: %w", err)
	} else if dropped > 0 {
		m.log.Info("conversation: deleted summaries past their keep", "summaries", dropped)
	}
	folded, err := m.sweepUsage(ctx, now)
	if folded > 0 {
		m.log.Info("conversation: folded old usage into anonymous daily totals", "records", folded)
	}
	if err != nil {
		return n, fmt.Errorf("conversation: sweep: usage: %w", err)
	}
	return n, nil
}
