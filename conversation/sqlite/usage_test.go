package sqlite_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/sqlite"
)

// usageChildEnv, when set, makes TestUsageMultiProcess a child adding
// usage: its value is "PATH|PHONE,PHONE".
const usageChildEnv = "MOMBOT_SQLITE_TEST_USAGE_CHILD"

const usageAdds = 40

// TestUsageMultiProcess has two processes add usage to one database at once,
// to a phone each and to a shared one: no addition is lost.
func TestUsageMultiProcess(t *testing.T) {
	at := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	one := conversation.Usage{Messages: 1, Calls: 2, InputTokens: 3, CacheWrite5mTokens: 4, CacheWrite1hTokens: 5, CacheReadTokens: 6, OutputTokens: 7}
	if v := os.Getenv(usageChildEnv); v != "" {
		path, phones, _ := strings.Cut(v, "|")
		s, err := sqlite.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for range usageAdds {
			for _, phone := range strings.Split(phones, ",") {
				if err := s.AddUsage(context.Background(), phone, at, one); err != nil {
					t.Fatal(err)
				}
			}
		}
		return
	}
	path := filepath.Join(t.TempDir(), "mombot.db")
	s, err := sqlite.Open(path, nil) // the schema, before the children race
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var cmds []*exec.Cmd
	for _, phones := range []string{"+shared,+alice", "+shared,+bob"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUsageMultiProcess$")
		cmd.Env = append(os.Environ(), usageChildEnv+"="+path+"|"+phones)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	got, err := s.UsageSince(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var per conversation.Usage
	for range usageAdds {
		per = per.Add(one)
	}
	want := map[string]conversation.Usage{"+alice": per, "+bob": per, "+shared": per.Add(per)}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for _, d := range got {
		if d.Usage != want[d.Phone] {
			t.Errorf("%s: %+v, want %+v: an addition was lost", d.Phone, d.Usage, want[d.Phone])
		}
	}
}
