package ipcx

import (
	"encoding/binary"
	"time"
	"unsafe"

	"github.com/quiverdata/quiver/internal/panics"
)

// minCompressLen: buffers shorter than this are sent raw without trying;
// framing would eat what compression saves.
const minCompressLen = 256

var (
	// rawPrefix is the length prefix of a buffer sent uncompressed.
	rawPrefix = [8]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	zeroPad   [8]byte
)

// encodePiece is one parallel task: a piece of a buffer compressed into
// its own region of the arena, which has head bytes free in front (for
// the length prefix and LZ4 frame header) and tail bytes behind (end mark
// and padding).
type encodePiece struct {
	in         []byte
	out        []byte
	head, tail int
	n          int // bytes written after head
	// spilled: zstd wanted more room than the region, or failed (neither
	// is expected); the buffer is then sent raw.
	spilled bool
}

// encodeBuf is one body buffer.
type encodeBuf struct {
	src    []byte
	pieces []encodePiece // none: sent raw without trying
}

// encodeJob compresses the body of one batch message. start runs its
// pieces in the background; after done is closed, finish assembles the
// header and body.
type encodeJob struct {
	meta       *batchMeta
	codec      Codec
	minSavings float64
	bufs       []encodeBuf
	tasks      []*encodePiece
	arena      []byte

	done    chan struct{}
	began   time.Time
	elapsed time.Duration
	// err is a panic of the compression, read after done is closed.
	err error
}

// newEncodeJob plans the compression of a batch whose header is m and
// whose buffers' bytes are srcs (in header order).
func newEncodeJob(m *batchMeta, srcs [][]byte, codec Codec, minSavings float64) *encodeJob {
	j := &encodeJob{meta: m, codec: codec, minSavings: minSavings, bufs: make([]encodeBuf, len(srcs)), done: make(chan struct{})}
	total := 0
	for i, src := range srcs {
		j.bufs[i].src = src
		if len(src) < minCompressLen {
			continue
		}
		var pieces []encodePiece
		switch codec {
		case CodecLZ4:
			// Pieces are whole numbers of blocks: the frame is the same
			// as one writer would produce.
			per := pieceSize / lz4BlockSize * lz4BlockSize
			for off := 0; off < len(src); off += per {
				in := src[off:min(len(src), off+per)]
				pieces = append(pieces, encodePiece{in: in, n: lz4MaxBlocksLen(len(in))})
			}
			pieces[0].head = 8 + lz4HeaderLen
			pieces[len(pieces)-1].tail = lz4EndMark + 8
		case CodecZSTD:
			frames := max(1, (len(src)+zstdFrameSize/2)/zstdFrameSize)
			per := (len(src) + frames - 1) / frames
			for off := 0; off < len(src); off += per {
				in := src[off:min(len(src), off+per)]
				pieces = append(pieces, encodePiece{in: in, n: zstdMaxFrameLen(len(in))})
			}
			pieces[0].head = 8
			pieces[len(pieces)-1].tail = 8
		}
		for k := range pieces {
			total += pieces[k].head + pieces[k].n + pieces[k].tail
		}
		j.bufs[i].pieces = pieces
	}
	j.arena = getArena(total)
	off := 0
	for i := range j.bufs {
		for k := range j.bufs[i].pieces {
			p := &j.bufs[i].pieces[k]
			size := p.head + p.n + p.tail
			p.out = j.arena[off : off+size : off+size]
			p.n = 0
			off += size
			j.tasks = append(j.tasks, p)
		}
	}
	return j
}

// start compresses the pieces on a goroutine of its own, which ends when
// done is closed. A panic of the compression is left in err.
func (j *encodeJob) start() {
	j.began = time.Now()
	go func() {
		defer close(j.done)
		j.err = panics.Catch(func() error {
			return runTasks(len(j.tasks), func(i int) error {
				j.tasks[i].encode(j.codec)
				return nil
			})
		})
		j.elapsed = time.Since(j.began)
	}()
}

func (p *encodePiece) encode(codec Codec) {
	room := p.out[p.head : len(p.out)-p.tail]
	switch codec {
	case CodecLZ4:
		p.n = lz4EncodeBlocks(room, p.in)
	case CodecZSTD:
		got, err := zstdCompress(room, p.in)
		if err != nil || len(got) > len(room) || (len(got) > 0 && unsafe.SliceData(got) != unsafe.SliceData(room)) {
			p.spilled = true
			return
		}
		p.n = len(got)
	}
}

