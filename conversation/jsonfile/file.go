package jsonfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"syscall"
	"time"
)

// file is one kind's file as the store last read or wrote it.
type file struct {
	path string
	// fd is the version of the file recs hold, kept open so that its
	// inode number cannot be given to another file: while the path names
	// that inode, it names this version (mombot replaces files whole and
	// never writes one in place). nil when there was no file.
	fd     *os.File
	stamp  stamp
	recs   map[string]record // nil until read
	warned bool              // the size warning was logged
}

// record is one top-level member of a file: its value as it is written
// there, and the version of those bytes.
type record struct {
	data    []byte
	version int64
}

// stamp identifies one version of a file. The inode tells a file renamed
// into place from the one it replaced; size and times tell a write in place
// by a program that does not rename.
type stamp struct {
	exists       bool
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func stampOf(fi fs.FileInfo) stamp {
	st := stamp{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
		st.ctime = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
	}
	return st
}

// current reports whether recs hold what the file holds now: it is the
// version that was read or written.
func (f *file) current() bool {
	if f.recs == nil {
		return false
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) && !f.stamp.exists
	}
	return stampOf(fi) == f.stamp
}

// read reads the file. A missing file holds no records; one that does not
// parse is an error wrapping ErrCorrupt.
func (f *file) read() error {
	fd, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.empty()
		return nil
	}
	if err != nil {
		f.forget()
		return err
	}
	fi, err := fd.Stat()
	var data []byte
	if err == nil {
		data, err = io.ReadAll(fd)
	}
	var recs map[string]record
	if err == nil {
		if recs, err = parse(data); err != nil {
			err = fmt.Errorf("%s: %w: %v", f.path, ErrCorrupt, err)
		}
	}
	if err != nil {
		fd.Close()
		f.forget()
		return err
	}
	f.set(fd, stampOf(fi), recs)
	return nil
}

// reopen takes the file just written, under the lock file, as the version
// recs hold. If that fails, the file is read again next time.
func (f *file) reopen() {
	fd, err := os.Open(f.path)
	if err != nil {
		f.forget()
		return
	}
	if fi, err := fd.Stat(); err == nil {
		f.set(fd, stampOf(fi), f.recs)
		return
	}
	fd.Close()
	f.forget()
}

func (f *file) set(fd *os.File, st stamp, recs map[string]record) {
	if f.fd != nil && f.fd != fd {
		f.fd.Close()
	}
	f.fd, f.stamp, f.recs = fd, st, recs
}

// empty makes f a file that does not exist.
func (f *file) empty() { f.set(nil, stamp{}, map[string]record{}) }

// forget makes the next call read the file again.
func (f *file) forget() { f.set(nil, stamp{}, nil) }

func (f *file) close() error {
	if f.fd == nil {
		return nil
	}
	err := f.fd.Close()
	f.fd, f.recs = nil, nil
	return err
}

// parse reads a file: a JSON object whose members are the records. An
// empty file, which mombot never writes, does not parse.
func parse(data []byte) (map[string]record, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, err
	}
	if members == nil {
		return nil, errors.New("the file is not a JSON object")
	}
	recs := make(map[string]record, len(members))
	for k, v := range members {
		recs[k] = record{data: v, version: versionOf(v)}
	}
	return recs, nil
}

// render writes the file of recs to w: a JSON object with a member a line,
// sorted by key, each value as it was stored.
func render(w io.Writer, recs map[string]record) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(recs)) {
		if i > 0 {
			bw.WriteByte(',')
		}
		q, _ := json.Marshal(k) // a string always encodes
		bw.WriteString("\n  ")
		bw.Write(q)
		bw.WriteString(": ")
		bw.Write(recs[k].data)
	}
	if len(recs) > 0 {
		bw.WriteByte('\n')
	}
	bw.WriteString("}\n")
	return bw.Flush() // the first error sticks in bw
}

// versionOf returns the version of a record holding data: its FNV-64a hash,
// in 63 bits and never 0.
func versionOf(data []byte) int64 {
	h := fnv.New64a()
	h.Write(data)
	return max(int64(h.Sum64()>>1), 1)
}

// moveAside renames the file at path to path + ".corrupt-<time>", or that
// name with "-2", "-3"... if an earlier corrupt file took it, and returns
// the new name. The lock file is held.
func moveAside(path string) (string, error) {
	base := path + ".corrupt-" + time.Now().Format("20060102T150405.000000")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
	return aside, os.Rename(path, aside)
}
