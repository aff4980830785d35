package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// counter is the content of a sibling file made for these tests:
// {"n": 3}.
type counter struct{ n int }

func parseCounter(data []byte) (*counter, error) {
	var v struct{ N *int }
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v.N == nil {
		return nil, errors.New("no n")
	}
	return &counter{n: *v.N}, nil
}

func (c *counter) render() ([]byte, error) {
	if c.n < 0 {
		return nil, errors.New("negative")
	}
	return fmt.Appendf(nil, "{\"n\": %d}\n", c.n), nil
}

// newCounter returns a sibling file counter.json in a folder of its own,
// and the buffer its log goes to.
func newCounter(t *testing.T, readOnly bool) (*sibling[*counter], *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	f := &sibling[*counter]{
		path: filepath.Join(t.TempDir(), "counter.json"), what: "the counter", name: "the counter file",
		anew: "the counter file does not parse; moved aside", readOnly: readOnly,
		log:   slog.New(slog.NewTextHandler(&logs, nil)),
		empty: func() *counter { return &counter{} }, parse: parseCounter, render: (*counter).render,
	}
	t.Cleanup(func() { f.close() })
	return f, &logs
}

// add adds d to the counter, writing the file.
func add(f *sibling[*counter], d int) error {
	return f.change(func(c *counter) (bool, error) {
		c.n += d
		return true, nil
	})
}

// value returns the counter as view sees it.
func value(f *sibling[*counter]) (int, error) {
	n := 0
	err := f.view(func(c *counter) error {
		n = c.n
		return nil
	})
	return n, err
}

