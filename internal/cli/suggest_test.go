package cli

import "testing"

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"serve", "serve", 0}, {"sevre", "serve", 1}, {"serv", "serve", 1},
		{"servee", "serve", 1}, {"sarve", "serve", 1}, {"histroy", "history", 1},
		{"chat", "ask", 4}, {"", "ask", 3}, {"héllo", "hello", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (it is symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	cmds := []string{"ask", "chat", "help", "history", "serve"}
	tests := []struct{ typed, want string }{
		{"sevre", "serve"}, {"SERVE", "serve"}, {"histroy", "history"}, {"hist", ""},
		{"aks", "ask"}, {"cht", "chat"}, {"xyz", ""}, {"deploy", ""}, {"s", ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.typed, cmds); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
	if got, want := DidYouMean("sevre", cmds), ` (did you mean "serve"?)`; got != want {
		t.Errorf("DidYouMean(sevre) = %q, want %q", got, want)
	}
	if got := DidYouMean("xyz", cmds); got != "" {
		t.Errorf("DidYouMean(xyz) = %q, want nothing", got)
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 turns", 1: "1 turn", 2: "2 turns"} {
		if got := Plural(n, "turn", "turns"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
