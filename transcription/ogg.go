package transcription

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mombot/mombot/apology"
)

// An OGG stream (RFC 3533) is a sequence of pages; each starts with a
// 27-byte header, a segment table and the page's data:
//
//	0  "OggS"            capture pattern
//	4  version           0
//	5  header type       0x01 continued packet, 0x02 first page, 0x04 last page
//	6  granule position  int64, little-endian; -1 when no packet ends on the page
//	14 serial number     the logical stream
//	18 page sequence
//	22 CRC-32            over the whole page with this field zeroed
//	26 segments          the number of entries of the segment table
//	27 segment table     the lacing values; the data is their sum
//
// The data is a sequence of packets: a lacing value of 255 continues the
// packet, a smaller one ends it, and a packet may go on into the next
// page.
//
// For Opus (RFC 7845) the first packet is the identification header
// ("OpusHead"), the second the comment header ("OpusTags"), and every
// later one an audio packet, whose first byte, the TOC (RFC 6716, section
// 3.1), says how long it plays. The granule position counts 48 kHz samples
// from the stream's start, including the "pre-skip" samples of the
// identification header that the decoder drops. For Vorbis, after three
// header packets, each audio packet plays at least half the short block
// size of the identification header; the granule position counts samples
// at its rate.
const (
	oggHeaderLen = 27
	opusRate     = 48000
	// maxOpusPacket is the longest an Opus packet plays, 120 ms at 48 kHz
	// (RFC 6716, section 3.2.5): how far the end of the audio may pass
	// the last granule position (the end trimming of RFC 7845, 4.4).
	maxOpusPacket = 5760
	// headLen is how many bytes of a packet's start are kept: enough for
	// Vorbis's identification header up to its block sizes.
	headLen = 30
)

var (
	oggMagic  = []byte("OggS")
	opusHead  = []byte("OpusHead")
	opusTags  = []byte("OpusTags")
	vorbisHdr = []byte("\x01vorbis")
)

// Duration returns the playing time of the OGG/Opus (or OGG/Vorbis) audio
// in data, read from the container itself: every page must be whole and
// pass its checksum, the first must begin an Opus or Vorbis stream, and
// the granule positions must not go back. The length is the audio's own:
// the sum of the Opus packets' durations, each read from its TOC byte (for
// Vorbis, the least its packets can play), less the pre-skip; where the
// last granule position says more, or says less by no more than the end
// trimming allows, the length is that position's. So a file whose
// positions declare a second while its packets hold two hours measures
// two hours, and one whose positions declare two hours measures two hours
// too. Anything else, including a file with a second logical stream or an
// Opus packet the TOC rules of RFC 6716 forbid, is an error wrapping
// [apology.ErrAudioFormat]. It reads data only and never panics.
func Duration(data []byte) (time.Duration, error) {
	d, err := duration(data)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", apology.ErrAudioFormat, err)
	}
	return d, nil
}

// stream is what duration has read of a stream so far.
type stream struct {
	id      codec
	packets int // the packets ended so far, headers included
	// head holds the first headLen bytes of the packet being read, size
	// its length so far.
	head []byte
	size int
	// samples is the audio's length at rate: for Opus the sum of its
	// packets' durations, for Vorbis the least its packets can play.
	samples uint64
	// vorbisPackets counts Vorbis audio packets.
	vorbisPackets uint64
}

