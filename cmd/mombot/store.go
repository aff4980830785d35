package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/jsonfile"
	"github.com/mombot/mombot/conversation/storeurl"
	"github.com/mombot/mombot/internal/cli"
)

// memoryConfig is the conversation memory's configuration: where it is
// stored and its policy. Flags win over MOMBOT_* variables, which win over
// the defaults.
type memoryConfig struct {
	store    string
	timeout  time.Duration
	maxTurns int
	// usageRetention is conversation.Options.UsageRetention, from the
	// configuration file's retention.usage (0: the default).
	usageRetention time.Duration
	// summarize and summaryKeep are conversation.Options.Summarize and
	// SummaryKeep, from the configuration file's memory (nil: nobody
	// keeps a summary).
	summarize   func(phone string) bool
	summaryKeep time.Duration

	// startWithoutRedis and mustExist are how the command wants its store
	// opened: storeurl.Options.AllowUnreachable (serve) and MustExist
	// (commands that only look at or remove conversations).
	startWithoutRedis bool
	mustExist         bool
	// wrap, if set, wraps the store the memory works on (serve's
	// metrics); the store returned to the caller is the bare one.
	wrap func(conversation.Store) (conversation.Store, error)
	// readOnly is storeurl.Options.ReadOnly, for the commands that only
	// look: they create nothing and move nothing aside.
	readOnly bool
}

// register adds --store, --timeout and --max-turns to fs, with defaults
// from the environment. A malformed variable is a usage error.
func (c *memoryConfig) register(fs *flag.FlagSet, e *env) error {
	c.timeout = conversation.DefaultTimeout
	c.maxTurns = conversation.DefaultMaxTurns
	fs.StringVar(&c.store, "store", e.getenv("MOMBOT_STORE"), "where conversations are kept: a file path, file:PATH, sqlite:PATH, redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB (env MOMBOT_STORE; when empty, "+jsonfile.DefaultPath()+")")
	fs.Func("timeout", "inactivity after which a conversation expires, in seconds or as a duration like 30m (env MOMBOT_CONVERSATION_TIMEOUT; default 1800)", func(v string) (err error) {
		c.timeout, err = conversation.ParseTimeout(v)
		return err
	})
	fs.Func("max-turns", "number of most recent turns kept per person (env MOMBOT_MAX_TURNS; default 10)", func(v string) (err error) {
		c.maxTurns, err = conversation.ParseMaxTurns(v)
		return err
	})
	// The variables are read as their flags are, before the command line.
	for _, v := range []struct{ flag, env string }{{"timeout", "MOMBOT_CONVERSATION_TIMEOUT"}, {"max-turns", "MOMBOT_MAX_TURNS"}} {
		if s := e.getenv(v.env); s != "" {
			if err := fs.Set(v.flag, s); err != nil {
				return cli.Usagef("%s: %v", v.env, err)
			}
		}
	}
	return nil
}

// open opens the configured store and a memory over it. The caller closes
// the store. A file or database path that is a folder is a usage error
// before anything is opened, so that no lock file is left beside it.
func (c *memoryConfig) open(ctx context.Context, e *env) (*conversation.Memory, conversation.Store, error) {
	url := c.store
	if url == "" {
		url = jsonfile.DefaultPath() // so that an error names it
	}
	if spec, err := storeurl.Parse(url); err == nil && spec.Kind != storeurl.Redis {
		if fi, err := os.Stat(spec.Path); err == nil && fi.IsDir() {
			like := filepath.Join(spec.Path, "conversations.json")
			switch {
			case spec.Kind == storeurl.SQLite:
				like = "sqlite:" + filepath.Join(spec.Path, "mombot.db")
			case strings.HasPrefix(url, "file:"):
				like = "file:" + like
			}
			return nil, nil, cli.Usagef("store %s: %s is a folder; name a file in it, like %s", url, spec.Path, like)
		}
	}
	store, err := storeurl.Open(ctx, url, &storeurl.Options{Logger: e.log, MustExist: c.mustExist, ReadOnly: c.readOnly, AllowUnreachable: c.startWithoutRedis})
	if err != nil {
		return nil, nil, err
	}
	memStore := store
	if c.wrap != nil {
		if memStore, err = c.wrap(store); err != nil {
			store.Close()
			return nil, nil, err
		}
	}
	mem, err := conversation.New(memStore, &conversation.Options{Timeout: c.timeout, MaxTurns: c.maxTurns, UsageRetention: c.usageRetention,
		Summarize: c.summarize, SummaryKeep: c.summaryKeep})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return mem, store, nil
}
