package transcription_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/transcription"
)

// voiceNote is the committed fixture: 7.213 s of OGG/Opus (see
// testdata/README.md at the module's root).
func voiceNote(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/voice-note.ogg")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// page returns one OGG page with a correct checksum.
func page(flags byte, granule int64, serial, seq uint32, body []byte) []byte {
	var segs []byte
	n := len(body)
	for n >= 255 {
		segs = append(segs, 255)
		n -= 255
	}
	segs = append(segs, byte(n))
	h := make([]byte, 27, 27+len(segs)+len(body))
	copy(h, "OggS")
	h[5] = flags
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], serial)
	binary.LittleEndian.PutUint32(h[18:], seq)
	h[26] = byte(len(segs))
	p := append(append(h, segs...), body...)
	binary.LittleEndian.PutUint32(p[22:], crc(p))
	return p
}

// crc is the OGG checksum, written out independently of the package's
// table: bit by bit, polynomial 0x04c11db7, CRC field read as zeros.
func crc(p []byte) uint32 {
	var c uint32
	for i, b := range p {
		if i >= 22 && i < 26 {
			b = 0
		}
		c ^= uint32(b) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04c11db7
			} else {
				c <<= 1
			}
		}
	}
	return c
}

func opusHead(preSkip uint16) []byte {
	h := []byte("OpusHead\x01\x01\x00\x00\x80\xbb\x00\x00\x00\x00\x00")
	binary.LittleEndian.PutUint16(h[10:], preSkip)
	return h
}

func vorbisHead(rate uint32) []byte {
	h := make([]byte, 30)
	copy(h, "\x01vorbis")
	h[11] = 1
	binary.LittleEndian.PutUint32(h[12:], rate)
	return h
}

// withLength returns the fixture with its last page's granule position
// set so that the note lasts d, and the page's checksum redone.
func withLength(t testing.TB, d time.Duration) []byte {
	t.Helper()
	b := bytes.Clone(voiceNote(t))
	last := bytes.LastIndex(b, []byte("OggS"))
	granule := uint64(312) + uint64(d/time.Microsecond)*48/1000 // the fixture's pre-skip is 312
	binary.LittleEndian.PutUint64(b[last+6:], granule)
	binary.LittleEndian.PutUint32(b[last+22:], crc(b[last:]))
	return b
}

func TestDurationOfTheFixture(t *testing.T) {
	got, err := transcription.Duration(voiceNote(t))
	if err != nil {
		t.Fatal(err)
	}
	// opusinfo says "Playback length: 0m:07.213s".
	if want := 7213 * time.Millisecond; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("Duration = %s, want %s (opusinfo's playback length)", got, want)
	}
	if got, err := transcription.Duration(withLength(t, 181*time.Second)); err != nil || got != 181*time.Second {
		t.Errorf("Duration of the fixture made 181 s long = %s, %v", got, err)
	}
}

func TestDuration(t *testing.T) {
	head := page(0x02, 0, 7, 0, opusHead(312))
	tags := page(0, 0, 7, 1, []byte("OpusTags\x00\x00\x00\x00\x00\x00\x00\x00"))
	audio := func(flags byte, granule int64, seq uint32) []byte {
		return page(flags, granule, 7, seq, bytes.Repeat([]byte{0xfc}, 300))
	}
	join := func(ps ...[]byte) []byte { return bytes.Join(ps, nil) }
	good := join(head, tags, audio(0, 48312, 2), audio(0x04, 96312, 3))
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 0xff

	tests := []struct {
		name string
		data []byte
		want time.Duration // when ok
		ok   bool
	}{
		{"two seconds of Opus after the pre-skip", good, 2 * time.Second, true},
		{"a page without a finished packet keeps the last granule", join(head, tags, audio(0, 48312, 2), audio(0x01, -1, 3)), time.Second, true},
		{"Vorbis at 44.1 kHz", join(page(0x02, 0, 9, 0, vorbisHead(44100)), page(0x04, 441000, 9, 1, []byte{1, 2, 3})), 10 * time.Second, true},
		{"a granule within the pre-skip is no audio", join(head, tags, audio(0x04, 100, 2)), 0, true},
		{"empty", nil, 0, false},
		{"not OGG (an MP3 frame)", []byte("\xff\xfb\x90\x64" + string(make([]byte, 400))), 0, false},
		{"headers only: no audio", join(head, page(0x04, -1, 7, 1, []byte("OpusTags"))), 0, true},
		{"no page ends a packet", join(page(0x02, -1, 7, 0, opusHead(312)), page(0x04, -1, 7, 1, []byte("OpusTags"))), 0, false},
		{"a damaged page (checksum)", badCRC, 0, false},
		{"truncated in the last page", good[:len(good)-10], 0, false},
		{"trailing garbage", join(good, []byte("junk")), 0, false},
		{"the first page does not begin a stream", join(page(0, 0, 7, 0, opusHead(312)), audio(0x04, 96312, 1)), 0, false},
		{"a second logical stream", join(head, tags, page(0x02, 0, 8, 0, opusHead(0)), audio(0x04, 96312, 2)), 0, false},
		{"a chained stream after the end", join(good, page(0x02, 0, 7, 0, opusHead(0)), audio(0x04, 96312, 1)), 0, false},
		{"neither Opus nor Vorbis (Speex)", join(page(0x02, 0, 7, 0, []byte("Speex   1.2rc1\x00\x00\x00\x00\x00\x00")), audio(0x04, 96312, 1)), 0, false},
		{"a truncated OpusHead", join(page(0x02, 0, 7, 0, []byte("OpusHead\x01")), audio(0x04, 96312, 1)), 0, false},
		{"a negative granule", join(head, tags, audio(0x04, -5, 2)), 0, false},
		{"a granule beyond any real length", join(head, tags, audio(0x04, 1<<62, 2)), 0, false},
		{"Vorbis at 0 Hz", join(page(0x02, 0, 9, 0, vorbisHead(0)), page(0x04, 441000, 9, 1, []byte{1})), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := transcription.Duration(tt.data)
			switch {
			case tt.ok && err != nil:
				t.Fatalf("Duration: %v", err)
			case tt.ok && got != tt.want:
				t.Errorf("Duration = %s, want %s", got, tt.want)
			case !tt.ok && err == nil:
				t.Errorf("Duration = %s, want an error", got)
			case !tt.ok && !errors.Is(err, apology.ErrAudioFormat):
				t.Errorf("Duration: %v, want an error wrapping apology.ErrAudioFormat", err)
			}
		})
	}
}

// FuzzDuration checks that no input makes Duration panic, and that what
// it accepts it measures consistently: a non-negative length, the same
// twice, and an error that wraps ErrAudioFormat otherwise.
func FuzzDuration(f *testing.F) {
	f.Add(voiceNote(f))
	f.Add(page(0x02, 0, 7, 0, opusHead(312)))
	f.Add(bytes.Join([][]byte{page(0x02, 0, 9, 0, vorbisHead(8000)), page(0x04, 8000, 9, 1, []byte{1})}, nil))
	f.Add([]byte("OggS"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := transcription.Duration(data)
		if err != nil {
			if !errors.Is(err, apology.ErrAudioFormat) {
				t.Fatalf("Duration: %v, which does not wrap ErrAudioFormat", err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("Duration = %s, negative", d)
		}
		if d2, err2 := transcription.Duration(data); d2 != d || err2 != nil {
			t.Fatalf("Duration twice: %s then %s, %v", d, d2, err2)
		}
	})
}