func duration(data []byte) (time.Duration, error) {
	var (
		serial uint32
		last   int64 = -1
		pages  int
		s      = stream{head: make([]byte, 0, headLen)}
	)
	for off := 0; off < len(data); pages++ {
		p, err := readPage(data[off:])
		if err != nil {
			return 0, fmt.Errorf("ogg page %d at byte %d: %w", pages, off, err)
		}
		off += p.size
		if pages == 0 {
			if p.flags&0x02 == 0 {
				return 0, errors.New("ogg: the first page does not begin a stream")
			}
			serial = p.serial
		} else if p.serial != serial || p.flags&0x02 != 0 {
			return 0, errors.New("ogg: more than one logical stream")
		}
		if p.granule != -1 {
			if p.granule < 0 {
				return 0, fmt.Errorf("ogg: negative granule position %d", p.granule)
			}
			if p.granule < last {
				return 0, fmt.Errorf("ogg: page %d's granule position %d is before the previous page's, %d", pages, p.granule, last)
			}
			last = p.granule
		}
		if err := s.read(p); err != nil {
			return 0, fmt.Errorf("ogg page %d: %w", pages, err)
		}
	}
	switch {
	case pages == 0:
		return 0, errors.New("ogg: no data")
	case last < 0:
		return 0, errors.New("ogg: no page ends a packet")
	case s.packets == 0:
		return 0, errors.New("ogg: no identification header")
	case s.size > 0:
		return 0, errors.New("ogg: the stream ends inside a packet")
	}
	// The positions may say more than the packets hold (a decoder plays
	// what they say), or less, by the end trimming: a packet's worth.
	declared := sub(uint64(last), s.id.preSkip)
	audio, slack := sub(s.samples, s.id.preSkip), uint64(maxOpusPacket)
	if !s.id.opus {
		audio, slack = s.samples, s.id.longBlock
	}
	if audio > declared+slack {
		return samplesDuration(audio, s.id.rate)
	}
	return samplesDuration(declared, s.id.rate)
}

// sub returns a-b, or 0 when b is larger.
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// samplesDuration returns how long n samples at rate play.
func samplesDuration(n, rate uint64) (time.Duration, error) {
	// rate >= 1: whole seconds and the remainder keep the product within
	// int64 for any duration that fits one.
	sec, rem := n/rate, n%rate
	if sec > uint64(1<<62)/uint64(time.Second) {
		return 0, fmt.Errorf("ogg: %d samples at %d Hz is beyond any real length", n, rate)
	}
	return time.Duration(sec)*time.Second + time.Duration(rem*uint64(time.Second)/rate), nil
}

// read takes the packets, whole or in part, of page p.
func (s *stream) read(p page) error {
	body := p.body
	for _, lacing := range p.lacing {
		seg := body[:lacing]
		body = body[lacing:]
		if n := min(len(seg), headLen-len(s.head)); n > 0 {
			s.head = append(s.head, seg[:n]...)
		}
		s.size += int(lacing)
		if lacing == 255 {
			continue // the packet goes on
		}
		if err := s.packet(s.head, s.size); err != nil {
			return fmt.Errorf("packet %d: %w", s.packets, err)
		}
		s.packets++
		s.head, s.size = s.head[:0], 0
	}
	return nil
}

// packet takes one whole packet of size bytes that begins with head.
func (s *stream) packet(head []byte, size int) error {
	switch {
	case s.packets == 0:
		id, err := codecHeader(head)
		s.id = id
		return err
	case s.id.opus && s.packets == 1:
		if !bytes.HasPrefix(head, opusTags) {
			return errors.New(`opus: the second packet is not the "OpusTags" header`)
		}
		return nil
	case s.id.opus:
		n, err := opusSamples(head, size)
		s.samples += n
		return err
	case s.packets < 3: // Vorbis's comment and setup headers
		if len(head) == 0 || head[0]&1 == 0 {
			return errors.New("vorbis: a header packet expected")
		}
		return nil
	}
	if size == 0 || head[0]&1 != 0 {
		return errors.New("vorbis: an audio packet expected")
	}
	// A Vorbis packet plays a quarter of its block and a quarter of the
	// previous one, the first none: at least half a short block each.
	if s.vorbisPackets++; s.vorbisPackets > 1 {
		s.samples += s.id.shortBlock / 2
	}
	return nil
}

// opusSamples returns how long an Opus packet of size bytes beginning with
// head plays, in 48 kHz samples, from its TOC byte and, for a packet of
// code 3, its frame count byte (RFC 6716, section 3.1 and 3.2).
func opusSamples(head []byte, size int) (uint64, error) {
	if size == 0 {
		return 0, errors.New("opus: an empty audio packet") // RFC 6716, R1
	}
	toc := head[0]
	config := toc >> 3
	var frame uint64
	switch {
	case config < 12: // SILK: 10, 20, 40, 60 ms
		frame = []uint64{480, 960, 1920, 2880}[config%4]
	case config < 16: // hybrid: 10, 20 ms
		frame = []uint64{480, 960}[config%2]
	default: // CELT: 2.5, 5, 10, 20 ms
		frame = []uint64{120, 240, 480, 960}[config%4]
	}
	switch toc & 3 {
	case 0:
		return frame, nil
	case 1, 2:
		return 2 * frame, nil
	}
	if size < 2 {
		return 0, errors.New("opus: a code 3 packet without its frame count") // R6
	}
	frames := uint64(head[1] & 0x3f)
	if frames == 0 || frames*frame > maxOpusPacket {
		return 0, fmt.Errorf("opus: a code 3 packet of %d frames of %d samples", frames, frame) // R5
	}
	return frames * frame, nil
}

