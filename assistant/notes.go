package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mombot/mombot/conversation"
)

// Long-term notes (docs/memory.md, "Long-term notes"). With Options.Notes
// set, the family's members are offered two more tools, remember and
// forget, and shown the notes they see as a second system block after the
// fixed instructions: taken once at the start of a session
// ([conversation.Memory.ShowNotes]), stored with the session's conversation
// ([conversation.Memory.SaveShown]) and rendered from it for every request
// of the session, so that the prompt cache serves the same bytes. Anyone
// else (strangers, the system sender) gets the requests of an assistant
// without them: no tools, no memory.

// NotesOptions turn the family's long-term notes on.
type NotesOptions struct {
	// FamilyID is the key of the family's notes; "" means
	// conversation.DefaultFamilyID, claimed by the family's numbers (see
	// conversation.Family).
	FamilyID string
	// Members maps the phones that have notes to their names; nil means
	// every person of Options.Family.
	Members map[string]string
}

// The names of the note tools.
const (
	RememberTool = "remember"
	ForgetTool   = "forget"
)

// notesFamily returns the conversation.Family of the notes.
func notesFamily(o *NotesOptions, members map[string]Person) (conversation.Family, error) {
	fam := conversation.Family{ID: o.FamilyID, Members: make(map[string]string, len(members))}
	if fam.ID == "" {
		fam.ID, fam.Claim = conversation.DefaultFamilyID, true
	}
	if err := conversation.CheckFamilyID(fam.ID); err != nil {
		return fam, err
	}
	for p, person := range members {
		fam.Members[p] = person.Name
	}
	if o.Members != nil {
		fam.Members = make(map[string]string, len(o.Members))
		for p, name := range o.Members {
			if err := conversation.CheckPhone(p); err != nil {
				return fam, err
			}
			fam.Members[p] = name
		}
	}
	return fam, nil
}

// memberOf returns the assistant that answers from: the one with the
// note tools for a member of the family when notes are on, else a.
func (a *Assistant) memberOf(from string) *Assistant {
	if a.members != nil && a.isMember(from) {
		return a.members
	}
	return a
}

// isMember reports whether phone is a member of the notes' family.
func (a *Assistant) isMember(phone string) bool {
	_, ok := a.fam.Members[phone]
	return ok && phone != conversation.SystemSender
}

// withNotes returns a copy of a that offers the note tools, with the
// request prefix and fallback that go with them.
func (a *Assistant) withNotes(o Options) (*Assistant, error) {
	tools := append(o.Tools.Tools(), rememberTool{}, forgetTool{})
	reg, err := NewRegistry(tools...)
	if err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	m := *a
	m.tools = reg
	m.staticTokens = len(renderPrefix(m.model, m.maxTok, o.SystemPrompt, tools, "")) / bytesPerToken
	m.staticTTL = staticTTL(m.ttl, m.staticTokens, m.minCache)
	m.prefix = renderPrefix(m.model, m.maxTok, o.SystemPrompt, tools, m.staticTTL)
	m.members, m.notes = nil, true
	if a.fallback != nil {
		f := *a.fallback
		f.tools = reg
		f.staticTokens = m.staticTokens
		f.staticTTL = staticTTL(f.ttl, f.staticTokens, f.minCache)
		f.prefix = renderPrefix(f.model, f.maxTok, o.SystemPrompt, tools, f.staticTTL)
		m.fallback = &f
	}
	return &m, nil
}

// startMemory sets the memory the turn shows: the one stored with the
// session c, or, at a session's start, the notes the person sees now
// (when notes are on) and their summary (when summaries are on). A
// failure to read the notes is logged and the turn shows none of them.
func (t *turn) startMemory(ctx context.Context, c conversation.Conversation, loaded bool) {
	a := t.a
	notes := a.notes && a.isMember(t.in.From)
	summary := a.summarizer != nil && a.mem.Summarizes(t.in.From)
	if !notes && !summary {
		return
	}
	// The shown memory is keyed by the notes' family; without notes, by
	// the family the summarizer shows notes of.
	family := a.fam.ID
	if !notes {
		family = a.summarizer.fam.ID
	}
	if loaded && len(c.Turns) > 0 {
		if s, ok := c.Shown(); ok && s.Family == family {
			t.shown = &s
			return
		}
	}
	s := conversation.Shown{Family: family}
	if notes {
		var err error
		if s, err = a.mem.ShowNotes(ctx, a.fam, t.in.From); err != nil {
			t.log.Warn("assistant: reading the family's notes; answering without them", "err", err)
			s = conversation.Shown{Family: family}
		}
	}
	s.Summary = a.sessionSummary(ctx, t.in.From, t.log)
	if summary && len(s.Notes) > 0 {
		// The fold may have taken seconds: a note forgotten meanwhile is
		// not shown. The notes are taken before the fold, so that the
		// save's own re-check knows every note the summary may hold.
		if now, err := a.mem.RecheckShown(ctx, s); err != nil {
			t.log.Warn("assistant: reading the family's notes again; answering without memory", "err", err)
			s = conversation.Shown{Family: family}
		} else {
			s = now
		}
	}
	t.shown = &s
}

