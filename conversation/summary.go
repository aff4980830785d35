package conversation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Running summaries (docs/memory.md, "Summaries"). Turns that leave a
// person's stored conversation, dropped by the turn cap or expired with
// it, are not lost: in the same conditional write that removes them, or
// just before it, they are moved to the person's [Summaries] record as
// pending turns. A [Summarizer] (a cheaper model) later folds the pending
// turns into the record's running summary ([Memory.FoldSummary]): serve's
// sweep does it off the reply's path ([Memory.FoldAll]), and a message
// that finds turns not yet folded at a session's start does it first.
// Only the people [Options.Summarize] names keep a summary; everyone
// else's turns leave as before.

// DefaultSummaryKeep is how long a summary is kept after it was last made
// when [Options.SummaryKeep] is zero.
const DefaultSummaryKeep = 7 * 24 * time.Hour

// MaxSummaryText bounds a summary's text, in bytes; a longer one is cut at
// a line's end.
const MaxSummaryText = 4000

// maxSources bounds the keys and tool_use ids a summary remembers of the
// turns it was made from.
const maxSources = 200

// maxPending bounds the pending turns of one person; past it the oldest go
// (their text was never shown to the person's later requests anyway).
const maxPending = 100

// RunningSummary is a person's running summary.
type RunningSummary struct {
	// Text is the summary; empty when none was made yet or it was
	// dropped (a note it may hold was forgotten).
	Text string
	// Made is when Text was made.
	Made time.Time
	// Turns is how many turns were folded into it.
	Turns int
	// NoteIDs are the notes the summarizer was shown when it made Text.
	NoteIDs []int
	// Pending is how many turns wait to be folded.
	Pending int
}

// SummaryInput is what a [Summarizer] folds.
type SummaryInput struct {
	// Phone is whose summary it is.
	Phone string
	// Previous is the summary so far, "" for none.
	Previous string
	// Turns are the turns that left the conversation, oldest first.
	Turns []Turn
}

// SummaryOutput is what a [Summarizer] made.
type SummaryOutput struct {
	// Text is the new summary; empty means nothing worth keeping.
	Text string
	// NoteIDs are the notes it was shown.
	NoteIDs []int
	// Family is the key of the notes' family it was shown notes of, and
	// Notes those notes, id and text: what the summary is checked
	// against for notes gone meanwhile ([Memory.FoldSummary]). Neither
	// is stored.
	Family string
	Notes  []ShownNote
	// Usage is what making it cost, added to the usage ledger of the
	// person.
	Usage Usage
}

// A Summarizer folds the turns that left a person's conversation into
// their running summary. It is called outside any write, may take
// seconds, and is safe for concurrent use.
type Summarizer interface {
	Summarize(ctx context.Context, in SummaryInput) (SummaryOutput, error)
}

// summaryFile is the stored form of a person's summary.
type summaryFile struct {
	Text    string `json:"text,omitempty"`
	Made    string `json:"made,omitempty"`
	Turns   int    `json:"turns,omitempty"`
	NoteIDs []int  `json:"note_ids,omitempty"`
	// Sources are the keys ([turnKey]) of the turns folded into Text,
	// the last maxSources: a turn moved to pending twice (a crash
	// between two writes) is folded once.
	Sources []string `json:"sources,omitempty"`
	// ToolUseIDs are the tool_use ids of those turns, what forgetting a
	// note finds the summary made from its turn by.
	ToolUseIDs []string      `json:"tool_use_ids,omitempty"`
	Pending    []pendingTurn `json:"pending,omitempty"`
	// Updated is when the record was last written, for the sweep.
	Updated string `json:"updated"`
}

// pendingTurn is a turn waiting to be folded.
type pendingTurn struct {
	Key  string `json:"key"`
	Turn Turn   `json:"turn"`
}

