package ipcx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// The LZ4 frame format (lz4_Frame_format.md): magic, a descriptor (FLG,
// BD, optional content size and dictionary id, header checksum), then
// blocks, each a little-endian uint32 size (high bit: stored raw) and its
// data (plus a checksum when FLG asks), then a zero end mark (plus a
// content checksum when FLG asks). quiver writes what arrow-go and Arrow
// C++ write: 64 KiB independent blocks and no checksums. Because the
// blocks are independent and all but the last hold exactly 64 KiB, a
// buffer's blocks can be compressed and decompressed in parallel, each
// straight into its place, with pierrec/lz4's block functions.

const (
	lz4Magic     = 0x184D2204
	lz4BlockSize = 64 << 10
	// lz4FLG: version 01, independent blocks, no block checksums, no
	// content size, no content checksum, no dictionary.
	lz4FLG = 0x60
	// lz4BD: 64 KiB maximum block size.
	lz4BD = 0x40
	// lz4HeaderLen is magic + FLG + BD + header checksum.
	lz4HeaderLen = 7
	lz4EndMark   = 4
	// lz4RawBlock marks a block stored uncompressed.
	lz4RawBlock = 1 << 31
)

// lz4Header is the frame header quiver writes.
var lz4Header = func() [lz4HeaderLen]byte {
	var h [lz4HeaderLen]byte
	binary.LittleEndian.PutUint32(h[:], lz4Magic)
	h[4], h[5] = lz4FLG, lz4BD
	h[6] = byte(xxh32(h[4:6], 0) >> 8)
	return h
}()

// lz4Compressors are reusable block compressors (each holds a hash table).
var lz4Compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// lz4MaxBlocksLen is the most lz4EncodeBlocks writes for n bytes of input:
// every block stored raw behind its size.
func lz4MaxBlocksLen(n int) int {
	return n + 4*((n+lz4BlockSize-1)/lz4BlockSize)
}

// lz4EncodeBlocks compresses src, which starts on a block boundary of the
// frame, as independent blocks into dst and returns the bytes written. dst
// must hold lz4MaxBlocksLen(len(src)). A block that does not shrink is
// stored raw.
func lz4EncodeBlocks(dst, src []byte) int {
	c := lz4Compressors.Get().(*lz4.Compressor)
	defer lz4Compressors.Put(c)
	w := 0
	for len(src) > 0 {
		blk := src[:min(len(src), lz4BlockSize)]
		src = src[len(blk):]
		// A destination one byte shorter than the block makes the
		// compressor give up (return 0) as soon as it would not shrink.
		n, err := c.CompressBlock(blk, dst[w+4:w+4+len(blk)-1])
		if err != nil || n == 0 {
			binary.LittleEndian.PutUint32(dst[w:], uint32(len(blk))|lz4RawBlock)
			w += 4 + copy(dst[w+4:], blk)
			continue
		}
		binary.LittleEndian.PutUint32(dst[w:], uint32(n))
		w += 4 + n
	}
	return w
}

// lz4Frame is a parsed LZ4 frame: where its blocks are in the input.
type lz4Frame struct {
	independent   bool
	blockChecksum bool
	contentSum    bool
	blockMax      int
	contentSize   int64 // -1 when the frame does not say
	blocks        []lz4Block
	// end is where the frame ends in the input (after any checksum).
	end int
	// checksum is the content checksum, when contentSum.
	checksum uint32
}

// lz4Block is one block's data in the input.
type lz4Block struct {
	start, n int
	raw      bool
}

var lz4BlockMax = [8]int{4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}

// parseLZ4Frame reads the frame that starts src.
func parseLZ4Frame(src []byte) (*lz4Frame, error) {
	if len(src) < lz4HeaderLen || binary.LittleEndian.Uint32(src) != lz4Magic {
		return nil, errors.New("lz4: not an LZ4 frame")
	}
	flg, bd := src[4], src[5]
	if flg>>6 != 1 {
		return nil, fmt.Errorf("lz4: frame version %d", flg>>6)
	}
	if flg&0x01 != 0 {
		return nil, errors.New("lz4: frames with a dictionary are not supported")
	}
	f := &lz4Frame{
		independent:   flg&0x20 != 0,
		blockChecksum: flg&0x10 != 0,
		contentSum:    flg&0x04 != 0,
		blockMax:      lz4BlockMax[(bd>>4)&7],
		contentSize:   -1,
	}
	if f.blockMax == 0 || flg&0x02 != 0 || bd&0x8F != 0 {
		return nil, errors.New("lz4: bad frame descriptor")
	}
	pos := 6
	if flg&0x08 != 0 {
		if len(src) < pos+9 {
			return nil, errors.New("lz4: truncated frame descriptor")
		}
		f.contentSize = int64(binary.LittleEndian.Uint64(src[pos:]))
		pos += 8
	}
	if want := byte(xxh32(src[4:pos], 0) >> 8); src[pos] != want {
		return nil, errors.New("lz4: frame header checksum mismatch")
	}
	pos++
	for {
		if len(src) < pos+4 {
			return nil, errors.New("lz4: truncated frame")
		}
		size := binary.LittleEndian.Uint32(src[pos:])
		pos += 4
		if size == 0 {
			break
		}
		b := lz4Block{start: pos, n: int(size &^ lz4RawBlock), raw: size&lz4RawBlock != 0}
		if b.n > f.blockMax || len(src)-pos < b.n {
			return nil, errors.New("lz4: bad block size")
		}
		pos += b.n
		if f.blockChecksum {
			if len(src) < pos+4 {
				return nil, errors.New("lz4: truncated block checksum")
			}
			if binary.LittleEndian.Uint32(src[pos:]) != xxh32(src[b.start:b.start+b.n], 0) {
				return nil, errors.New("lz4: block checksum mismatch")
			}
			pos += 4
		}
		f.blocks = append(f.blocks, b)
	}
	if f.contentSum {
		if len(src) < pos+4 {
			return nil, errors.New("lz4: truncated content checksum")
		}
		f.checksum = binary.LittleEndian.Uint32(src[pos:])
		pos += 4
	}
	f.end = pos
	return f, nil
}

