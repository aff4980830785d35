package redis

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// encodeArray writes elems as a RESP array of bulk strings, as Redis
// answers LRANGE.
func encodeArray(elems [][]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(elems))
	for _, e := range elems {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(e), e)
	}
	return b.Bytes()
}

func TestSplitArray(t *testing.T) {
	elems := [][]byte{[]byte("2 1\n-\n"), []byte(`{"messages":[]}`), {}, []byte("a\r\nb")}
	got, err := splitArray(encodeArray(elems))
	if err != nil || !slices.EqualFunc(got, elems, bytes.Equal) {
		t.Fatalf("splitArray = %q, %v; want %q", got, err, elems)
	}
	// A RESP3 map (HGETALL): its keys and values, alternating.
	got, err = splitArray([]byte("%2\r\n$1\r\nh\r\n$2\r\nxy\r\n$2\r\nm1\r\n$0\r\n\r\n"))
	if want := []string{"h", "xy", "m1", ""}; err != nil || !slices.EqualFunc(got, want, func(a []byte, b string) bool { return string(a) == b }) {
		t.Fatalf("splitArray(map) = %q, %v; want %q", got, err, want)
	}
	// Each element's capacity ends at its length, so that appending to
	// one cannot overwrite the next.
	for i, e := range got {
		if cap(e) != len(e) {
			t.Errorf("element %d: cap %d, len %d", i, cap(e), len(e))
		}
	}
	for _, tt := range []struct {
		name, raw string
		reply     bool // a Redis error reply rather than a malformed one
	}{
		{"error reply", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", true},
		{"blob error", "!9\r\nERR oops!\r\n", true},
		{"not an array", "+OK\r\n", false},
		{"short", "*2\r\n$1\r\na\r\n", false},
		{"length past the end", "*1\r\n$9\r\nabc\r\n", false},
		{"no CRLF after a body", "*1\r\n$1\r\nabc\r\n", false},
		{"trailing bytes", "*0\r\nx", false},
		{"negative count", "*-1\r\n", false},
		{"short map", "%2\r\n$1\r\nh\r\n$1\r\nx\r\n", false},
		{"empty", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := splitArray([]byte(tt.raw))
			var re replyError
			if err == nil || errors.As(err, &re) != tt.reply {
				t.Fatalf("splitArray(%q) err = %v, want a reply error: %v", tt.raw, err, tt.reply)
			}
		})
	}
}

// FuzzSplitArray: splitArray never panics, and reads back every array of
// bulk strings as it was written.
func FuzzSplitArray(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nabc\r\n$0\r\n\r\n"), []byte("x"))
	f.Add([]byte("-ERR\r\n"), []byte{})
	f.Add([]byte("*1\r\n$-1\r\n"), []byte("2 1\n"))
	f.Fuzz(func(t *testing.T, raw, elem []byte) {
		splitArray(raw)
		elems := [][]byte{elem, raw}
		got, err := splitArray(encodeArray(elems))
		if err != nil || !slices.EqualFunc(got, elems, bytes.Equal) {
			t.Fatalf("splitArray(encodeArray(%q)) = %q, %v", elems, got, err)
		}
	})
}

// FuzzParseHead: parseHead and parseListHead never panic, and parseHead
// reads back what appendHead wrote.
func FuzzParseHead(f *testing.F) {
	f.Add([]byte("3 1771929300123456 2\n9f3a01c2d4e5f607:9f3a01c2 746f6f6c755f31\nm1:-\n"), int64(5), "1b2c3d4e 6869")
	f.Add([]byte("2 1771929300123456\n9f3a01c2 746f6f6c755f31\n-\n"), int64(-1), "-")
	f.Add([]byte("3 -1 0\n"), int64(-1), "-:x")
	f.Fuzz(func(t *testing.T, head []byte, micros int64, line string) {
		parseHead(head)
		parseListHead(head)
		if bytes.ContainsAny([]byte(line), "\n") {
			return
		}
		got, lines, ok := parseHead(appendHead(nil, micros, []string{"0123456789abcdef", "m2"}, []string{line, "-"}))
		want, _, _ := bytes.Cut([]byte(line), []byte(" "))
		if !ok || got != micros || len(lines) != 2 ||
			string(lines[0].field) != "0123456789abcdef" || !bytes.Equal(lines[0].sum, want) ||
			string(lines[1].field) != "m2" || string(lines[1].sum) != "-" {
			t.Fatalf("parseHead(appendHead(%d, %q)) = %d, %q, %v", micros, line, got, lines, ok)
		}
	})
}
