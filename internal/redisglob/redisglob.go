// Package redisglob writes the patterns of Redis's SCAN MATCH (and KEYS),
// whose glob gives *, ?, [ ], ^ and - a meaning and takes a backslash as
// an escape (https://redis.io/docs/latest/commands/keys/).
package redisglob

import "strings"

// Prefix returns the pattern that matches every key starting with prefix,
// taken literally: each character the glob gives a meaning is escaped.
func Prefix(prefix string) string {
	var b strings.Builder
	b.Grow(len(prefix) + 8)
	for _, r := range prefix {
		switch r {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('*')
	return b.String()
}
