package cli

import (
	"fmt"
	"strings"
)

// Suggest returns the candidate closest to what was typed, when it is close
// enough to be a slip of the fingers (at most one edit per three letters,
// and at least one), or "". Typed is compared in lower case.
func Suggest(typed string, candidates []string) string {
	typed = strings.ToLower(typed)
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(typed, c)
		if bestDist < 0 || d < bestDist || d == bestDist && c < best {
			best, bestDist = c, d
		}
	}
	limit := max(1, len([]rune(typed))/3)
	if best == "" || bestDist > limit {
		return ""
	}
	return best
}

// DidYouMean returns ` (did you mean "X"?)` for Suggest's answer, or "".
func DidYouMean(typed string, candidates []string) string {
	if s := Suggest(typed, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment) between a and b in runes: insertions, deletions,
// substitutions and swaps of neighbours each count one, so "sevre" is one
// edit from "serve".
func editDistance(a, b string) int {
	r, s := []rune(a), []rune(b)
	// Three rows of the dynamic-programming table: the swap looks two back.
	prev2 := make([]int, len(s)+1)
	prev := make([]int, len(s)+1)
	cur := make([]int, len(s)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur[0] = i
		for j := 1; j <= len(s); j++ {
			cost := 1
			if r[i-1] == s[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && r[i-1] == s[j-2] && r[i-2] == s[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(s)]
}

// Plural writes n with the singular or plural noun: "1 turn", "2 turns".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