// lz4Decoder decompresses one buffer holding one or more LZ4 frames into
// dst, which has exactly the uncompressed size.
type lz4Decoder struct {
	src, dst []byte
	frames   []*lz4Frame
	// parallel: a single frame of independent, full blocks, which pieces
	// can decode separately.
	parallel bool
}

func newLZ4Decoder(src, dst []byte) (*lz4Decoder, error) {
	d := &lz4Decoder{src: src, dst: dst}
	for off := 0; off < len(src); {
		f, err := parseLZ4Frame(src[off:])
		if err != nil {
			return nil, err
		}
		for i := range f.blocks {
			f.blocks[i].start += off
		}
		off += f.end
		d.frames = append(d.frames, f)
	}
	if len(d.frames) == 0 {
		return nil, errors.New("lz4: empty buffer")
	}
	f := d.frames[0]
	d.parallel = len(d.frames) == 1 && f.independent && !f.contentSum &&
		len(f.blocks) == (len(dst)+f.blockMax-1)/f.blockMax
	return d, nil
}

// pieces is how many parallel tasks the buffer splits into, at about
// per bytes of output each.
func (d *lz4Decoder) pieces(per int) int {
	if !d.parallel {
		return 1
	}
	blocksPer := max(1, per/d.frames[0].blockMax)
	return (len(d.frames[0].blocks) + blocksPer - 1) / blocksPer
}

// decodePiece decodes piece i of n. When the blocks turn out not to be
// full, it returns errLZ4Irregular and the buffer is decoded serially.
func (d *lz4Decoder) decodePiece(i, n int) error {
	if !d.parallel {
		return d.decodeSerial()
	}
	f := d.frames[0]
	per := (len(f.blocks) + n - 1) / n
	for k := i * per; k < min(len(f.blocks), (i+1)*per); k++ {
		b := f.blocks[k]
		out := d.dst[k*f.blockMax : min(len(d.dst), (k+1)*f.blockMax)]
		if b.raw {
			if b.n != len(out) {
				return errLZ4Irregular
			}
			copy(out, d.src[b.start:b.start+b.n])
			continue
		}
		got, err := lz4.UncompressBlock(d.src[b.start:b.start+b.n], out)
		if err != nil || got != len(out) {
			return errLZ4Irregular
		}
	}
	return nil
}

// errLZ4Irregular says a frame's blocks are not all full; the caller
// decodes it again serially.
var errLZ4Irregular = errors.New("lz4: irregular blocks")

// decodeSerial decodes every frame block by block. Linked blocks (Arrow
// C++'s default) see the previous 64 KiB of output as their dictionary.
func (d *lz4Decoder) decodeSerial() error {
	pos := 0
	for _, f := range d.frames {
		start := pos
		for _, b := range f.blocks {
			src := d.src[b.start : b.start+b.n]
			if b.raw {
				if len(d.dst)-pos < b.n {
					return errors.New("lz4: output larger than its stated size")
				}
				pos += copy(d.dst[pos:], src)
				continue
			}
			out := d.dst[pos:min(len(d.dst), pos+f.blockMax)]
			var (
				n   int
				err error
			)
			if f.independent || pos == start {
				n, err = lz4.UncompressBlock(src, out)
			} else {
				n, err = lz4.UncompressBlockWithDict(src, out, d.dst[max(start, pos-64<<10):pos])
			}
			if err != nil {
				return fmt.Errorf("lz4: corrupt block: %w", err)
			}
			pos += n
		}
		if f.contentSize >= 0 && int64(pos-start) != f.contentSize {
			return fmt.Errorf("lz4: frame holds %d bytes, its header says %d", pos-start, f.contentSize)
		}
		if f.contentSum && xxh32(d.dst[start:pos], 0) != f.checksum {
			return errors.New("lz4: content checksum mismatch")
		}
	}
	if pos != len(d.dst) {
		return fmt.Errorf("lz4: decompressed %d bytes, expected %d", pos, len(d.dst))
	}
	return nil
}

// xxh32 is the 32-bit xxHash of b (used by the LZ4 frame format for its
// header, block and content checksums), written from the xxHash spec.
func xxh32(b []byte, seed uint32) uint32 {
	const (
		p1 uint32 = 2654435761
		p2 uint32 = 2246822519
		p3 uint32 = 3266489917
		p4 uint32 = 668265263
		p5 uint32 = 374761393
	)
	n := len(b)
	var h uint32
	if n >= 16 {
		v1, v2, v3, v4 := seed+p1+p2, seed+p2, seed, seed-p1
		round := func(v, w uint32) uint32 { return bits.RotateLeft32(v+w*p2, 13) * p1 }
		for len(b) >= 16 {
			v1 = round(v1, binary.LittleEndian.Uint32(b))
			v2 = round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = seed + p5
	}
	h += uint32(n)
	for ; len(b) >= 4; b = b[4:] {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
	}
	for _, c := range b {
		h = bits.RotateLeft32(h+uint32(c)*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}