// page is one OGG page's header fields and data.
type page struct {
	flags   byte
	granule int64
	serial  uint32
	lacing  []byte
	body    []byte
	size    int // header, segment table and body
}

func readPage(b []byte) (page, error) {
	if len(b) < oggHeaderLen {
		return page{}, errors.New("truncated header")
	}
	if !bytes.Equal(b[:4], oggMagic) {
		return page{}, errors.New(`no "OggS" capture pattern`)
	}
	if b[4] != 0 {
		return page{}, fmt.Errorf("unknown version %d", b[4])
	}
	nseg := int(b[26])
	if len(b) < oggHeaderLen+nseg {
		return page{}, errors.New("truncated segment table")
	}
	lacing := b[oggHeaderLen : oggHeaderLen+nseg]
	bodyLen := 0
	for _, l := range lacing {
		bodyLen += int(l)
	}
	size := oggHeaderLen + nseg + bodyLen
	if len(b) < size {
		return page{}, errors.New("truncated page")
	}
	want := binary.LittleEndian.Uint32(b[22:26])
	if got := oggCRC(b[:size]); got != want {
		return page{}, fmt.Errorf("checksum %08x, the page says %08x", got, want)
	}
	return page{
		flags:   b[5],
		granule: int64(binary.LittleEndian.Uint64(b[6:14])),
		serial:  binary.LittleEndian.Uint32(b[14:18]),
		lacing:  lacing,
		body:    b[oggHeaderLen+nseg : size],
		size:    size,
	}, nil
}

// codec is what a stream's identification header says.
type codec struct {
	opus bool
	// rate is the sample rate of the granule positions.
	rate uint64
	// preSkip is the samples to drop at the start (Opus).
	preSkip uint64
	// shortBlock and longBlock are Vorbis's two block sizes.
	shortBlock, longBlock uint64
}

// codecHeader reads the identification header, the first packet, of
// which head holds the start.
func codecHeader(head []byte) (codec, error) {
	switch {
	case bytes.HasPrefix(head, opusHead):
		// "OpusHead", version, channels, pre-skip (uint16), input rate
		// (informational: Opus granules are always at 48 kHz), ...
		if len(head) < 19 {
			return codec{}, errors.New("opus: truncated OpusHead")
		}
		if v := head[8]; v>>4 != 0 {
			return codec{}, fmt.Errorf("opus: unknown major version %d", v>>4)
		}
		return codec{opus: true, rate: opusRate, preSkip: uint64(binary.LittleEndian.Uint16(head[10:12]))}, nil
	case bytes.HasPrefix(head, vorbisHdr):
		// packet type, "vorbis", version (uint32), channels, rate
		// (uint32), three bitrates (int32), the block sizes' exponents
		// (4 bits each, short then long), framing
		if len(head) < 29 {
			return codec{}, errors.New("vorbis: truncated identification header")
		}
		rate := uint64(binary.LittleEndian.Uint32(head[12:16]))
		short, long := head[28]&0x0f, head[28]>>4
		switch {
		case rate == 0:
			return codec{}, errors.New("vorbis: sample rate 0")
		case short < 6 || long > 13 || short > long:
			return codec{}, fmt.Errorf("vorbis: block sizes 2^%d and 2^%d", short, long)
		}
		return codec{rate: rate, shortBlock: 1 << short, longBlock: 1 << long}, nil
	}
	return codec{}, errors.New("ogg: the stream is neither Opus nor Vorbis")
}

// oggTable is the CRC-32 of OGG: polynomial 0x04c11db7, not reflected,
// initial value 0, no final xor (RFC 3533, section 6).
var oggTable = func() (t [256]uint32) {
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return t
}()

// oggCRC returns the checksum of page, reading its CRC field as zeros.
func oggCRC(page []byte) uint32 {
	var crc uint32
	for i, b := range page {
		if i >= 22 && i < 26 {
			b = 0
		}
		crc = crc<<8 ^ oggTable[byte(crc>>24)^b]
	}
	return crc
}
