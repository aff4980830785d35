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
// For Opus (RFC 7845) the granule position counts 48 kHz samples from the
// stream's start, including the "pre-skip" samples of the identification
// header that the decoder drops; for Vorbis it counts samples at the rate
// of the identification header.
const (
	oggHeaderLen = 27
	opusRate     = 48000
)

var (
	oggMagic  = []byte("OggS")
	opusHead  = []byte("OpusHead")
	vorbisHdr = []byte("\x01vorbis")
)

// Duration returns the playing time of the OGG/Opus (or OGG/Vorbis) audio
// in data, read from the container itself: every page must be whole and
// pass its checksum, the first must begin an Opus or Vorbis stream, and
// the length is the last page's granule position (less the Opus
// pre-skip) over the sample rate. Anything else, including a file with a
// second logical stream, is an error wrapping [apology.ErrAudioFormat].
// It reads data only and never panics.
func Duration(data []byte) (time.Duration, error) {
	d, err := duration(data)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", apology.ErrAudioFormat, err)
	}
	return d, nil
}

func duration(data []byte) (time.Duration, error) {
	var (
		serial  uint32
		rate    uint64
		preSkip uint64
		last    int64 = -1
		pages   int
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
			if rate, preSkip, err = codecHeader(p.body); err != nil {
				return 0, err
			}
		} else if p.serial != serial || p.flags&0x02 != 0 {
			return 0, errors.New("ogg: more than one logical stream")
		}
		if p.granule != -1 {
			if p.granule < 0 {
				return 0, fmt.Errorf("ogg: negative granule position %d", p.granule)
			}
			last = p.granule
		}
	}
	switch {
	case pages == 0:
		return 0, errors.New("ogg: no data")
	case last < 0:
		return 0, errors.New("ogg: no page ends a packet")
	}
	samples := uint64(last)
	if samples <= preSkip {
		return 0, nil
	}
	samples -= preSkip
	// samples < 2^63 and rate >= 1: whole seconds and the remainder keep
	// the product within int64 for any duration that fits one.
	sec, rem := samples/rate, samples%rate
	if sec > uint64(1<<62)/uint64(time.Second) {
		return 0, fmt.Errorf("ogg: granule position %d is beyond any real length", last)
	}
	return time.Duration(sec)*time.Second + time.Duration(rem*uint64(time.Second)/rate), nil
}

// page is one OGG page's header fields and data.
type page struct {
	flags   byte
	granule int64
	serial  uint32
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
	bodyLen := 0
	for _, l := range b[oggHeaderLen : oggHeaderLen+nseg] {
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
		body:    b[oggHeaderLen+nseg : size],
		size:    size,
	}, nil
}

// codecHeader reads the identification header that begins the first
// page's data: the sample rate of the granule positions and the samples to
// skip.
func codecHeader(body []byte) (rate, preSkip uint64, err error) {
	switch {
	case bytes.HasPrefix(body, opusHead):
		// "OpusHead", version, channels, pre-skip (uint16), input rate
		// (informational: Opus granules are always at 48 kHz), ...
		if len(body) < 19 {
			return 0, 0, errors.New("opus: truncated OpusHead")
		}
		if v := body[8]; v>>4 != 0 {
			return 0, 0, fmt.Errorf("opus: unknown major version %d", v>>4)
		}
		return opusRate, uint64(binary.LittleEndian.Uint16(body[10:12])), nil
	case bytes.HasPrefix(body, vorbisHdr):
		// packet type, "vorbis", version (uint32), channels, rate (uint32)
		if len(body) < 16 {
			return 0, 0, errors.New("vorbis: truncated identification header")
		}
		rate := uint64(binary.LittleEndian.Uint32(body[12:16]))
		if rate == 0 {
			return 0, 0, errors.New("vorbis: sample rate 0")
		}
		return rate, 0, nil
	}
	return 0, 0, errors.New("ogg: the stream is neither Opus nor Vorbis")
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
