package conversation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Scopes of a note.
const (
	// ScopeFamily: every member of the family sees the note.
	ScopeFamily = "family"
	// ScopePrivate: only the note's author sees it.
	ScopePrivate = "private"
)

// Limits of the notes, so that the memory shown with every request stays
// small and cheap: a family keeps at most MaxFamilyNotes live family notes
// and each person MaxPrivateNotes live private ones (forgotten and
// replaced notes do not count); a note's text has at most MaxNoteText
// characters; and what one person is shown ([RenderMemory] of the notes
// they see) is at most MaxMemoryTokens tokens, counted at 4 bytes a token.
// A note past a limit is refused with an error wrapping [ErrNoteLimit]
// whose text says which, and what to do.
const (
	MaxFamilyNotes  = 100
	MaxPrivateNotes = 50
	MaxNoteText     = 500
	MaxMemoryTokens = 1500
	// MaxTombstones bounds the content-free records of notes that are
	// gone; the oldest go first.
	MaxTombstones = 1000
)

// DefaultFamilyID is the key of a family's notes when its configuration
// names none. Its notes are claimed by the family's members (see
// [Family].Claim).
const DefaultFamilyID = "family"

// The errors of the notes.
var (
	// ErrNoNote: no live note with that id that this person can see. A
	// private note of someone else is reported the same way, so that its
	// existence is not revealed.
	ErrNoNote = errors.New("no note")
	// ErrNoteLimit: the note would take the notes past one of their
	// limits.
	ErrNoteLimit = errors.New("over the notes' limits")
	// ErrInvalidNote: the note's text or scope cannot be kept.
	ErrInvalidNote = errors.New("invalid note")
	// ErrNotMember: the phone is not a member of the family (a stranger,
	// or the system sender), which keeps no notes.
	ErrNotMember = errors.New("not a member of the family")
	// ErrOtherFamily: the notes stored under the family's key were
	// written by another family, none of whose members is in this one.
	ErrOtherFamily = errors.New("the notes under this family's key belong to another family")
	// ErrInvalidFamily: a family id that cannot be a key.
	ErrInvalidFamily = errors.New("invalid family id")
)

// Family is whose notes are read and written: the key they are stored
// under and the members who may see and write them.
type Family struct {
	// ID is the key of the family's notes ([Notes]): the configuration's
	// family_id, or DefaultFamilyID.
	ID string
	// Members maps each member's phone (E.164, as conversations are
	// keyed) to their name. Nobody else has notes.
	Members map[string]string
	// Claim makes the notes record remember the members' phones, and
	// refuses with ErrOtherFamily a record none of whose remembered
	// members is in Members: what keeps two families that share a store
	// and both left the id at its default from seeing each other's notes.
	// Adding or removing members one at a time keeps the notes.
	Claim bool
}

// CheckFamilyID returns an error wrapping ErrInvalidFamily unless id can
// be the key of a family's notes: 1 to 64 bytes of UTF-8 without control
// characters or surrounding white space.
func CheckFamilyID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("conversation: %w: empty", ErrInvalidFamily)
	case len(id) > 64:
		return fmt.Errorf("conversation: %w: longer than 64 bytes", ErrInvalidFamily)
	case !utf8.ValidString(id) || strings.TrimSpace(id) != id || strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Errorf("conversation: %w: %q", ErrInvalidFamily, id)
	}
	return nil
}

// member returns an error wrapping ErrNotMember unless phone is one of
// fam's members.
func (fam Family) member(phone string) error {
	if err := CheckFamilyID(fam.ID); err != nil {
		return err
	}
	if _, ok := fam.Members[phone]; !ok || phone == SystemSender {
		return fmt.Errorf("conversation: %w", ErrNotMember)
	}
	return nil
}

