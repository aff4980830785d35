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

// crc is the OGG checksum, written out independently of the package's:
// polynomial 0x04c11db7, most significant bit first, the CRC field read
// as zeros; crcTable holds the bit-by-bit result for each byte.
func crc(p []byte) uint32 {
	var c uint32
	for i, b := range p {
		if i >= 22 && i < 26 {
			b = 0
		}
		c = c<<8 ^ crcTable[byte(c>>24)^b]
	}
	return c
}

var crcTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04c11db7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

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
	h[28], h[29] = 0xb8, 1 // blocks of 256 and 2,048 samples; framing
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

// fixturePages returns the fixture's pages: the two header pages, then
// eight pages of audio (50 packets of 20 ms each, 11 in the last).
func fixturePages(t testing.TB) [][]byte {
	t.Helper()
	b := voiceNote(t)
	var pages [][]byte
	for len(b) > 0 {
		n := 27 + int(b[26])
		for _, l := range b[27:n] {
			n += int(l)
		}
		pages, b = append(pages, b[:n]), b[n:]
	}
	return pages
}

// repeated returns the fixture with its audio pages repeated copies times
// (copies x 7.2 s of audio), every audio page's granule position set by
// granule(i) for the i-th audio page of n, and the pages renumbered and
// their checksums redone.
func repeated(t testing.TB, copies int, granule func(i, n int) int64) []byte {
	t.Helper()
	pages := fixturePages(t)
	audio := pages[2:]
	n := copies * len(audio)
	out := bytes.Join(pages[:2], nil)
	for i := range n {
		p := bytes.Clone(audio[i%len(audio)])
		p[5] &^= 0x04
		if i == n-1 {
			p[5] |= 0x04
		}
		binary.LittleEndian.PutUint64(p[6:], uint64(granule(i, n)))
		binary.LittleEndian.PutUint32(p[18:], uint32(2+i))
		binary.LittleEndian.PutUint32(p[22:], crc(p))
		out = append(out, p...)
	}
	return out
}

// oneSecond declares every audio page to end at 1 s: positions that never
// go back, but say nothing of the audio after the first second.
func oneSecond(i, n int) int64 { return 312 + 48000 }

