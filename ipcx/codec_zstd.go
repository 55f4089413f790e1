package ipcx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	ddzstd "github.com/DataDog/zstd"
	"github.com/klauspost/compress/zstd"
)

// ZSTD bodies are one or more zstd frames (RFC 8878 §3: "Zstandard
// compressed data is made of one or more frames"). quiver writes a large
// buffer as frames of zstdFrameSize input bytes, so that they compress and
// decompress in parallel; each frame records its content size, which says
// where its output goes. A buffer written by another writer as one frame,
// or frames without content sizes, decompresses as one piece.

// zstdFrameSize is the input per frame quiver writes. Frames much smaller
// than the encoder's window cost ratio and write time: with 1 MiB frames a
// 1M-row int + string batch came out 17% larger than arrow-go's single
// frame, with 4 MiB frames 2% (measured at the default level). Larger ones
// cost parallelism.
const zstdFrameSize = 4 << 20

const zstdMagic = 0xFD2FB528

// zstdLevel is zstd's level 1, the fastest of its standard levels and
// Arrow C++'s default for IPC. Where zstd pays (a slow link) the sender's
// CPU is what bounds it: on the shaped 1 Gbit/s link, str20 came
// 1.07-1.16× faster end to end than at the default level (level 3), and
// num20 1.09-1.11×, though the default level sends fewer bytes (measured
// with klauspost/compress's encoder, before the library below). The
// negative levels go too far the other way: -1 to -7 compress str20's
// string data 1.2-2.1× faster but to 1.9-7.8× the bytes, and 1.9× the
// bytes alone would need more of the link than a whole fetch takes now.
const zstdLevel = 1

// Compression goes through the reference zstd library (cgo), decompression
// through klauspost/compress. On a str20 batch's buffers the library at
// level 1 compressed string data 1.7× faster than klauspost's fastest
// level, and it Huffman-codes the string offsets (to 73% of their size),
// which klauspost's fastest level sends as they are; klauspost decodes
// those offsets faster (go test -bench Zstd ./ipcx/).

// zstdCtxs holds the compression contexts, one per concurrent call, made
// once. A context allocates its tables on its first use, so each is used
// once here, before any batch or auto's probe times it.
var zstdCtxs = sync.OnceValue(func() chan ddzstd.Ctx {
	n := 2 * runtime.GOMAXPROCS(0)
	ch := make(chan ddzstd.Ctx, n)
	warm := make([]byte, 256<<10)
	for i := range warm {
		warm[i] = byte(i * 7 / 5)
	}
	dst := make([]byte, zstdMaxFrameLen(len(warm)))
	for range n {
		c := ddzstd.NewCtx()
		if _, err := c.CompressLevel(dst, warm, zstdLevel); err != nil {
			panic(fmt.Sprintf("ipcx: zstd: %v", err))
		}
		ch <- c
	}
	return ch
})

// zstdCompress compresses src into one frame at the start of dst, which
// has room for zstdMaxFrameLen(len(src)) bytes, and returns the frame.
// The frame records its content size and has no checksum: like quiver's
// LZ4 frames, the transport checks integrity.
func zstdCompress(dst, src []byte) ([]byte, error) {
	ctxs := zstdCtxs()
	c := <-ctxs
	defer func() { ctxs <- c }()
	out, err := c.CompressLevel(dst, src, zstdLevel)
	if err != nil {
		return nil, fmt.Errorf("zstd compress: %w", err)
	}
	return out, nil
}

// zstdDecoder is the process-wide decoder; DecodeAll is safe for
// concurrent use.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(2*runtime.GOMAXPROCS(0)),
		zstd.WithDecoderLowmem(false),
		// Output never grows past the buffer the IPC header sized: a
		// frame that claims more is an error, not an allocation.
		zstd.WithDecodeAllCapLimit(true),
		// A frame header may ask for a history window of up to 3.75 TB;
		// Arrow writers use a few MB (128 MB covers zstd's ultra
		// levels). A larger one is refused before its window is
		// allocated, and the decoders keep what they allocated.
		zstd.WithDecoderMaxWindow(128<<20))
	if err != nil {
		panic(fmt.Sprintf("ipcx: zstd decoder: %v", err))
	}
	return dec
})

// zstdMaxFrameLen is the most one frame of n input bytes takes.
func zstdMaxFrameLen(n int) int { return ddzstd.CompressBound(n) }

// zstdFrameSpan is one frame in a buffer: its bytes and, when the header
// says, its content size (-1 otherwise).
type zstdFrameSpan struct {
	start, end int
	size       int64
}

// zstdFrames walks the frames of src: frame headers and block headers
// only, no decoding. Skippable frames are left out.
func zstdFrames(src []byte) ([]zstdFrameSpan, error) {
	var out []zstdFrameSpan
	for pos := 0; pos < len(src); {
		if len(src)-pos < 8 {
			return nil, errors.New("zstd: truncated frame")
		}
		magic := binary.LittleEndian.Uint32(src[pos:])
		if magic&0xFFFFFFF0 == 0x184D2A50 { // skippable frame
			n := int(binary.LittleEndian.Uint32(src[pos+4:]))
			if n < 0 || len(src)-pos-8 < n {
				return nil, errors.New("zstd: truncated skippable frame")
			}
			pos += 8 + n
			continue
		}
		if magic != zstdMagic {
			return nil, errors.New("zstd: not a zstd frame")
		}
		f := zstdFrameSpan{start: pos, size: -1}
		fhd := src[pos+4]
		single := fhd&0x20 != 0
		fcsFlag := fhd >> 6
		hasChecksum := fhd&0x04 != 0
		p := pos + 5
		if !single {
			p++ // window descriptor
		}
		p += [4]int{0, 1, 2, 4}[fhd&3] // dictionary id
		fcsLen := [4]int{0, 2, 4, 8}[fcsFlag]
		if fcsFlag == 0 && single {
			fcsLen = 1
		}
		if len(src) < p+fcsLen {
			return nil, errors.New("zstd: truncated frame header")
		}
		switch fcsLen {
		case 1:
			f.size = int64(src[p])
		case 2:
			f.size = int64(binary.LittleEndian.Uint16(src[p:])) + 256
		case 4:
			f.size = int64(binary.LittleEndian.Uint32(src[p:]))
		case 8:
			f.size = int64(binary.LittleEndian.Uint64(src[p:]))
		}
		p += fcsLen
		for {
			if len(src)-p < 3 {
				return nil, errors.New("zstd: truncated block header")
			}
			h := uint32(src[p]) | uint32(src[p+1])<<8 | uint32(src[p+2])<<16
			p += 3
			size := int(h >> 3)
			switch (h >> 1) & 3 {
			case 0, 2: // raw, compressed
				p += size
			case 1: // RLE
				p++
			default:
				return nil, errors.New("zstd: reserved block type")
			}
			if p > len(src) {
				return nil, errors.New("zstd: truncated block")
			}
			if h&1 != 0 {
				break
			}
		}
		if hasChecksum {
			p += 4
		}
		if p > len(src) {
			return nil, errors.New("zstd: truncated checksum")
		}
		f.end = p
		out = append(out, f)
		pos = p
	}
	return out, nil
}

// zstdDecodeInto decodes src, zstd frames whose content is exactly
// len(dst) bytes, into dst.
func zstdDecodeInto(src, dst []byte) error {
	out, err := zstdDecoder().DecodeAll(src, dst[:0:len(dst)])
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	if len(out) != len(dst) || (len(out) > 0 && &out[0] != &dst[0]) {
		return fmt.Errorf("zstd: decompressed %d bytes, expected %d", len(out), len(dst))
	}
	return nil
}