// Note is one durable fact the assistant keeps for a family.
type Note struct {
	// ID is the note's number in its family, shown as #ID; never reused.
	ID int
	// Scope is ScopeFamily or ScopePrivate.
	Scope string
	// Text is the fact, one line.
	Text string
	// Author is the phone of the member who wrote it, and AuthorName
	// their name (as configured now, or as it was when they wrote it).
	Author, AuthorName string
	// Created is when it was written.
	Created time.Time
	// MessageID is the id of the person's message it came from, if any,
	// and ToolUseID the id of the tool call that wrote it: what forgetting
	// it finds the stored turn and the recent message by.
	MessageID, ToolUseID string
	// Replaces is the id of the note this one corrected, or 0.
	Replaces int
}

// NewNote is what [Memory.AddNote] writes.
type NewNote struct {
	Text  string
	Scope string
	// Replaces is the id of a note this one corrects, or 0; the corrected
	// note is gone once this one is written.
	Replaces int
	// MessageID and ToolUseID link the note to the message and the tool
	// call it came from (see [Note]).
	MessageID, ToolUseID string
}

// notesFile is the stored form of a family's notes: one record per family,
// so that ids and limits are decided in one conditional write.
type notesFile struct {
	// Next is the id the next note gets.
	Next int `json:"next"`
	// Members are the phones that claim the record (Family.Claim).
	Members []string   `json:"members,omitempty"`
	Notes   []noteJSON `json:"notes"`
}