// TestDurationReadsTheAudio replays files whose granule positions lie
// about the audio they hold: the length is the audio's.
func TestDurationReadsTheAudio(t *testing.T) {
	// The fixture's packets play 346,560 samples, 312 of them pre-skip.
	samples := func(n int) time.Duration { return time.Duration(n) * time.Second / 48000 }
	tests := []struct {
		name string
		data []byte
		want time.Duration
	}{
		{"30 copies of the audio declared as 1 s: the packets' length", repeated(t, 30, oneSecond), samples(30*346560 - 312)},
		{"positions that declare 2 hours over 7 s of audio: the positions' length", withLength(t, 2*time.Hour), 2 * time.Hour},
		{"positions 8 samples short of the packets (end trimming): the positions' length", voiceNote(t), samples(346552 - 312)},
		{"Vorbis: 1,000 packets of at least 128 samples declared as 1 s: the least they play", vorbisPackets(1000, 48000), samples(999 * 128)},
		{"Vorbis: 100 packets declared as 1 s: the positions' length", vorbisPackets(100, 48000), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := transcription.Duration(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Duration = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDurationRefusesMalformedAudio: a file that breaks the rules of the
// container or of Opus packets has no length to trust.
func TestDurationRefusesMalformedAudio(t *testing.T) {
	head := page(0x02, 0, 7, 0, opusHead(312))
	tags := page(0, 0, 7, 1, []byte("OpusTags\x00\x00\x00\x00\x00\x00\x00\x00"))
	join := func(ps ...[]byte) []byte { return bytes.Join(ps, nil) }
	packet := func(b ...byte) []byte { return page(0x04, 48312, 7, 2, b) }
	// unfinished is a page of one segment of 255 bytes: its packet goes
	// on into a page that never comes.
	unfinished := func(flags byte, granule int64, seq uint32, body []byte) []byte {
		p := page(flags, granule, 7, seq, body[:255])
		p = append(p[:27], append([]byte{255}, p[29:]...)...)
		p[26] = 1
		binary.LittleEndian.PutUint32(p[22:], crc(p))
		return p
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"a granule position that goes back", repeated(t, 2, func(i, n int) int64 { return int64(n-i) * 48000 })},
		{"an empty Opus packet", join(head, tags, page(0x04, 48312, 7, 2, nil))},
		{"a code 3 packet without its frame count", join(head, tags, packet(0xfb))},
		{"a code 3 packet of no frames", join(head, tags, packet(0xfb, 0x00))},
		{"a code 3 packet of 7 frames of 20 ms (140 ms)", join(head, tags, packet(0xfb, 0x07, 0))},
		{"a second packet that is not OpusTags", join(head, page(0, 0, 7, 1, []byte("NotTags!")), packet(0xfc, 1))},
		{"a stream that ends inside a packet", join(head, tags, unfinished(0x04, 48312, 2, bytes.Repeat([]byte{0xfc}, 255)))},
		{"a first page whose packet never ends", unfinished(0x02, 0, 0, append(opusHead(312), make([]byte, 255)...))},
		{"Vorbis block sizes out of range", join(page(0x02, 0, 9, 0, vorbisHeadBlocks(44100, 0x54)), page(0x04, 44100, 9, 1, []byte{1}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := transcription.Duration(tt.data); !errors.Is(err, apology.ErrAudioFormat) {
				t.Errorf("Duration = %s, %v; want an error wrapping ErrAudioFormat", got, err)
			}
		})
	}
}

func TestOpusPacketDurations(t *testing.T) {
	head := page(0x02, 0, 7, 0, opusHead(0))
	tags := page(0, 0, 7, 1, []byte("OpusTags\x00\x00\x00\x00\x00\x00\x00\x00"))
	tests := []struct {
		name   string
		packet []byte
		want   time.Duration
	}{
		{"SILK 10 ms, one frame", []byte{0 << 3, 1}, 10 * time.Millisecond},
		{"SILK 60 ms, two frames", []byte{3<<3 | 1, 1}, 120 * time.Millisecond},
		{"hybrid 20 ms, two frames of different sizes", []byte{13<<3 | 2, 1, 1}, 40 * time.Millisecond},
		{"CELT 2.5 ms, code 3 of 48 frames", []byte{16<<3 | 3, 48}, 120 * time.Millisecond},
		{"CELT 20 ms, code 3 of 6 frames with padding and VBR flags", []byte{31<<3 | 3, 0xc6, 0}, 120 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 50 copies of the packet, positions at 0: the audio's length
			// is what the packets play.
			var pkts []byte
			var lacing []byte
			for range 50 {
				pkts = append(pkts, tt.packet...)
				lacing = append(lacing, byte(len(tt.packet)))
			}
			p := make([]byte, 27, 27+len(lacing)+len(pkts))
			copy(p, "OggS")
			p[5] = 0x04
			binary.LittleEndian.PutUint32(p[14:], 7)
			binary.LittleEndian.PutUint32(p[18:], 2)
			p[26] = byte(len(lacing))
			p = append(append(p, lacing...), pkts...)
			binary.LittleEndian.PutUint32(p[22:], crc(p))
			got, err := transcription.Duration(bytes.Join([][]byte{head, tags, p}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if want := 50 * tt.want; got != want {
				t.Errorf("Duration = %s, want %s", got, want)
			}
		})
	}
}

func vorbisHeadBlocks(rate uint32, blocks byte) []byte {
	h := vorbisHead(rate)
	h[28] = blocks
	return h
}

// packetPages returns the pages of one packet of any length, from page
// sequence seq: at most 255 lacing values a page, the pages after the
// first marked as continuing the packet, and the last one's granule
// position granule.
func packetPages(packet []byte, serial, seq uint32, granule int64) [][]byte {
	lacing := bytes.Repeat([]byte{255}, len(packet)/255)
	lacing = append(lacing, byte(len(packet)%255))
	var pages [][]byte
	for i := 0; i < len(lacing); i += 255 {
		segs := lacing[i:min(i+255, len(lacing))]
		n := 0
		for _, l := range segs {
			n += int(l)
		}
		h := make([]byte, 27)
		copy(h, "OggS")
		if i > 0 {
			h[5] = 0x01
		}
		g := int64(-1)
		if i+len(segs) == len(lacing) {
			g = granule
		}
		binary.LittleEndian.PutUint64(h[6:], uint64(g))
		binary.LittleEndian.PutUint32(h[14:], serial)
		binary.LittleEndian.PutUint32(h[18:], seq)
		h[26] = byte(len(segs))
		p := append(append(h, segs...), packet[:n]...)
		binary.LittleEndian.PutUint32(p[22:], crc(p))
		pages, packet, seq = append(pages, p), packet[n:], seq+1
	}
	return pages
}

// withTags returns the fixture with extra bytes at the end of its
// OpusTags header (as a picture in its tags would be), the pages after
// it renumbered.
func withTags(t testing.TB, extra int) []byte {
	t.Helper()
	pages := fixturePages(t)
	tags := pages[1][27+int(pages[1][26]):]
	out := bytes.Clone(pages[0])
	serial := binary.LittleEndian.Uint32(pages[0][14:])
	tagPages := packetPages(append(bytes.Clone(tags), make([]byte, extra)...), serial, 1, 0)
	for _, p := range tagPages {
		out = append(out, p...)
	}
	for i, p := range pages[2:] {
		p = bytes.Clone(p)
		binary.LittleEndian.PutUint32(p[18:], uint32(1+len(tagPages)+i))
		binary.LittleEndian.PutUint32(p[22:], crc(p))
		out = append(out, p...)
	}
	return out
}

// vorbisPackets returns a Vorbis stream at 48 kHz with blocks of 256 and
// 2,048 samples: its three headers and n audio packets, 250 a page, every
// page's granule position granule.
func vorbisPackets(n int, granule int64) []byte {
	pages := [][]byte{
		page(0x02, 0, 9, 0, vorbisHead(48000)),
		page(0, 0, 9, 1, []byte("\x03vorbis comments")),
		page(0, 0, 9, 2, []byte("\x05vorbis setup")),
	}
	for i := 0; i < n; i += 250 {
		pkts := make([][]byte, min(250, n-i))
		for j := range pkts {
			pkts[j] = []byte{0}
		}
		pages = append(pages, pagePackets(0, granule, 9, uint32(len(pages)), pkts))
	}
	return bytes.Join(pages, nil)
}

// pagePackets returns one page holding whole packets, each under 255
// bytes.
func pagePackets(flags byte, granule int64, serial, seq uint32, pkts [][]byte) []byte {
	var lacing, body []byte
	for _, p := range pkts {
		lacing, body = append(lacing, byte(len(p))), append(body, p...)
	}
	h := make([]byte, 27)
	copy(h, "OggS")
	h[5] = flags
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], serial)
	binary.LittleEndian.PutUint32(h[18:], seq)
	h[26] = byte(len(lacing))
	p := append(append(h, lacing...), body...)
	binary.LittleEndian.PutUint32(p[22:], crc(p))
	return p
}