// finish lays out the compressed body after done is closed: each buffer
// compressed, or raw when it saves less than minSavings. It returns the
// new header and body slices, or ok false when no buffer shrank (the
// batch then goes out as it came). The slices alias the arena and the
// sources.
func (j *encodeJob) finish() (header []byte, body [][]byte, ok bool) {
	m := j.meta
	newBufs := make([]ipcBuffer, len(j.bufs))
	var off int64
	for i := range j.bufs {
		b := &j.bufs[i]
		if len(b.src) == 0 {
			newBufs[i] = ipcBuffer{offset: off}
			continue
		}
		start := len(body)
		if n, compressed := b.layout(j.codec, j.minSavings); compressed {
			ok = true
			for k := range b.pieces {
				p := &b.pieces[k]
				from, to := p.head, p.head+p.n
				if k == 0 {
					from = 0
				}
				if k == len(b.pieces)-1 {
					to += p.tail
				}
				body = append(body, p.out[from:to])
			}
			newBufs[i] = ipcBuffer{offset: off, length: n}
		} else {
			body = append(body, rawPrefix[:], b.src)
			if pad := pad8(int64(len(b.src))) - int64(len(b.src)); pad > 0 {
				body = append(body, zeroPad[:pad])
			}
			newBufs[i] = ipcBuffer{offset: off, length: int64(8 + len(b.src))}
		}
		for _, s := range body[start:] {
			off += int64(len(s))
		}
	}
	if !ok {
		return nil, nil, false
	}
	m.buffers = newBufs
	m.codec = j.codec
	m.bodyLength = off
	return m.encode(), body, true
}

// layout decides whether b goes compressed and, if so, writes the length
// prefix, frame header, end mark and padding around its pieces and trims
// each piece's tail to what is sent. It returns the buffer's length in
// the header (without padding).
func (b *encodeBuf) layout(codec Codec, minSavings float64) (int64, bool) {
	if len(b.pieces) == 0 {
		return 0, false
	}
	payload := 0
	for _, p := range b.pieces {
		if p.spilled {
			return 0, false
		}
		payload += p.n
	}
	first, last := &b.pieces[0], &b.pieces[len(b.pieces)-1]
	end := 0 // framing bytes after the last piece's data
	if codec == CodecLZ4 {
		payload += lz4HeaderLen + lz4EndMark
		end = lz4EndMark
	}
	if float64(payload) > float64(len(b.src))*(1-minSavings) {
		return 0, false
	}
	binary.LittleEndian.PutUint64(first.out, uint64(len(b.src)))
	if codec == CodecLZ4 {
		copy(first.out[8:], lz4Header[:])
	}
	tail := last.out[last.head+last.n:]
	clear(tail[:end]) // the LZ4 end mark is a zero block size
	n := int64(8 + payload)
	pad := int(pad8(n) - n)
	clear(tail[end : end+pad])
	last.tail = end + pad
	return n, true
}

// probe compresses a sample of a batch's buffers (the start of each, up
// to max bytes in all) with each codec, on the calling goroutine, and
// reports the ratio and time: the auto chooser's estimate of codecs it
// has not used.
func probe(codecs []Codec, srcs [][]byte, limit int) []ProbeStat {
	// Pieces of at least 256 KiB: a codec is slower per byte on small
	// inputs than it is on a batch's buffers.
	var sample [][]byte
	per, total := max(256<<10, limit/max(1, len(srcs))), 0
	for _, s := range srcs {
		if len(s) >= minCompressLen && total < limit {
			n := min(len(s), per)
			sample = append(sample, s[:n])
			total += n
		}
	}
	if total == 0 {
		return nil
	}
	out := make([]ProbeStat, 0, len(codecs))
	dst := make([]byte, lz4MaxBlocksLen(per)+zstdMaxFrameLen(per))
	zstdCtxs() // made (and warmed) before the clock starts
	for _, c := range codecs {
		st := ProbeStat{Codec: c, Raw: int64(total)}
		start := time.Now()
		for _, s := range sample {
			switch c {
			case CodecLZ4:
				st.Wire += int64(lz4HeaderLen + lz4EndMark + lz4EncodeBlocks(dst, s))
			case CodecZSTD:
				out, err := zstdCompress(dst, s)
				if err != nil {
					return nil // the batch's own compression reports it
				}
				st.Wire += int64(len(out))
			}
		}
		st.Took = time.Since(start)
		out = append(out, st)
	}
	return out
}