// memoryBlock returns the system block of the turn's memory, without its
// leading comma, or nil when it shows nothing. It carries a breakpoint
// when the tools, the instructions and the memory are long enough to be
// cached: an hour, or 5 minutes under TTL5m, so that it never follows a
// shorter one (the history's comes after it).
func (t *turn) memoryBlock() []byte {
	if t.shown == nil {
		return nil
	}
	text := t.shown.Render()
	if text == "" {
		return nil
	}
	api := t.api()
	b := []byte(`{"type":"text","text":`)
	b = append(b, quote(text)...)
	if api.staticTokens+len(text)/bytesPerToken >= api.minCache {
		ttl := TTL1h
		if api.ttl == TTL5m {
			ttl = TTL5m
		}
		b = append(b, `,"cache_control":`+cacheControl(ttl)...)
	}
	return append(b, '}')
}

// forgot takes note n out of the memory the rest of the turn shows, and
// marks the turn to be stored forgotten if it holds the note.
func (t *turn) forgot(n conversation.Note) {
	if t.shown != nil {
		s := *t.shown
		s.Notes = slices.DeleteFunc(slices.Clone(s.Notes), func(sn conversation.ShownNote) bool { return sn.ID == n.ID })
		t.shown = &s
	}
	t.gone = append(t.gone, n)
}

// noteError returns the text of a note error the model reads: the
// domain's sentence without the package's prefixes.
func noteError(err error) error {
	msg := err.Error()
	for _, s := range []error{conversation.ErrNoNote, conversation.ErrNoteLimit, conversation.ErrInvalidNote, conversation.ErrNotMember, conversation.ErrOtherFamily} {
		if i := strings.Index(msg, s.Error()); i >= 0 && errors.Is(err, s) {
			msg = msg[i:]
			if s == conversation.ErrNoteLimit || s == conversation.ErrInvalidNote {
				// "over the notes' limits: a note may be at most ...":
				// what to do is after the colon.
				msg = strings.TrimPrefix(msg, s.Error()+": ")
			}
			return errors.New(msg)
		}
	}
	return err
}

type rememberTool struct{}

func (rememberTool) Name() string { return RememberTool }
func (rememberTool) Description() string {
	return `Keep a note for the long term: a lasting fact the person asks you to remember, or one they clearly want kept (an allergy, a preference, a decision, a date). Never write a note silently: tell the person its number. "family" notes are seen by everyone in the family, "private" ones only by the person writing. To correct a note, give its number in "replaces": the old one is gone. One short fact per note, at most 500 characters. Returns the note's number.`
}
func (rememberTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The fact, one short line."},"scope":{"type":"string","enum":["family","private"],"description":"family: seen by everyone in the family; private: only by the person writing."},"replaces":{"type":"integer","minimum":1,"description":"The number of a note this one corrects, if any."}},"required":["text","scope"]}`)
}

func (rememberTool) Run(ctx context.Context, c Call) (string, error) {
	var in struct {
		Text     string `json:"text"`
		Scope    string `json:"scope"`
		Replaces *int   `json:"replaces"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	t := c.turn
	if t == nil || !t.a.notes || !t.a.isMember(c.Phone) {
		return "", errors.New("notes are kept only for the family's members")
	}
	n := conversation.NewNote{Text: in.Text, Scope: in.Scope, MessageID: t.in.ID, ToolUseID: c.ToolUseID}
	if in.Replaces != nil {
		if *in.Replaces < 1 {
			return "", fmt.Errorf("no note #%d", *in.Replaces)
		}
		n.Replaces = *in.Replaces
	}
	note, added, err := t.a.mem.AddNote(ctx, t.a.fam, c.Phone, n)
	if err != nil {
		return "", noteError(err)
	}
	if !added {
		return fmt.Sprintf("Already noted as #%d (%s).", note.ID, note.Scope), nil
	}
	out := fmt.Sprintf("Noted as #%d (%s).", note.ID, note.Scope)
	if note.Replaces > 0 {
		out += fmt.Sprintf(" It replaces #%d, which is gone.", note.Replaces)
	}
	return out + fmt.Sprintf(" Tell the person; saying \"forget %d\" removes it.", note.ID), nil
}

type forgetTool struct{}

func (forgetTool) Name() string { return ForgetTool }
func (forgetTool) Description() string {
	return `Forget a long-term note by its number, when the person asks: its text is removed everywhere, including the message that wrote it. Forgetting a correction does not bring back the note it replaced.`
}
func (forgetTool) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer","minimum":1,"description":"The note's number, as shown (#12 is 12)."}},"required":["id"]}`)
}

func (forgetTool) Run(ctx context.Context, c Call) (string, error) {
	var in struct {
		ID *int `json:"id"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	if in.ID == nil {
		return "", errors.New("give the note's number as id")
	}
	t := c.turn
	if t == nil || !t.a.notes || !t.a.isMember(c.Phone) {
		return "", errors.New("notes are kept only for the family's members")
	}
	note, err := t.a.mem.ForgetNote(ctx, t.a.fam, c.Phone, *in.ID)
	if note.ID != 0 {
		t.forgot(note)
	}
	if err != nil {
		if note.ID != 0 {
			t.log.Error("assistant: a forgotten note's text may remain in the store", "note", note.ID, "err", err)
			return "", fmt.Errorf("#%d is forgotten, but removing its text from the stored conversation failed; tell the person it may take a retry by the family's admin (mombot memory forget)", note.ID)
		}
		return "", noteError(err)
	}
	return fmt.Sprintf("Forgot #%d: its text is gone from the notes and from the conversation.", note.ID), nil
}