// turnKey identifies a turn by its bytes.
func turnKey(t Turn) string {
	data, _ := t.MarshalJSON()
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

func (f *summaryFile) summary() RunningSummary {
	made, _ := time.Parse(time.RFC3339Nano, f.Made)
	return RunningSummary{Text: f.Text, Made: made, Turns: f.Turns, NoteIDs: slices.Clone(f.NoteIDs), Pending: len(f.Pending)}
}

func (f *summaryFile) has(key string) bool {
	return slices.Contains(f.Sources, key) || slices.ContainsFunc(f.Pending, func(p pendingTurn) bool { return p.Key == key })
}

// summarizes reports whether phone keeps a running summary.
func (m *Memory) summarizes(phone string) bool {
	return m.summarize != nil && phone != SystemSender && phone != Anonymous && m.summarize(phone)
}

// Summarizes reports whether phone keeps a running summary
// ([Options.Summarize]).
func (m *Memory) Summarizes(phone string) bool { return m.summarizes(phone) }

// readSummary reads phone's summary record; one that is not there is empty.
func (m *Memory) readSummary(ctx context.Context, phone string) (summaryFile, error) {
	rec, err := m.store.Get(ctx, Summaries, phone)
	if errors.Is(err, ErrNotFound) {
		return summaryFile{}, nil
	}
	if err != nil {
		return summaryFile{}, err
	}
	return decodeSummary(rec.Data)
}

func decodeSummary(data []byte) (summaryFile, error) {
	var f summaryFile
	if err := json.Unmarshal(data, &f); err != nil {
		return summaryFile{}, fmt.Errorf("summary of a phone does not parse: %w", err)
	}
	return f, nil
}

// updateSummary reads phone's summary record, lets change edit it, and
// writes it back on the condition that nobody wrote it meanwhile, reading
// again when somebody did. A change that returns errUnchanged writes
// nothing and returns nil; a record left with no text and nothing pending
// is deleted.
func (m *Memory) updateSummary(ctx context.Context, phone string, change func(f *summaryFile) error) error {
	return m.updateRecord(ctx, Summaries, phone, 0, func(data []byte) ([]byte, error) {
		var f summaryFile
		if data != nil {
			var err error
			if f, err = decodeSummary(data); err != nil {
				return nil, err
			}
		}
		if err := change(&f); err != nil {
			return nil, err
		}
		if f.Text == "" && len(f.Pending) == 0 {
			return nil, nil
		}
		f.Updated = m.now().UTC().Format(time.RFC3339Nano)
		return json.Marshal(f)
	})
}

// pend adds turns to phone's pending turns, unless phone keeps no summary.
// A turn already pending or folded is not added twice. It is called
// before the write that removes the turns from the conversation, so that
// a crash between the two leaves them in both places, never in neither.
func (m *Memory) pend(ctx context.Context, phone string, turns []Turn) error {
	if len(turns) == 0 || !m.summarizes(phone) {
		return nil
	}
	err := m.updateSummary(ctx, phone, func(f *summaryFile) error {
		n := len(f.Pending)
		for _, t := range turns {
			if k := turnKey(t); !f.has(k) {
				f.Pending = append(f.Pending, pendingTurn{Key: k, Turn: t})
			}
		}
		if len(f.Pending) == n {
			return errUnchanged
		}
		if len(f.Pending) > maxPending {
			f.Pending = slices.Delete(f.Pending, 0, len(f.Pending)-maxPending)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keep turns to summarize: %w", err)
	}
	return nil
}

// droppedTurns returns the turns of c that a save at now drops: all of
// them when it has expired, else the oldest beyond the cap.
func droppedTurns(c Conversation, now time.Time, lim Limits) []Turn {
	kept := keptTurns(c.Turns, c.LastActive, now, lim)
	return c.Turns[:len(c.Turns)-len(kept)]
}

// LoadSummary returns phone's summary as stored, an empty one when there
// is none.
func (m *Memory) LoadSummary(ctx context.Context, phone string) (RunningSummary, error) {
	if err := CheckPhone(phone); err != nil {
		return RunningSummary{}, err
	}
	f, err := m.readSummary(ctx, phone)
	if err != nil {
		return RunningSummary{}, fmt.Errorf("conversation: load summary: %w", err)
	}
	return f.summary(), nil
}

// FoldSummary folds phone's pending turns, if any, into phone's summary
// with sum, and returns the summary. The summarizer is called outside any
// write; turns that became pending meanwhile stay pending, and turns
// another process folded meanwhile are not folded twice. The summary's
// usage is added to phone's usage ledger. On error the pending turns stay
// for the next fold.
func (m *Memory) FoldSummary(ctx context.Context, phone string, sum Summarizer) (RunningSummary, error) {
	if err := CheckPhone(phone); err != nil {
		return RunningSummary{}, err
	}
	f, err := m.readSummary(ctx, phone)
	if err != nil {
		return RunningSummary{}, fmt.Errorf("conversation: fold summary: %w", err)
	}
	if len(f.Pending) == 0 || sum == nil || !m.summarizes(phone) {
		return f.summary(), nil
	}
	in := SummaryInput{Phone: phone, Previous: f.Text}
	keys := make([]string, len(f.Pending))
	for i, p := range f.Pending {
		in.Turns = append(in.Turns, p.Turn.Clone())
		keys[i] = p.Key
	}
	out, err := sum.Summarize(ctx, in)
	if !out.Usage.IsZero() {
		if uerr := m.AddUsage(ctx, phone, m.now(), out.Usage); uerr != nil {
			m.log.Warn("conversation: recording the summarizer's usage", "err", uerr)
		}
	}
	if err != nil {
		return f.summary(), fmt.Errorf("conversation: fold summary: %w", err)
	}
	// A gone note's text stays out of the summary whatever the model
	// wrote: checked before the write, and again after it, for a note
	// replaced or forgotten while the summary was being written.
	text, err := m.dropDead(ctx, cutSummary(out.Text), out, in.Turns)
	if err != nil {
		return f.summary(), fmt.Errorf("conversation: fold summary: %w", err)
	}
	var got summaryFile
	err = m.updateSummary(ctx, phone, func(g *summaryFile) error {
		// Only what is still pending is folded now; the text made from
		// it is kept only if the summary it started from is still the
		// stored one (another fold or a forget did not come first).
		if g.Text != f.Text || !slices.ContainsFunc(g.Pending, func(p pendingTurn) bool { return slices.Contains(keys, p.Key) }) {
			got = *g
			return errUnchanged
		}
		for _, p := range g.Pending {
			if slices.Contains(keys, p.Key) {
				g.Sources = append(g.Sources, p.Key)
				g.ToolUseIDs = append(g.ToolUseIDs, p.Turn.ToolUseIDs()...)
				g.Turns++
			}
		}
		g.Pending = slices.DeleteFunc(g.Pending, func(p pendingTurn) bool { return slices.Contains(keys, p.Key) })
		g.Sources = tail(g.Sources, maxSources)
		g.ToolUseIDs = tail(g.ToolUseIDs, maxSources)
		g.Text, g.NoteIDs = text, slices.Clone(out.NoteIDs)
		g.Made = m.now().UTC().Format(time.RFC3339Nano)
		got = *g
		return nil
	})
	if err != nil {
		return f.summary(), fmt.Errorf("conversation: fold summary: %w", err)
	}
	if got.Text != text || text == "" {
		return got.summary(), nil
	}
	again, err := m.dropDead(ctx, text, out, in.Turns)
	if err == nil && again != text {
		err = m.updateSummary(ctx, phone, func(g *summaryFile) error {
			if g.Text != text {
				return errUnchanged
			}
			g.Text = again
			got = *g
			return nil
		})
		if err == nil {
			err = m.store.Scrub(ctx)
		}
	}
	if err != nil {
		return got.summary(), fmt.Errorf("conversation: fold summary: %w", err)
	}
	return got.summary(), nil
}

// dropDead returns text without the lines holding the text of a note of
// out.Family that is gone (replaced, forgotten or erased), as far as this
// fold knows it: the notes the summarizer was shown, and the notes the
// folded turns wrote, found by their tool calls' ids. The texts of gone
// notes are known here only, from what the fold holds in memory; the
// store keeps none.
func (m *Memory) dropDead(ctx context.Context, text string, out SummaryOutput, turns []Turn) (string, error) {
	if text == "" || CheckFamilyID(out.Family) != nil {
		return text, nil
	}
	f, err := m.notes(ctx, out.Family)
	if err != nil {
		return "", err
	}
	var dead []string
	for _, sn := range out.Notes {
		if i := f.find(sn.ID); i < 0 || !f.Notes[i].live() || f.Notes[i].Text != sn.Text {
			dead = append(dead, sn.Text)
		}
	}
	gone := map[string]bool{}
	for _, n := range f.Notes {
		if !n.live() && n.ToolUseID != "" {
			gone[n.ToolUseID] = true
		}
	}
	for _, t := range turns {
		for _, msg := range t.Messages {
			blocks, _ := msg.Blocks()
			for _, b := range blocks {
				if b.Type != "tool_use" || !gone[b.ID] {
					continue
				}
				var in struct {
					Text string `json:"text"`
				}
				if json.Unmarshal(b.Input, &in) == nil && OneLine(in.Text) != "" {
					dead = append(dead, OneLine(in.Text))
				}
			}
		}
	}
	return dropLines(text, dead), nil
}

// dropLines returns text without its lines that hold one of texts
// ([holds]), trimmed.
func dropLines(text string, texts []string) string {
	lines := strings.Split(text, "\n")
	kept := slices.DeleteFunc(slices.Clone(lines), func(l string) bool {
		return slices.ContainsFunc(texts, func(t string) bool { return holds(l, t) })
	})
	if len(kept) == len(lines) {
		return text
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

func tail[S ~[]E, E any](s S, n int) S {
	if len(s) > n {
		return slices.Clone(s[len(s)-n:])
	}
	return s
}

// cutSummary returns text trimmed and at most MaxSummaryText bytes, cut at
// a line's end where it can be.
func cutSummary(text string) string {
	text = strings.TrimSpace(strings.ToValidUTF8(text, ""))
	if len(text) <= MaxSummaryText {
		return text
	}
	cut := text[:MaxSummaryText]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return strings.TrimSpace(strings.ToValidUTF8(cut, ""))
}

// Expire moves phone's conversation, if it has expired, to the pending
// turns of phone's summary and deletes it, as the next message would; it
// reports whether it did. It is what makes the turns of an expired
// conversation ready to fold before the next session needs the summary.
func (m *Memory) Expire(ctx context.Context, phone string) (bool, error) {
	if err := CheckPhone(phone); err != nil {
		return false, err
	}
	c, err := m.load(ctx, phone)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil || !m.Expired(c.LastActive) {
		return false, err
	}
	if err := m.expire(ctx, c); err != nil {
		return false, fmt.Errorf("conversation: expire: %w", err)
	}
	return true, nil
}

// expire deletes the expired conversation c if the store still holds its
// version, its turns first moved to the pending turns of its summary.
func (m *Memory) expire(ctx context.Context, c Conversation) error {
	if err := m.pend(ctx, c.Phone, c.Turns); err != nil {
		return err
	}
	// A turn saved since the load is newer: the conditional delete
	// leaves it alone.
	err := m.store.Delete(ctx, Conversations, c.Phone, c.Version)
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrReadOnly) {
		return err
	}
	return nil
}

// FoldAll folds the pending turns of everyone who has any with sum
// ([Memory.FoldSummary]) and returns how many summaries it made. It is
// serve's sweep's, after [Memory.Sweep] moved expired conversations to
// pending, so that the next session finds the summary ready. It goes on
// past a failure and returns the first.
func (m *Memory) FoldAll(ctx context.Context, sum Summarizer) (int, error) {
	recs, err := m.store.List(ctx, Summaries, "")
	if err != nil {
		return 0, fmt.Errorf("conversation: fold summaries: %w", err)
	}
	n := 0
	var first error
	for _, rec := range recs {
		var f summaryFile
		if json.Unmarshal(rec.Data, &f) != nil || len(f.Pending) == 0 || !m.summarizes(rec.Key) {
			continue
		}
		if _, err := m.FoldSummary(ctx, rec.Key, sum); err != nil {
			if ctx.Err() != nil {
				return n, err
			}
			first = cmp0(first, err)
			continue
		}
		n++
	}
	return n, first
}

func cmp0(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// sweepSummaries deletes the summaries last written longer than the
// summary keep ago.
func (m *Memory) sweepSummaries(ctx context.Context, now time.Time) (int, error) {
	recs, err := m.store.List(ctx, Summaries, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range recs {
		var f summaryFile
		if json.Unmarshal(rec.Data, &f) != nil {
			continue
		}
		updated, err := time.Parse(time.RFC3339Nano, f.Updated)
		if err == nil && now.Sub(updated) <= m.summaryKeep {
			continue
		}
		err = m.store.Delete(ctx, Summaries, rec.Key, rec.Version)
		switch {
		case err == nil:
			n++
		case !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict):
			return n, err
		}
	}
	return n, nil
}

// forgetInSummaries drops the summary of each of phones that may hold one
// of the gone notes (made from the turn that wrote it, or holding its
// text), from its record and from the memory shown to the session under
// way, and forgets ([ForgetTurn]) the pending turns that hold one.
func (m *Memory) forgetInSummaries(ctx context.Context, phones []string, gone []noteJSON) error {
	for _, p := range phones {
		if CheckPhone(p) != nil {
			continue
		}
		var dropped string
		err := m.updateSummary(ctx, p, func(f *summaryFile) error {
			changed := false
			dropped = ""
			for _, n := range gone {
				if f.Text != "" && (holds(f.Text, n.Text) || (n.ToolUseID != "" && slices.Contains(f.ToolUseIDs, n.ToolUseID))) {
					dropped = f.Text
					f.Text, f.NoteIDs, f.Made = "", nil, ""
					f.ToolUseIDs = nil
					changed = true
				}
			}
			for i, pt := range f.Pending {
				if turnHolds(pt.Turn, gone) {
					t := ForgetTurn(pt.Turn)
					f.Pending[i] = pendingTurn{Key: turnKey(t), Turn: t}
					changed = true
				}
			}
			if !changed {
				return errUnchanged
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("summary: %w", err)
		}
		// The session under way shows the summary it started with: it
		// goes too if it is the one dropped or holds a gone note.
		err = m.rewrite(ctx, p, func(c *Conversation) bool {
			return dropShownSummary(c, func(summary string) bool {
				return (dropped != "" && summary == dropped) ||
					slices.ContainsFunc(gone, func(n noteJSON) bool { return holds(summary, n.Text) })
			})
		})
		if err != nil {
			return fmt.Errorf("summary shown: %w", err)
		}
	}
	return nil
}

// dropFromSummaries removes the lines holding text, a replaced note's,
// from the stored summaries of phones, also of those whose summaries are
// off now (a stored one is kept until the sweep). The session under way
// keeps the summary it was shown, as it keeps the notes; the next one
// shows the summary without them.
func (m *Memory) dropFromSummaries(ctx context.Context, phones []string, text string) error {
	for _, p := range phones {
		if CheckPhone(p) != nil {
			continue
		}
		err := m.updateSummary(ctx, p, func(f *summaryFile) error {
			if !holds(f.Text, text) {
				return errUnchanged
			}
			f.Text = dropLines(f.Text, []string{text})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSummary returns an error unless rec is a person's summary as
// [Memory] writes it.
func checkSummary(rec Record) error {
	if CheckPhone(rec.Key) != nil || rec.Key == SystemSender {
		return fmt.Errorf("summary %q: not a person's phone", rec.Key)
	}
	var f summaryFile
	if err := json.Unmarshal(rec.Data, &f); err != nil {
		return fmt.Errorf("summary of %s: %w", rec.Key, err)
	}
	switch {
	case f.Text == "" && len(f.Pending) == 0:
		return fmt.Errorf("summary of %s: empty", rec.Key)
	case len(f.Text) > MaxSummaryText:
		return fmt.Errorf("summary of %s: %d bytes, over %d", rec.Key, len(f.Text), MaxSummaryText)
	case len(f.Pending) > maxPending:
		return fmt.Errorf("summary of %s: %d pending turns, over %d", rec.Key, len(f.Pending), maxPending)
	}
	if _, err := time.Parse(time.RFC3339Nano, f.Updated); err != nil {
		return fmt.Errorf("summary of %s: no readable updated time", rec.Key)
	}
	for _, p := range f.Pending {
		if p.Key != turnKey(p.Turn) {
			return fmt.Errorf("summary of %s: pending turn key %s does not match its turn", rec.Key, p.Key)
		}
		if _, dropped := repair([]Turn{p.Turn}); dropped > 0 {
			return fmt.Errorf("summary of %s: a pending turn the API would refuse", rec.Key)
		}
	}
	return nil
}

// DeleteSummary removes phone's running summary: its text goes from the
// summary record and from the memory shown to the session under way, and
// [Store.Scrub] runs so that the store keeps no copy. Turns still waiting
// to be folded stay, to make a new summary. It reports whether there was
// a summary to delete.
func (m *Memory) DeleteSummary(ctx context.Context, phone string) (bool, error) {
	if err := CheckPhone(phone); err != nil {
		return false, err
	}
	deleted := false
	err := m.updateSummary(ctx, phone, func(f *summaryFile) error {
		deleted = f.Text != ""
		if !deleted {
			return errUnchanged
		}
		f.Text, f.Made, f.Turns, f.NoteIDs, f.ToolUseIDs = "", "", 0, nil, nil
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("conversation: delete summary: %w", err)
	}
	err = m.rewrite(ctx, phone, func(c *Conversation) bool {
		return dropShownSummary(c, func(string) bool { return true })
	})
	if err == nil && deleted {
		err = m.store.Scrub(ctx)
	}
	if err != nil {
		return deleted, fmt.Errorf("conversation: delete summary: %w", err)
	}
	return deleted, nil
}
