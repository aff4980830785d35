package assistant

import (
	"testing"
	"time"
)

// TestCutHeader checks that CutHeader reads back what userMessage writes,
// and leaves other texts whole.
func TestCutHeader(t *testing.T) {
	at := time.Date(2026, 2, 24, 10, 35, 0, 0, time.UTC)
	sent, _ := userMessage(Inbound{Text: "hi [there]: you"}, "", docNone, said{body: "hi [there]: you"}, Person{Name: "Erin", Location: time.UTC}, at)
	tests := []struct {
		name, text             string
		wantAt, wantFrom, want string
		wantOK                 bool
	}{
		{"as stored", sent.Text(), "Tue 24 Feb 2026 10:35 UTC", "Erin", "hi [there]: you", true},
		{"no header", "hello", "", "", "hello", false},
		{"a bracket but no sender", "[note] hello", "", "", "[note] hello", false},
		{"no colon", "[Tue] [From Erin] hello", "", "", "[Tue] [From Erin] hello", false},
		{"empty words", "[Tue] [From Erin]:", "Tue", "Erin", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, from, words, ok := CutHeader(tt.text)
			if at != tt.wantAt || from != tt.wantFrom || words != tt.want || ok != tt.wantOK {
				t.Errorf("CutHeader(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.text, at, from, words, ok, tt.wantAt, tt.wantFrom, tt.want, tt.wantOK)
			}
		})
	}
}
