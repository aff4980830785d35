package whatsapp_test

import (
	"strings"
	"testing"
	"time"
)

// TestMaxAgeDefault pins the default of Config.MaxAge, a day, from both
// sides: with MaxAge unset, a message 23 hours old is answered and one 25
// hours old (a backlog redelivered after downtime) is logged and skipped.
func TestMaxAgeDefault(t *testing.T) {
	tests := []struct {
		age      time.Duration
		answered bool
	}{
		{23 * time.Hour, true},
		{25 * time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.age.String(), func(t *testing.T) {
			h := newHarness(t, func(c *setup) {
				c.MaxAge = 0
				c.Now = func() time.Time { return time.Unix(sampleUnix, 0).Add(tt.age) }
			})
			h.postFile("text.json")
			h.shutdown()
			sent := h.bodies()
			if tt.answered && (len(sent) != 1 || sent[0] != "echo: Does it come in another color?") {
				t.Errorf("a message %v old: sent %q, want it answered", tt.age, sent)
			}
			if !tt.answered && len(sent) != 0 {
				t.Errorf("a message %v old was answered: %q", tt.age, sent)
			}
			if skipped := strings.Contains(h.logs.String(), "too old"); skipped == tt.answered {
				t.Errorf("a message %v old: logged as too old = %v", tt.age, skipped)
			}
		})
	}
}