// noteJSON is a stored note: a live one, or a tombstone that keeps only
// its id, why it is gone and the id of the tool call that wrote it (what
// a summary made from that call is checked by, [Memory.dropDead]).
type noteJSON struct {
	ID        int    `json:"id"`
	Scope     string `json:"scope,omitempty"`
	Text      string `json:"text,omitempty"`
	Author    string `json:"author,omitempty"`
	Name      string `json:"name,omitempty"`
	Created   string `json:"created,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	Replaces  int    `json:"replaces,omitempty"`
	// Gone is "forgotten", "replaced" or "erased" for a tombstone.
	Gone string `json:"gone,omitempty"`
}

// Why a note is gone.
const (
	goneForgotten = "forgotten"
	goneReplaced  = "replaced"
	goneErased    = "erased"
)

func (n noteJSON) live() bool { return n.Gone == "" }

// visible reports whether phone sees the live note n.
func (n noteJSON) visible(phone string) bool {
	return n.live() && (n.Scope == ScopeFamily || n.Author == phone)
}

// tombstone returns n without content, gone for why.
func (n noteJSON) tombstone(why string) noteJSON {
	return noteJSON{ID: n.ID, ToolUseID: n.ToolUseID, Gone: why}
}

func (n noteJSON) note(fam Family) Note {
	created, _ := time.Parse(time.RFC3339Nano, n.Created)
	name := n.Name
	if cur, ok := fam.Members[n.Author]; ok && cur != "" {
		name = cur
	}
	return Note{ID: n.ID, Scope: n.Scope, Text: n.Text, Author: n.Author, AuthorName: name, Created: created,
		MessageID: n.MessageID, ToolUseID: n.ToolUseID, Replaces: n.Replaces}
}

func (f *notesFile) find(id int) int {
	return slices.IndexFunc(f.Notes, func(n noteJSON) bool { return n.ID == id })
}

// shown returns the notes phone sees, ordered by id.
func (f *notesFile) shown(phone string) []ShownNote {
	var out []ShownNote
	for _, n := range f.Notes {
		if n.visible(phone) {
			out = append(out, ShownNote{ID: n.ID, Scope: n.Scope, Text: n.Text})
		}
	}
	slices.SortFunc(out, func(a, b ShownNote) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// prune drops the oldest tombstones past MaxTombstones.
func (f *notesFile) prune() {
	gone := 0
	for _, n := range f.Notes {
		if !n.live() {
			gone++
		}
	}
	for i := 0; gone > MaxTombstones && i < len(f.Notes); {
		if !f.Notes[i].live() {
			f.Notes = slices.Delete(f.Notes, i, i+1)
			gone--
			continue
		}
		i++
	}
}

// decodeNotes reads a stored notes record.
func decodeNotes(data []byte) (notesFile, error) {
	var f notesFile
	if err := json.Unmarshal(data, &f); err != nil {
		return notesFile{}, fmt.Errorf("notes record does not parse: %w", err)
	}
	if f.Next < 1 {
		f.Next = 1
	}
	return f, nil
}

// OneLine returns s as a note, a list's name and a list item keep it:
// control characters as spaces, white space trimmed and collapsed.
func OneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// CheckNoteText returns text as a note keeps it ([OneLine]), or an error
// wrapping ErrInvalidNote (empty) or ErrNoteLimit (over MaxNoteText
// characters) that says what to do.
func CheckNoteText(text string) (string, error) {
	text = OneLine(text)
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return "", fmt.Errorf("%w: a note needs some text", ErrInvalidNote)
	case n > MaxNoteText:
		return "", fmt.Errorf("%w: a note may be at most %d characters, and this one has %d; keep one short fact per note", ErrNoteLimit, MaxNoteText, n)
	}
	return text, nil
}

// notes reads fam's notes record; a record that is not there is empty.
func (m *Memory) notes(ctx context.Context, id string) (notesFile, error) {
	rec, err := m.store.Get(ctx, Notes, id)
	if errors.Is(err, ErrNotFound) {
		return notesFile{Next: 1}, nil
	}
	if err != nil {
		return notesFile{}, err
	}
	return decodeNotes(rec.Data)
}

// claimed returns ErrOtherFamily if fam claims its record and f was
// claimed by other phones only.
func (fam Family) claimed(f notesFile) error {
	if !fam.Claim || len(f.Members) == 0 {
		return nil
	}
	for _, p := range f.Members {
		if _, ok := fam.Members[p]; ok {
			return nil
		}
	}
	return fmt.Errorf("conversation: %w: set a family_id of your own in mombot.json", ErrOtherFamily)
}

// updateNotes reads the family's notes record, lets change edit it, and
// writes it back on the condition that nobody wrote it meanwhile, reading
// again when somebody did. A change that returns an error writes nothing.
func (m *Memory) updateNotes(ctx context.Context, fam Family, change func(f *notesFile) error) error {
	var changeErr error
	err := m.updateRecord(ctx, Notes, fam.ID, 0, func(data []byte) ([]byte, error) {
		f := notesFile{Next: 1}
		if data != nil {
			var err error
			if f, err = decodeNotes(data); err != nil {
				return nil, err
			}
		}
		if err := fam.claimed(f); err != nil {
			return nil, err
		}
		if changeErr = change(&f); changeErr != nil {
			return nil, changeErr
		}
		if fam.Claim {
			f.Members = slices.Sorted(maps.Keys(fam.Members))
		}
		f.prune()
		return json.Marshal(f)
	})
	if changeErr != nil {
		return changeErr // errUnchanged too: the callers tell it apart
	}
	return err
}

// Notes returns the live notes phone sees, the family's and their own
// private ones, ordered by id. It returns an error wrapping ErrNotMember
// for anyone outside fam.
func (m *Memory) Notes(ctx context.Context, fam Family, phone string) ([]Note, error) {
	if err := fam.member(phone); err != nil {
		return nil, err
	}
	f, err := m.notes(ctx, fam.ID)
	if err == nil {
		err = fam.claimed(f)
	}
	if err != nil {
		return nil, fmt.Errorf("conversation: notes: %w", err)
	}
	var out []Note
	for _, n := range f.Notes {
		if n.visible(phone) {
			out = append(out, n.note(fam))
		}
	}
	slices.SortFunc(out, func(a, b Note) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// AddNote writes a note by phone, a member of fam, and returns it. A note
// with the text (ignoring case) and scope of a live one phone sees is not
// written twice: that one is returned, with added false. With n.Replaces
// set, the note it names, which phone must see, is gone once this one is
// written (a tombstone without content remains), and neither counts twice
// against the limits.
//
// Errors: ErrNotMember; ErrInvalidNote for an empty text or an unknown
// scope; ErrNoNote when Replaces names no live note phone sees;
// ErrNoteLimit past a limit (see MaxFamilyNotes); ErrOtherFamily. Nothing
// is written on error.
func (m *Memory) AddNote(ctx context.Context, fam Family, phone string, n NewNote) (note Note, added bool, err error) {
	if err := fam.member(phone); err != nil {
		return Note{}, false, err
	}
	if n.Scope != ScopeFamily && n.Scope != ScopePrivate {
		return Note{}, false, fmt.Errorf("conversation: %w: scope must be %q or %q, not %q", ErrInvalidNote, ScopeFamily, ScopePrivate, n.Scope)
	}
	text, err := CheckNoteText(n.Text)
	if err != nil {
		return Note{}, false, fmt.Errorf("conversation: %w", err)
	}
	if n.Replaces < 0 {
		return Note{}, false, fmt.Errorf("conversation: %w #%d", ErrNoNote, n.Replaces)
	}
	now := m.now().UTC()
	var replaced noteJSON
	err = m.updateNotes(ctx, fam, func(f *notesFile) error {
		added = false
		if n.Replaces > 0 {
			i := f.find(n.Replaces)
			if i < 0 || !f.Notes[i].visible(phone) {
				return fmt.Errorf("%w #%d to replace; the notes you can see are listed with their numbers", ErrNoNote, n.Replaces)
			}
			replaced = f.Notes[i]
			f.Notes[i] = f.Notes[i].tombstone(goneReplaced)
		} else if i := slices.IndexFunc(f.Notes, func(o noteJSON) bool {
			return o.visible(phone) && o.Scope == n.Scope && strings.EqualFold(o.Text, text)
		}); i >= 0 {
			note = f.Notes[i].note(fam)
			return errUnchanged
		}
		nj := noteJSON{ID: f.Next, Scope: n.Scope, Text: text, Author: phone, Name: fam.Members[phone],
			Created: now.Format(time.RFC3339Nano), MessageID: n.MessageID, ToolUseID: n.ToolUseID, Replaces: n.Replaces}
		f.Notes = append(f.Notes, nj)
		f.Next++
		if err := f.check(fam, phone, nj); err != nil {
			return err
		}
		note, added = nj.note(fam), true
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return note, false, nil
	}
	if err != nil {
		return Note{}, false, fmt.Errorf("conversation: add note: %w", err)
	}
	if replaced.Text != "" {
		// The note is written: an error now would tell the person it is
		// not, against the doc's "nothing is written on error".
		if err := m.dropFromSummaries(ctx, slices.Collect(maps.Keys(fam.Members)), replaced.Text); err != nil {
			m.log.Warn("conversation: note written; taking the replaced note's text out of the summaries failed",
				"family", fam.ID, "note", note.ID, "replaces", n.Replaces, "err", err)
		}
	}
	return note, true, nil
}

// errUnchanged stops an update that has nothing to write.
var errUnchanged = errors.New("unchanged")

// check returns an error wrapping ErrNoteLimit if f, with the note nj just
// added by phone, is past a limit.
func (f *notesFile) check(fam Family, phone string, nj noteJSON) error {
	family, private := 0, 0
	for _, o := range f.Notes {
		switch {
		case !o.live():
		case o.Scope == ScopeFamily:
			family++
		case o.Author == phone:
			private++
		}
	}
	if nj.Scope == ScopeFamily && family > MaxFamilyNotes {
		return fmt.Errorf("%w: the family already has %d notes, the most it may keep; replace one (replaces) or forget one first", ErrNoteLimit, MaxFamilyNotes)
	}
	if nj.Scope == ScopePrivate && private > MaxPrivateNotes {
		return fmt.Errorf("%w: you already have %d private notes, the most one person may keep; replace one (replaces) or forget one first", ErrNoteLimit, MaxPrivateNotes)
	}
	// Everyone who sees the note must stay within the budget: for a
	// family note every member, for a private one its author.
	viewers := []string{phone}
	if nj.Scope == ScopeFamily {
		viewers = slices.Collect(maps.Keys(fam.Members))
		for _, o := range f.Notes {
			if o.live() && o.Scope == ScopePrivate && !slices.Contains(viewers, o.Author) {
				viewers = append(viewers, o.Author)
			}
		}
	}
	for _, v := range viewers {
		if t := MemoryTokens(RenderMemory(f.shown(v), "")); t > MaxMemoryTokens {
			return fmt.Errorf("%w: with this note the notes shown would take %d tokens, over the %d allowed; make it shorter, replace an older note (replaces) or forget one", ErrNoteLimit, t, MaxMemoryTokens)
		}
	}
	return nil
}

// ForgetNote forgets the note id, which phone, a member of fam, must see,
// and returns it as it was. The note becomes a tombstone without content;
// a note it replaced stays gone. Its text is removed from what is stored
// elsewhere too: the turn that wrote it (found by its tool call, or by
// the text) and every turn holding the text in the conversations of the
// family's members, each rewritten to stay valid for the API with its
// content "[forgotten]"; the memory shown to any session of the family
// ([Shown]); and the recent messages of its id or holding the text. Then
// [Store.Scrub] runs, so that the store's storage keeps no copy.
//
// It returns an error wrapping ErrNoNote when phone sees no live note id,
// and ErrNotMember or ErrOtherFamily.
func (m *Memory) ForgetNote(ctx context.Context, fam Family, phone string, id int) (Note, error) {
	if err := fam.member(phone); err != nil {
		return Note{}, err
	}
	var gone noteJSON
	err := m.updateNotes(ctx, fam, func(f *notesFile) error {
		i := f.find(id)
		if i < 0 || !f.Notes[i].visible(phone) {
			return fmt.Errorf("%w #%d", ErrNoNote, id)
		}
		gone = f.Notes[i]
		f.Notes[i] = gone.tombstone(goneForgotten)
		return nil
	})
	if err != nil {
		return Note{}, fmt.Errorf("conversation: forget note: %w", err)
	}
	phones := slices.Collect(maps.Keys(fam.Members))
	if !slices.Contains(phones, gone.Author) {
		phones = append(phones, gone.Author)
	}
	if err := m.scrubNotes(ctx, fam.ID, phones, []noteJSON{gone}, true); err != nil {
		return gone.note(fam), fmt.Errorf("conversation: forget note #%d: %w", id, err)
	}
	return gone.note(fam), nil
}

// scrubNotes removes the notes gone from the memory shown to the sessions
// of phones and, with everywhere, their text from what else phones' data
// holds of them (the turns that wrote them or hold their text, the recent
// messages, the summaries) and scrubs the store.
func (m *Memory) scrubNotes(ctx context.Context, family string, phones []string, gone []noteJSON, everywhere bool) error {
	ids := make([]int, len(gone))
	for i, n := range gone {
		ids[i] = n.ID
	}
	for _, p := range phones {
		if CheckPhone(p) != nil || p == SystemSender {
			continue
		}
		err := m.rewrite(ctx, p, func(c *Conversation) bool {
			changed := dropShown(c, family, ids)
			for i, t := range c.Turns {
				if everywhere && turnHolds(t, gone) {
					c.Turns[i] = ForgetTurn(t)
					changed = true
				}
			}
			return changed
		})
		if err != nil {
			return err
		}
		if !everywhere {
			continue
		}
		err = m.updateRecent(ctx, p, func(old []RecentMessage) []RecentMessage {
			return slices.DeleteFunc(old, func(r RecentMessage) bool {
				return slices.ContainsFunc(gone, func(n noteJSON) bool {
					return (n.MessageID != "" && r.ID == n.MessageID) || holds(r.Text, n.Text)
				})
			})
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	if !everywhere {
		return nil
	}
	if err := m.forgetInSummaries(ctx, phones, gone); err != nil {
		return err
	}
	return m.store.Scrub(ctx)
}

// rewrite lets change edit phone's stored conversation, if there is one,
// and writes it back if change reports a change, through [Memory.update]:
// on the condition that nobody wrote it meanwhile.
func (m *Memory) rewrite(ctx context.Context, phone string, change func(c *Conversation) bool) error {
	err := m.update(ctx, phone, func(c *Conversation, _ time.Time) error {
		if c.Version == 0 || !change(c) { // none stored, or nothing to change
			return errUnchanged
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// holds reports whether s holds text, ignoring case and white space.
func holds(s, text string) bool {
	return text != "" && strings.Contains(strings.ToLower(OneLine(s)), strings.ToLower(text))
}

// TurnHolds reports whether t wrote one of notes (by its tool call) or
// holds the text of one, ignoring case and white space, anywhere: what
// [Memory.ForgetNote] replaces by [ForgetTurn].
func TurnHolds(t Turn, notes ...Note) bool {
	nj := make([]noteJSON, len(notes))
	for i, n := range notes {
		nj[i] = noteJSON{Text: n.Text, ToolUseID: n.ToolUseID}
	}
	return turnHolds(t, nj)
}

// turnHolds reports whether t wrote one of the notes (by its tool call)
// or holds the text of one in any string of its JSON.
func turnHolds(t Turn, notes []noteJSON) bool {
	ids := t.ToolUseIDs()
	for _, n := range notes {
		if n.ToolUseID != "" && slices.Contains(ids, n.ToolUseID) {
			return true
		}
	}
	data, err := t.MarshalJSON()
	if err != nil {
		return false
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	found := false
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			for _, n := range notes {
				if holds(x, n.Text) {
					found = true
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return found
}

// Forgotten is the text that takes the place of what a forgotten note's
// turn said.
const Forgotten = "[forgotten]"

// ForgetTurn returns t with its content gone and its shape kept, so that
// the history stays valid for the Messages API: every text (the person's
// message, the answers) becomes "[forgotten]", every client tool call
// keeps its id and name with the input {}, every tool result keeps its
// tool_use_id with the content "[forgotten]", and any other block
// (images, documents, server tool blocks, thinking) becomes a
// "[forgotten]" text. The turn's extra keys stay (they hold usage and the
// request window, not text); the messages' own extra keys go.
func ForgetTurn(t Turn) Turn {
	out := Turn{Extra: cloneExtra(t.Extra)}
	for _, m := range t.Messages {
		out.Messages = append(out.Messages, forgetMessage(m))
	}
	return out
}

func forgetMessage(m Message) Message {
	if m.IsString() {
		return Message{Role: m.Role, Content: quote(Forgotten)}
	}
	raws, err := rawBlocks(m.Content)
	if err != nil {
		return Message{Role: m.Role, Content: NewMessage(m.Role, TextBlock(Forgotten)).Content}
	}
	var blocks []json.RawMessage
	lastText := false
	for _, raw := range raws {
		b, err := ParseBlock(raw)
		switch {
		case err == nil && b.Type == "tool_use":
			blocks = append(blocks, json.RawMessage(`{"type":"tool_use","id":`+string(quote(b.ID))+`,"name":`+string(quote(b.Name))+`,"input":{}}`))
			lastText = false
		case err == nil && b.Type == "tool_result":
			r := `{"type":"tool_result","tool_use_id":` + string(quote(b.ToolUseID)) + `,"content":` + string(quote(Forgotten))
			if b.IsError {
				r += `,"is_error":true`
			}
			blocks = append(blocks, json.RawMessage(r+`}`))
			lastText = false
		default:
			if !lastText {
				blocks = append(blocks, TextBlock(Forgotten))
			}
			lastText = true
		}
	}
	if len(blocks) == 0 {
		blocks = append(blocks, TextBlock(Forgotten))
	}
	return NewMessage(m.Role, blocks...)
}

// eraseNotes turns every note phone wrote, in every family, into a
// tombstone, takes phone off the members that claim a record, and removes
// the notes' text from the memory shown to the family's sessions. It
// returns how many notes it erased.
func (m *Memory) eraseNotes(ctx context.Context, phone string) (int, error) {
	recs, err := m.store.List(ctx, Notes, "")
	if err != nil {
		return 0, err
	}
	total := 0
	for _, rec := range recs {
		var gone []noteJSON
		err := m.updateNotes(ctx, Family{ID: rec.Key}, func(f *notesFile) error {
			gone = gone[:0]
			for i, n := range f.Notes {
				if n.live() && n.Author == phone {
					gone = append(gone, n)
					f.Notes[i] = n.tombstone(goneErased)
				}
			}
			members := slices.DeleteFunc(slices.Clone(f.Members), func(p string) bool { return p == phone })
			if len(gone) == 0 && len(members) == len(f.Members) {
				return errUnchanged
			}
			f.Members = members
			return nil
		})
		if errors.Is(err, errUnchanged) {
			continue
		}
		if err != nil {
			return total, err
		}
		total += len(gone)
		if len(gone) == 0 {
			continue
		}
		// The family's other sessions may show the erased notes.
		convs, err := m.store.List(ctx, Conversations, "")
		if err != nil {
			return total, err
		}
		var phones []string
		for _, c := range convs {
			if c.Key != phone {
				phones = append(phones, c.Key)
			}
		}
		if err := m.scrubNotes(ctx, rec.Key, phones, gone, false); err != nil {
			return total, err
		}
	}
	return total, nil
}

// checkNotes returns an error unless rec is a family's notes as
// [Memory] writes them.
func checkNotes(rec Record) error {
	if CheckFamilyID(rec.Key) != nil {
		return fmt.Errorf("notes %q: not a family id", rec.Key)
	}
	f, err := decodeNotes(rec.Data)
	if err != nil {
		return fmt.Errorf("notes of %s: %w", rec.Key, err)
	}
	seen := map[int]bool{}
	family, private := 0, map[string]int{}
	for _, n := range f.Notes {
		switch {
		case n.ID < 1 || n.ID >= f.Next:
			return fmt.Errorf("notes of %s: id %d outside 1 to %d", rec.Key, n.ID, f.Next-1)
		case seen[n.ID]:
			return fmt.Errorf("notes of %s: id %d twice", rec.Key, n.ID)
		}
		seen[n.ID] = true
		if !n.live() {
			if n != n.tombstone(n.Gone) {
				return fmt.Errorf("notes of %s: #%d is gone but keeps content", rec.Key, n.ID)
			}
			continue
		}
		if _, err := CheckNoteText(n.Text); err != nil || OneLine(n.Text) != n.Text {
			return fmt.Errorf("notes of %s: #%d: text not as a note keeps it", rec.Key, n.ID)
		}
		if CheckPhone(n.Author) != nil {
			return fmt.Errorf("notes of %s: #%d: no author", rec.Key, n.ID)
		}
		switch n.Scope {
		case ScopeFamily:
			family++
		case ScopePrivate:
			private[n.Author]++
		default:
			return fmt.Errorf("notes of %s: #%d: scope %q", rec.Key, n.ID, n.Scope)
		}
	}
	if family > MaxFamilyNotes {
		return fmt.Errorf("notes of %s: %d family notes, the limit is %d", rec.Key, family, MaxFamilyNotes)
	}
	for p, n := range private {
		if n > MaxPrivateNotes {
			return fmt.Errorf("notes of %s: %d private notes of %s, the limit is %d", rec.Key, n, p, MaxPrivateNotes)
		}
	}
	return nil
}
