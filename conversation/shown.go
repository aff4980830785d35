package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	phonepkg "github.com/mombot/mombot/phone"
)

// The memory shown to a session. At the first message of a session the
// notes a person sees are taken once ([Memory.ShowNotes]) and stored with the
// session's conversation, under the conversation object's key "memory"
// ([Memory.SaveShown]), so that every request of the session, in any
// process, renders the same bytes and the prompt cache serves them. A note
// written during the session reaches the model through its tool round; the
// next session takes the new state. Forgetting a note removes it from
// every stored session at once ([Memory.ForgetNote]).

// memoryKey is the conversation object's key holding the session's
// [Shown].
const memoryKey = "memory"

// ShownNote is a note as a session shows it.
type ShownNote struct {
	ID    int    `json:"id"`
	Scope string `json:"scope"`
	Text  string `json:"text"`
}

// Shown is the long-term memory shown to one person for one session: the
// notes they saw when it started and, once summaries exist, their summary.
type Shown struct {
	// Family is the key of the notes' family.
	Family string      `json:"family"`
	Notes  []ShownNote `json:"notes"`
	// Summary is the person's running summary of earlier conversations,
	// rendered after the notes; empty for none.
	Summary string `json:"summary,omitempty"`
}

// Render returns the text the model is shown ([RenderMemory]).
func (s Shown) Render() string { return RenderMemory(s.Notes, s.Summary) }

// Empty reports whether s shows nothing.
func (s Shown) Empty() bool { return len(s.Notes) == 0 && strings.TrimSpace(s.Summary) == "" }

// MemoryHeader opens the rendered notes.
const MemoryHeader = `Long-term notes kept with the remember tool, each with its number (use it for "replaces" or forget). Family notes are seen by everyone in the family; private ones only by the person writing to you now:`

// SummaryHeader opens the rendered summary.
const SummaryHeader = "Summary of your earlier conversations with this person:"

// RenderMemory returns the memory a person is shown: the notes, one a line
// as "#N (scope) text" in the order given, then the summary, if any. It is
// a pure function of its arguments, so the same notes render the same
// bytes; it returns "" when there is nothing to show.
func RenderMemory(notes []ShownNote, summary string) string {
	var b strings.Builder
	if len(notes) > 0 {
		b.WriteString(MemoryHeader)
		for _, n := range notes {
			b.WriteString("\n#")
			b.WriteString(strconv.Itoa(n.ID))
			b.WriteString(" (")
			b.WriteString(n.Scope)
			b.WriteString(") ")
			b.WriteString(OneLine(n.Text))
		}
	}
	if s := strings.TrimSpace(summary); s != "" {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(SummaryHeader)
		b.WriteByte('\n')
		b.WriteString(s)
	}
	return b.String()
}

// MemoryTokens estimates the tokens of rendered memory, at 4 bytes a
// token, rounded up, as the notes' budget counts them.
func MemoryTokens(rendered string) int { return (len(rendered) + 3) / 4 }

// Shown returns the memory stored with c's session, if it has one.
func (c Conversation) Shown() (Shown, bool) {
	raw, ok := c.Extra[memoryKey]
	if !ok {
		return Shown{}, false
	}
	var s Shown
	if err := json.Unmarshal(raw, &s); err != nil || CheckFamilyID(s.Family) != nil {
		return Shown{}, false
	}
	return s, true
}

// setShown stores s as c's session memory.
func (c *Conversation) setShown(s Shown) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if c.Extra == nil {
		c.Extra = map[string]json.RawMessage{}
	}
	c.Extra[memoryKey] = data
	return nil
}

// dropShown removes the notes ids of family from c's session memory and
// reports whether it changed it.
func dropShown(c *Conversation, family string, ids []int) bool {
	s, ok := c.Shown()
	if !ok || s.Family != family {
		return false
	}
	n := len(s.Notes)
	s.Notes = slices.DeleteFunc(s.Notes, func(sn ShownNote) bool { return slices.Contains(ids, sn.ID) })
	if len(s.Notes) == n {
		return false
	}
	return c.setShown(s) == nil
}

// dropShownSummary removes the summary from c's session memory if drop
// says so of it, and reports whether it changed it.
func dropShownSummary(c *Conversation, drop func(summary string) bool) bool {
	s, ok := c.Shown()
	if !ok || s.Summary == "" || !drop(s.Summary) {
		return false
	}
	s.Summary = ""
	return c.setShown(s) == nil
}

// ShowNotes returns the memory phone, a member of fam, is shown at the start of
// a session: the live notes they see, ordered by id. It returns an error
// wrapping ErrNotMember for anyone else, and ErrOtherFamily.
func (m *Memory) ShowNotes(ctx context.Context, fam Family, phone string) (Shown, error) {
	if err := fam.member(phone); err != nil {
		return Shown{}, err
	}
	f, err := m.notes(ctx, fam.ID)
	if err == nil {
		err = fam.claimed(f)
	}
	if err != nil {
		return Shown{}, fmt.Errorf("conversation: show notes: %w", err)
	}
	return Shown{Family: fam.ID, Notes: f.shown(phone)}, nil
}