// files returns the names in f's folder, sorted.
func files(t *testing.T, f *sibling[*counter]) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(f.path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A missing file is an empty content, and reading it creates nothing; the
// first change creates the file, mode 0600, and the lock file.
func TestSiblingMissingFile(t *testing.T) {
	f, _ := newCounter(t, false)
	if n, err := value(f); err != nil || n != 0 {
		t.Fatalf("view of a missing file = %d, %v; want 0, nil", n, err)
	}
	if got := files(t, f); len(got) != 0 {
		t.Fatalf("a read created %v", got)
	}
	if err := add(f, 2); err != nil {
		t.Fatal(err)
	}
	if got, want := files(t, f), []string{"counter.json", "counter.json.lock"}; !slices.Equal(got, want) {
		t.Errorf("files after a change: %v, want %v", got, want)
	}
	if fi, err := os.Stat(f.path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode: %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if data, _ := os.ReadFile(f.path); string(data) != "{\"n\": 2}\n" {
		t.Errorf("file holds %q", data)
	}
}

// A file that does not parse, a 0-byte one among them, is an error naming
// it when read; the next change moves it aside with its bytes, logs an
// error, and starts from an empty content; it is never overwritten.
func TestSiblingCorruptFile(t *testing.T) {
	for _, bad := range []string{"", "  \n", `{"n": "three"}`, `{"m": 1}`, `[1`} {
		f, logs := newCounter(t, false)
		write(t, f.path, bad)
		_, err := value(f)
		var perr *parseError
		if !errors.As(err, &perr) || !strings.HasPrefix(err.Error(), "the counter file does not parse: ") {
			t.Errorf("view of %q: %v, want a parseError naming the file", bad, err)
		}
		if data, _ := os.ReadFile(f.path); string(data) != bad {
			t.Errorf("a read changed the file %q to %q", bad, data)
		}
		if err := add(f, 5); err != nil {
			t.Fatalf("change over %q: %v", bad, err)
		}
		asides, _ := filepath.Glob(f.path + ".corrupt-*")
		if len(asides) != 1 {
			t.Fatalf("%q: moved aside %v, want one file", bad, asides)
		}
		if kept, _ := os.ReadFile(asides[0]); string(kept) != bad {
			t.Errorf("the file moved aside holds %q, want %q", kept, bad)
		}
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "moved aside") {
			t.Errorf("%q: log does not say it was moved aside:\n%s", bad, logs)
		}
		if n, err := value(f); err != nil || n != 5 {
			t.Errorf("%q: after starting anew = %d, %v; want 5", bad, n, err)
		}
	}
}

// A change that finds a corrupt file and then writes nothing leaves the
// file moved aside and the content empty, as if the file were missing.
func TestSiblingCorruptFileNoWrite(t *testing.T) {
	f, _ := newCounter(t, false)
	write(t, f.path, "{")
	err := f.change(func(c *counter) (bool, error) { return false, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the corrupt file is still in place: %v", err)
	}
	if n, err := value(f); err != nil || n != 0 {
		t.Errorf("after = %d, %v; want 0", n, err)
	}
}

// A file that cannot be read (here a folder) is an error, not a corrupt
// file: it is never moved aside.
func TestSiblingUnreadableStays(t *testing.T) {
	f, _ := newCounter(t, false)
	if err := os.Mkdir(f.path, 0o700); err != nil {
		t.Fatal(err)
	}
	var perr *parseError
	if _, err := value(f); err == nil || errors.As(err, &perr) {
		t.Errorf("view of a folder: %v, want an error that is not a parseError", err)
	}
	if err := add(f, 1); err == nil {
		t.Errorf("change over a folder: no error")
	}
	if fi, err := os.Stat(f.path); err != nil || !fi.IsDir() {
		t.Errorf("the folder was moved: %v", err)
	}
}

// The first change removes the temporary files a killed writer left, under
// the lock; a read leaves them alone.
func TestSiblingLeftoverTemps(t *testing.T) {
	f, logs := newCounter(t, false)
	dir := filepath.Dir(f.path)
	temps := []string{filepath.Join(dir, ".counter.json.tmp-1"), filepath.Join(dir, ".counter.json.tmp-22")}
	other := filepath.Join(dir, ".other.json.tmp-1")
	for _, p := range append(temps, other) {
		write(t, p, "{")
	}
	if _, err := value(f); err != nil {
		t.Fatal(err)
	}
	for _, p := range temps {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a read removed %s: %v", filepath.Base(p), err)
		}
	}
	if err := add(f, 1); err != nil {
		t.Fatal(err)
	}
	for _, p := range temps {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the first change: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file's temporary file was removed: %v", err)
	}
	if logs.Len() != 0 {
		t.Errorf("removing temporary files logged:\n%s", logs)
	}
}

// A read-only sibling reads, but its changes return ErrReadOnly and leave
// the folder as it was: no file, no lock file, a corrupt file not moved,
// temporary files not removed.
func TestSiblingReadOnly(t *testing.T) {
	for _, content := range []string{"", `{"n": 4}`, "{"} {
		f, _ := newCounter(t, true)
		temp := filepath.Join(filepath.Dir(f.path), ".counter.json.tmp-1")
		write(t, temp, "{")
		if content != "" {
			write(t, f.path, content)
		}
		before := files(t, f)
		n, err := value(f)
		if content == `{"n": 4}` && (err != nil || n != 4) {
			t.Errorf("view = %d, %v; want 4", n, err)
		}
		if err := add(f, 1); !errors.Is(err, ErrReadOnly) {
			t.Errorf("change of a read-only sibling (file %q): %v, want ErrReadOnly", content, err)
		}
		if after := files(t, f); !slices.Equal(before, after) {
			t.Errorf("file %q: the folder holds %v, was %v", content, after, before)
		}
		if content != "" {
			if data, _ := os.ReadFile(f.path); string(data) != content {
				t.Errorf("the file holds %q, want %q", data, content)
			}
		}
	}
}

// A change whose function fails, or whose content does not render, writes
// nothing, and memory does not keep what it changed in place: the next
// read gives what the file holds.
func TestSiblingFailedChangeForgotten(t *testing.T) {
	f, _ := newCounter(t, false)
	if err := add(f, 3); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := f.change(func(c *counter) (bool, error) {
		c.n = 100
		return true, boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("change = %v, want boom", err)
	}
	if n, err := value(f); err != nil || n != 3 {
		t.Errorf("after a failed change = %d, %v; want 3", n, err)
	}
	if err := add(f, -10); err == nil {
		t.Errorf("change that does not render: no error")
	}
	if n, err := value(f); err != nil || n != 3 {
		t.Errorf("after a change that did not render = %d, %v; want 3", n, err)
	}
	if data, _ := os.ReadFile(f.path); string(data) != "{\"n\": 3}\n" {
		t.Errorf("file holds %q", data)
	}
}

// A file another process replaced is read again; one it did not is not.
func TestSiblingReadsAgainWhenReplaced(t *testing.T) {
	f, _ := newCounter(t, false)
	if err := add(f, 1); err != nil {
		t.Fatal(err)
	}
	other := &sibling[*counter]{path: f.path, what: f.what, name: f.name, anew: f.anew, log: f.log,
		empty: f.empty, parse: f.parse, render: f.render}
	defer other.close()
	if err := add(other, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := value(f); err != nil || n != 11 {
		t.Errorf("after another writer = %d, %v; want 11", n, err)
	}
	if err := add(f, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := value(other); err != nil || n != 12 {
		t.Errorf("the other sees %d, %v; want 12", n, err)
	}
}

// A closed sibling refuses reads and changes.
func TestSiblingClosed(t *testing.T) {
	f, _ := newCounter(t, false)
	if err := add(f, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := value(f); !errors.Is(err, ErrClosed) {
		t.Errorf("view after close: %v, want ErrClosed", err)
	}
	if err := add(f, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("change after close: %v, want ErrClosed", err)
	}
}
