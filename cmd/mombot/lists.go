package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/cli"
)

const listsUsage = `Usage: mombot lists [--json] [flags]

Shows the family's shared lists as the store keeps them, each item with
who added it, and the items removed in the last week that can still be put
back. It only reads. A lists.json file of an earlier release in the data
folder is imported into the store by the next serve, ask or chat.

Flags (anywhere on the line):`

func runLists(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlagSet("mombot lists", listsUsage)
	var cfg memoryConfig
	if err := cfg.register(fs, e); err != nil {
		return err
	}
	asJSON := fs.Bool("json", false, "print the lists as the store keeps them, one JSON object")
	pos, err := cli.ParseInterleaved(fs, e.stderr, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("lists takes no arguments, got %q (see mombot lists -h)", strings.Join(pos, " "))
	}
	if file := filepath.Join(storeurl.Dir(cfg.store), "lists.json"); fileExists(file) {
		fmt.Fprintf(e.stderr, "mombot: lists: %s is not imported yet; the next serve, ask or chat imports it\n", file)
	}
	cfg.readOnly = true
	mem, store, err := openForHistory(ctx, e, &cfg)
	var nf noStoreFileError
	if errors.As(err, &nf) && nf.defaulted {
		return writeLists(e.stdout, conversation.FamilyLists{Lists: map[string][]conversation.ListItem{}}, *asJSON)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	l, err := mem.FamilyLists(ctx)
	if err != nil {
		return fmt.Errorf("lists: %w", err)
	}
	// What can still be put back, by the lists' own rule.
	if l.Removed, err = lists.New(mem, nil).RemovedFrom(ctx, ""); err != nil {
		return fmt.Errorf("lists: %w", err)
	}
	slices.Reverse(l.Removed)
	return writeLists(e.stdout, l, *asJSON)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeLists prints l for a person, or as JSON.
func writeLists(w io.Writer, l conversation.FamilyLists, asJSON bool) error {
	if asJSON {
		data, err := json.Marshal(l)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	if len(l.Lists) == 0 {
		fmt.Fprintln(w, "no lists")
	}
	for i, name := range slices.Sorted(maps.Keys(l.Lists)) {
		if i > 0 {
			fmt.Fprintln(w)
		}
		items := l.Lists[name]
		fmt.Fprintf(w, "%s (%d)\n", name, len(items))
		for j, it := range items {
			fmt.Fprintf(w, "%3d. %s%s\n", j+1, it.Text, addedBy(it))
		}
	}
	if len(l.Removed) > 0 {
		fmt.Fprintf(w, "\nremoved lately, newest first (they can be put back for %d days):\n", lists.KeepRemoved/(24*time.Hour))
		for i := len(l.Removed) - 1; i >= 0; i-- {
			r := l.Removed[i]
			by := ""
			if r.RemovedBy != "" {
				by = " by " + r.RemovedBy
			}
			fmt.Fprintf(w, "  %s: %s (removed%s %s)\n", r.List, r.Text, by, r.RemovedAt.Local().Format("2 Jan 15:04"))
		}
	}
	return nil
}

func addedBy(it conversation.ListItem) string {
	if it.AddedBy == "" {
		return ""
	}
	return " (" + it.AddedBy + ")"
}