// SaveShown is [Memory.Save] for the turn of a session shown memory: the
// first turn of a session stores shown with it, less any note forgotten
// since it was taken, and every later turn of the session leaves the
// stored one as it is (a forget may have changed it since). A session
// that starts anew drops the memory of the one before.
//
// The notes shown are taken before the write, so a note forgotten in
// between may find no session to remove it from: once the turn is saved,
// the notes are read again, and a note of shown forgotten or erased leaves
// the stored session's memory (a replaced one stays, as it stays for the
// rest of the session); a forgotten one's text also leaves the summary
// shown and the turns holding it, as a forget leaves them. A forget writes
// the notes before it rewrites the sessions, so one of the two sees the
// other's write.
//
// Its error is Save's: once the turn is saved SaveShown returns nil, and a
// failure of the re-read after it is logged, since the turn is durable
// and a caller told otherwise would tell the person that it is not.
func (m *Memory) SaveShown(ctx context.Context, phone string, turn Turn, shown Shown) error {
	if err := m.save(ctx, phone, turn, &shown); err != nil {
		return err
	}
	if err := m.recheckShown(ctx, phone, shown); err != nil {
		m.log.Warn("conversation: turn saved; reading the notes shown again failed, a note forgotten meanwhile may stay in this session's memory",
			"phone", phonepkg.Mask(phone), "err", err)
	}
	return nil
}

// goneShown returns the ids of the notes of shown that are gone now
// (forgotten, erased, or no longer stored), and of those the forgotten
// ones, whose text goes everywhere. A note replaced since is not gone
// here: the session keeps what it was shown of it, byte for byte for the
// prompt cache, and the next session shows the correction.
func (m *Memory) goneShown(ctx context.Context, shown Shown) (ids []int, forgotten []noteJSON, err error) {
	if len(shown.Notes) == 0 || CheckFamilyID(shown.Family) != nil {
		return nil, nil, nil
	}
	f, err := m.notes(ctx, shown.Family)
	if err != nil {
		return nil, nil, err
	}
	for _, sn := range shown.Notes {
		i := f.find(sn.ID)
		if i >= 0 && (f.Notes[i].Gone == goneReplaced || f.Notes[i].live() && f.Notes[i].Text == sn.Text) {
			continue
		}
		ids = append(ids, sn.ID)
		if i < 0 || f.Notes[i].Gone == goneForgotten {
			forgotten = append(forgotten, noteJSON{ID: sn.ID, Text: sn.Text})
		}
	}
	return ids, forgotten, nil
}

func noteTexts(notes []noteJSON) []string {
	texts := make([]string, len(notes))
	for i, n := range notes {
		texts[i] = n.Text
	}
	return texts
}

// RecheckShown returns shown, taken at a session's start, as it stands
// now: without the notes forgotten or erased since, and without the lines
// of its summary that hold a forgotten one's text; a note replaced since
// stays, as it stays for the rest of the session. The session's first message calls it
// once the summary is folded, which may take seconds, so that its
// requests show what a forget meanwhile left.
func (m *Memory) RecheckShown(ctx context.Context, shown Shown) (Shown, error) {
	ids, forgotten, err := m.goneShown(ctx, shown)
	if err != nil || len(ids) == 0 {
		return shown, err
	}
	shown.Notes = slices.DeleteFunc(slices.Clone(shown.Notes), func(sn ShownNote) bool { return slices.Contains(ids, sn.ID) })
	shown.Summary = dropLines(shown.Summary, noteTexts(forgotten))
	return shown, nil
}

// recheckShown removes the notes of shown that are gone now from phone's
// stored session memory; of those forgotten, their text also from the
// summary it shows and from its turns, as [Memory.ForgetNote] does.
func (m *Memory) recheckShown(ctx context.Context, phone string, shown Shown) error {
	ids, forgotten, err := m.goneShown(ctx, shown)
	if err != nil || len(ids) == 0 {
		return err
	}
	texts := noteTexts(forgotten)
	scrub := false
	err = m.rewrite(ctx, phone, func(c *Conversation) bool {
		changed := dropShown(c, shown.Family, ids)
		if s, ok := c.Shown(); ok && s.Family == shown.Family {
			if kept := dropLines(s.Summary, texts); kept != s.Summary {
				s.Summary = kept
				changed = c.setShown(s) == nil || changed
			}
		}
		for i, t := range c.Turns {
			if turnHolds(t, forgotten) {
				c.Turns[i] = ForgetTurn(t)
				changed = true
			}
		}
		scrub = changed && len(forgotten) > 0
		return changed
	})
	if err != nil || !scrub {
		return err
	}
	return m.store.Scrub(ctx)
}

// liveShown returns s without the notes that are no longer live.
func (m *Memory) liveShown(ctx context.Context, s Shown) (Shown, error) {
	if len(s.Notes) == 0 {
		return s, nil
	}
	f, err := m.notes(ctx, s.Family)
	if err != nil {
		return Shown{}, err
	}
	s.Notes = slices.DeleteFunc(slices.Clone(s.Notes), func(sn ShownNote) bool {
		i := f.find(sn.ID)
		return i < 0 || !f.Notes[i].live() || f.Notes[i].Text != sn.Text
	})
	return s, nil
}

// sessionMemory sets the memory of c's session as a save of a turn at a
// session's start (fresh) or during one leaves it.
func (m *Memory) sessionMemory(ctx context.Context, c *Conversation, fresh bool, shown *Shown) error {
	_, has := c.Extra[memoryKey]
	if fresh && has {
		delete(c.Extra, memoryKey)
		has = false
	}
	if shown == nil || has || CheckFamilyID(shown.Family) != nil {
		return nil
	}
	s, err := m.liveShown(ctx, *shown)
	if err != nil {
		return err
	}
	return c.setShown(s)
}
