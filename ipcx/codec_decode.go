package ipcx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
)

// MaxDecompressedBody bounds one message's uncompressed body. The sizes
// come from the sender; a message that claims more is refused before any
// memory is allocated for it.
const MaxDecompressedBody = 8 << 30

// decodeBuf is one body buffer being decompressed.
type decodeBuf struct {
	codec Codec // CodecNone: stored raw (uncompressed length -1)
	src   []byte
	dst   []byte
	lz4   *lz4Decoder
	// irregular is set when an LZ4 frame's blocks are not all full, so
	// its parallel pieces failed; it is decoded again serially.
	irregular atomic.Bool
	// frames are the zstd frames with their output offsets in dst, when
	// every frame states its size; otherwise the buffer is one piece.
	frames []zstdFrameSpan
}

// decodeTask is one piece of parallel work: piece i of n of buf.
type decodeTask struct {
	buf  *decodeBuf
	i, n int
	// For zstd, frames [lo, hi) of buf.frames.
	lo, hi int
}

// decompressBatch decompresses the body of a compressed record or
// dictionary batch. m is the message's header; it is updated to describe
// the returned body: no compression, each buffer 8-byte aligned. alloc
// returns memory for the new body. Work is spread over the cores: raw
// copies and LZ4 blocks in pieces of about pieceSize, zstd frames
// separately when the writer split them (quiver does), whole buffers
// otherwise.
func decompressBatch(m *batchMeta, body []byte, alloc func(n int) []byte) ([]byte, error) {
	if int64(len(body)) < m.bodyLength {
		return nil, fmt.Errorf("decompress batch: body is %d bytes, header says %d", len(body), m.bodyLength)
	}
	bufs := make([]decodeBuf, len(m.buffers))
	newBufs := make([]ipcBuffer, len(m.buffers))
	var total int64
	for i, b := range m.buffers {
		var size int64
		if b.length > 0 {
			if b.length < 8 {
				return nil, fmt.Errorf("decompress batch: buffer %d is %d bytes, shorter than its length prefix", i, b.length)
			}
			in := body[b.offset : b.offset+b.length]
			size = int64(binary.LittleEndian.Uint64(in))
			bufs[i].src = in[8:]
			bufs[i].codec = m.codec
			switch {
			case size == -1:
				size = int64(len(in) - 8)
				bufs[i].codec = CodecNone
			case size < 0:
				return nil, fmt.Errorf("decompress batch: buffer %d has length %d", i, size)
			}
		}
		newBufs[i] = ipcBuffer{offset: total, length: size}
		total += pad8(size)
		if total > MaxDecompressedBody {
			return nil, fmt.Errorf("decompress batch: body would exceed %d bytes", int64(MaxDecompressedBody))
		}
	}
	out := alloc(int(total))[:total]
	var tasks []decodeTask
	for i := range bufs {
		b := &bufs[i]
		nb := newBufs[i]
		b.dst = out[nb.offset : nb.offset+nb.length : nb.offset+nb.length]
		clear(out[nb.offset+nb.length : nb.offset+pad8(nb.length)])
		if nb.length == 0 {
			if len(b.src) > 0 && b.codec == CodecNone {
				return nil, fmt.Errorf("decompress batch: buffer %d: raw bytes for an empty buffer", i)
			}
			continue
		}
		switch b.codec {
		case CodecNone:
			n := (len(b.dst) + pieceSize - 1) / pieceSize
			for k := 0; k < n; k++ {
				tasks = append(tasks, decodeTask{buf: b, i: k, n: n})
			}
		case CodecLZ4:
			d, err := newLZ4Decoder(b.src, b.dst)
			if err != nil {
				return nil, fmt.Errorf("decompress batch: buffer %d: %w", i, err)
			}
			b.lz4 = d
			n := d.pieces(pieceSize)
			for k := 0; k < n; k++ {
				tasks = append(tasks, decodeTask{buf: b, i: k, n: n})
			}
		case CodecZSTD:
			tasks = appendZstdTasks(tasks, b)
		}
	}
	err := runTasks(len(tasks), func(i int) error { return tasks[i].run() })
	if err != nil {
		return nil, fmt.Errorf("decompress batch: %w", err)
	}
	for i := range bufs {
		if b := &bufs[i]; b.irregular.Load() {
			if err := b.lz4.decodeSerial(); err != nil {
				return nil, fmt.Errorf("decompress batch: buffer %d: %w", i, err)
			}
		}
	}
	m.buffers = newBufs
	m.codec = CodecNone
	m.bodyLength = total
	return out, nil
}

// appendZstdTasks splits a zstd buffer by frames when every frame states
// its content size and the sizes add up; otherwise it is one task.
func appendZstdTasks(tasks []decodeTask, b *decodeBuf) []decodeTask {
	frames, err := zstdFrames(b.src)
	whole := err != nil || len(frames) < 2
	var sum int64
	for _, f := range frames {
		if f.size < 0 {
			whole = true
		}
		sum += f.size
	}
	if whole || sum != int64(len(b.dst)) {
		return append(tasks, decodeTask{buf: b, n: 1})
	}
	b.frames = frames
	lo, out := 0, int64(0)
	for hi := range frames {
		out += frames[hi].size
		if out >= pieceSize || hi == len(frames)-1 {
			tasks = append(tasks, decodeTask{buf: b, lo: lo, hi: hi + 1, n: -1})
			lo, out = hi+1, 0
		}
	}
	return tasks
}

func (t decodeTask) run() error {
	b := t.buf
	switch b.codec {
	case CodecNone:
		per := (len(b.dst) + t.n - 1) / t.n
		lo, hi := t.i*per, min(len(b.dst), (t.i+1)*per)
		copy(b.dst[lo:hi], b.src[lo:hi])
		return nil
	case CodecLZ4:
		err := b.lz4.decodePiece(t.i, t.n)
		if errors.Is(err, errLZ4Irregular) {
			b.irregular.Store(true)
			return nil
		}
		return err
	case CodecZSTD:
		if t.n == 1 {
			return zstdDecodeInto(b.src, b.dst)
		}
		var off int64
		for _, f := range b.frames[:t.lo] {
			off += f.size
		}
		for _, f := range b.frames[t.lo:t.hi] {
			if err := zstdDecodeInto(b.src[f.start:f.end], b.dst[off:off+f.size]); err != nil {
				return err
			}
			off += f.size
		}
		return nil
	}
	return fmt.Errorf("unknown codec %v", b.codec)
}
