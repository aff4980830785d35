package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mombot/mombot/config"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/internal/cli"
	phonepkg "github.com/mombot/mombot/phone"
)

const memoryUsage = `Usage:
  mombot memory list [--json] PHONE      the long-term notes PHONE sees: the family's and their own private ones
  mombot memory forget PHONE ID          forget note ID as PHONE would: its text is removed from every store

PHONE is a family member of the configuration file (--config), in any form:
+1 (415) 555-1234, 14155551234. list --json prints a JSON array, [] when
there are none, of {"id", "scope", "text", "author", "created"}, with
"replaces" for a correction. See docs/memory.md, "Long-term notes".

Flags (anywhere on the line):`

func runMemory(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot memory", memoryUsage)
	var cfg memoryConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	configPath := fs.String("config", e.getenv("MOMBOT_CONFIG"), "configuration file: the family and its family_id (env MOMBOT_CONFIG; default mombot.json if it exists)")
	asJSON := fs.Bool("json", false, "list: print a JSON array")
	pos, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return cli.Usagef("memory: which sub-command? list or forget (see mombot memory -h)")
	}
	sub, rest := pos[0], pos[1:]
	want := map[string]int{"list": 1, "forget": 2}
	n, ok := want[sub]
	switch {
	case !ok:
		return cli.Usagef("memory: unknown sub-command %q%s; use list or forget", sub, cli.DidYouMean(sub, []string{"list", "forget"}))
	case len(rest) != n && sub == "list":
		return cli.Usagef("memory list: give exactly one phone number, like +14155551234")
	case len(rest) != n:
		return cli.Usagef("memory forget: give a phone number and a note's number, like +14155551234 12")
	}
	fc, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	fam, _ := fc.NotesFamily() // with notes off, what is stored can still be seen and forgotten
	who, err := memberPhone(fc, rest[0])
	if err != nil {
		return err
	}
	id := 0
	if sub == "forget" {
		if id, err = strconv.Atoi(strings.TrimPrefix(rest[1], "#")); err != nil || id < 1 {
			return cli.Usagef("memory forget: %q is not a note's number; give it as shown by mombot memory list, like 12", rest[1])
		}
	}
	cfg.readOnly = sub == "list"
	mem, store, err := openForHistory(ctx, e, &cfg)
	var nf noStoreFileError
	if errors.As(err, &nf) && sub == "list" {
		return memoryList(e.stdout, nil, *asJSON)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	if sub == "list" {
		notes, err := mem.Notes(ctx, fam, who)
		if err != nil {
			return fmt.Errorf("memory list: %w", err)
		}
		return memoryList(e.stdout, notes, *asJSON)
	}
	note, err := mem.ForgetNote(ctx, fam, who, id)
	switch {
	case errors.Is(err, conversation.ErrNoNote):
		return fmt.Errorf("memory forget: no note #%d that %s sees (see mombot memory list %s)", id, fc.Family[who].Name, rest[0])
	case err != nil && note.ID != 0:
		return fmt.Errorf("memory forget: #%d is forgotten, but removing its text everywhere failed (run it again once the store is reachable): %w", id, err)
	case err != nil:
		return fmt.Errorf("memory forget: %w", err)
	}
	fmt.Fprintf(e.stdout, "forgot #%d (%s, by %s): its text is gone from the notes, the conversations and the recent messages\n", note.ID, note.Scope, note.AuthorName)
	return nil
}

// memberPhone returns number as the family's member it is, in E.164, or a
// usage error.
func memberPhone(fc *config.File, number string) (string, error) {
	norm, err := phonepkg.Normalize(strings.TrimSpace(number))
	if err != nil {
		return "", cli.Usagef("memory: %q: %s; write numbers in international form, like +14155551234", number, strings.TrimPrefix(err.Error(), "phone: "))
	}
	if _, ok := fc.Family[norm]; !ok {
		where := "the configuration file"
		if fc.Path() != "" {
			where = fc.Path()
		}
		return "", cli.Usagef("memory: %s is not in the family of %s; only the family's members have notes", number, where)
	}
	return norm, nil
}

// noteJSON is a note as memory list --json prints it.
type noteJSON struct {
	ID       int    `json:"id"`
	Scope    string `json:"scope"`
	Text     string `json:"text"`
	Author   string `json:"author"`
	Created  string `json:"created"`
	Replaces int    `json:"replaces,omitempty"`
}

func memoryList(w io.Writer, notes []conversation.Note, asJSON bool) error {
	if asJSON {
		out := make([]noteJSON, 0, len(notes))
		for _, n := range notes {
			out = append(out, noteJSON{ID: n.ID, Scope: n.Scope, Text: n.Text, Author: n.AuthorName,
				Created: n.Created.UTC().Format(time.RFC3339), Replaces: n.Replaces})
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	if len(notes) == 0 {
		fmt.Fprintln(w, "no notes")
		return nil
	}
	for _, n := range notes {
		fmt.Fprintf(w, "#%-4d %-7s %-12s %s  %s\n", n.ID, n.Scope, n.AuthorName, n.Created.UTC().Format(time.RFC3339), n.Text)
	}
	return nil
}
