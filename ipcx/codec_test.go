package ipcx

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pierrec/lz4/v4"
	"github.com/quiverdata/quiver/internal/testmem"
)

// testBatch builds rows of an int + string batch with nulls, a list and a
// struct column, deterministic from seed.
func testBatch(t testing.TB, mem memory.Allocator, rows int, seed uint64) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "pt", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	r := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 3)
		if i%17 == 0 {
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name_%d", r.IntN(5000)))
			b.Field(2).(*array.Float64Builder).Append(float64(r.IntN(1000)) / 8)
		}
		lb := b.Field(3).(*array.ListBuilder)
		lb.Append(true)
		for k := 0; k < i%3; k++ {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + k))
		}
		sb := b.Field(4).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i % 100))
	}
	return b.NewRecordBatch()
}

// randomBatch is one binary column of random, incompressible bytes and
// one compressible int column.
func randomBatch(t testing.TB, mem memory.Allocator, rows int) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "noise", Type: arrow.BinaryTypes.Binary},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	r := rand.New(rand.NewPCG(7, 7))
	val := make([]byte, 64)
	for i := 0; i < rows; i++ {
		for k := range val {
			val[k] = byte(r.Uint32())
		}
		b.Field(0).(*array.BinaryBuilder).Append(val)
		b.Field(1).(*array.Int64Builder).Append(int64(i % 10))
	}
	return b.NewRecordBatch()
}

// writeQuiver writes recs as an IPC stream with quiver's writer.
func writeQuiver(t testing.TB, comp Compression, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewStreamWriter(&buf, comp, ipc.WithSchema(recs[0].Schema()))
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return buf.Bytes()
}

// writeArrow writes recs with arrow-go's own compressing writer.
func writeArrow(t testing.TB, codec Codec, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	opts := []ipc.Option{ipc.WithSchema(recs[0].Schema())}
	switch codec {
	case CodecLZ4:
		opts = append(opts, ipc.WithLZ4())
	case CodecZSTD:
		opts = append(opts, ipc.WithZstd())
	}
	w := ipc.NewWriter(&buf, opts...)
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("arrow write: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("arrow close: %v", err)
	}
	return buf.Bytes()
}

// readAll reads every batch of an IPC stream with rdr and checks each
// against want.
func checkStream(t *testing.T, rdr *ipc.Reader, want []arrow.RecordBatch) {
	t.Helper()
	defer rdr.Release()
	i := 0
	for rdr.Next() {
		if i >= len(want) {
			t.Fatalf("got more than %d batches", len(want))
		}
		if got := rdr.RecordBatch(); !array.RecordEqual(got, want[i]) {
			t.Fatalf("batch %d differs:\ngot  %v\nwant %v", i, got, want[i])
		}
		i++
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("read: %v", err)
	}
	if i != len(want) {
		t.Fatalf("got %d batches, want %d", i, len(want))
	}
}

func TestStreamWriter_StockReaderReads(t *testing.T) {
	mem := testmem.Checked(t)
	big := testBatch(t, mem, 300_000, 1) // buffers of several MB: many pieces and frames
	defer big.Release()
	small := testBatch(t, mem, 100, 2)
	defer small.Release()
	sliced := big.NewSlice(1234, 5678) // offsets that do not start at zero
	defer sliced.Release()
	empty := big.NewSlice(0, 0)
	defer empty.Release()
	recs := []arrow.RecordBatch{big, small, sliced, empty}
	for _, codec := range []Codec{CodecLZ4, CodecZSTD} {
		t.Run(codec.String(), func(t *testing.T) {
			data := writeQuiver(t, Compression{Codec: codec}, recs...)
			rdr, err := ipc.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			checkStream(t, rdr, recs)
			if plain := writeArrow(t, CodecNone, recs...); len(data) >= len(plain)*3/4 {
				t.Errorf("compressed stream is %d bytes, uncompressed %d: want less than 3/4", len(data), len(plain))
			}
		})
	}
}

func TestNewReader_ReadsArrowAndQuiverStreams(t *testing.T) {
	mem := testmem.Checked(t)
	big := testBatch(t, mem, 200_000, 3)
	defer big.Release()
	small := testBatch(t, mem, 10, 4)
	defer small.Release()
	noise := randomBatch(t, mem, 5000)
	defer noise.Release()
	recs := []arrow.RecordBatch{big, small}
	for _, codec := range []Codec{CodecNone, CodecLZ4, CodecZSTD} {
		for _, writer := range []string{"arrow-go", "quiver"} {
			t.Run(codec.String()+"/"+writer, func(t *testing.T) {
				var data []byte
				if writer == "quiver" {
					data = writeQuiver(t, Compression{Codec: codec}, recs...)
				} else {
					data = writeArrow(t, codec, recs...)
				}
				rmem := testmem.Checked(t)
				rdr, err := NewReader(bytes.NewReader(data), rmem)
				if err != nil {
					t.Fatal(err)
				}
				checkStream(t, rdr, recs)
			})
		}
	}
	t.Run("incompressible", func(t *testing.T) {
		for _, codec := range []Codec{CodecLZ4, CodecZSTD} {
			rdr, err := NewReader(bytes.NewReader(writeQuiver(t, Compression{Codec: codec}, noise)), nil)
			if err != nil {
				t.Fatal(err)
			}
			checkStream(t, rdr, []arrow.RecordBatch{noise})
		}
	})
}

// bodyBuffers returns, for each batch message of an IPC stream, its
// header and each buffer's length prefix (-2 for an empty buffer).
func bodyBuffers(t *testing.T, data []byte) (metas []*batchMeta, prefixes [][]int64) {
	t.Helper()
	r := bytes.NewReader(data)
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			t.Fatalf("read message: %v", err)
		}
		n := binary.LittleEndian.Uint32(hdr[4:])
		if n == 0 {
			return metas, prefixes
		}
		meta := make([]byte, n)
		io.ReadFull(r, meta)
		bodyLen, err := fbBodyLength(meta)
		if err != nil {
			t.Fatal(err)
		}
		body := make([]byte, bodyLen)
		io.ReadFull(r, body)
		m, err := parseBatchMeta(meta)
		if err != nil {
			continue
		}
		var pre []int64
		for _, b := range m.buffers {
			if b.length == 0 || m.codec == CodecNone {
				pre = append(pre, -2)
				continue
			}
			pre = append(pre, int64(binary.LittleEndian.Uint64(body[b.offset:])))
		}
		metas = append(metas, m)
		prefixes = append(prefixes, pre)
	}
}

func TestStreamWriter_SkipsBuffersThatDoNotShrink(t *testing.T) {
	mem := testmem.Checked(t)
	noise := randomBatch(t, mem, 20_000)
	defer noise.Release()
	for _, codec := range []Codec{CodecLZ4, CodecZSTD} {
		t.Run(codec.String(), func(t *testing.T) {
			metas, prefixes := bodyBuffers(t, writeQuiver(t, Compression{Codec: codec}, noise))
			if len(metas) != 1 {
				t.Fatalf("got %d batches, want 1", len(metas))
			}
			if got := metas[0].codec; got != codec {
				t.Fatalf("batch codec %v, want %v", got, codec)
			}
			// Buffers: noise validity, offsets, data; n validity, data.
			pre := prefixes[0]
			if pre[2] != -1 {
				t.Errorf("random bytes buffer: length prefix %d, want -1 (sent raw)", pre[2])
			}
			if pre[4] <= 0 {
				t.Errorf("repetitive int buffer: length prefix %d, want its uncompressed length", pre[4])
			}
			rdr, err := ipc.NewReader(bytes.NewReader(writeQuiver(t, Compression{Codec: codec}, noise)))
			if err != nil {
				t.Fatal(err)
			}
			checkStream(t, rdr, []arrow.RecordBatch{noise})
		})
	}
	t.Run("whole batch incompressible", func(t *testing.T) {
		schema := arrow.NewSchema([]arrow.Field{{Name: "noise", Type: arrow.BinaryTypes.Binary}}, nil)
		rec := array.NewRecordBatch(schema, []arrow.Array{noise.Column(0)}, noise.NumRows())
		defer rec.Release()
		metas, _ := bodyBuffers(t, writeQuiver(t, Compression{Codec: CodecLZ4}, rec))
		if got := metas[0].codec; got != CodecNone {
			t.Errorf("batch codec %v, want none: no buffer shrank", got)
		}
	})
}

// TestDecompress_ParallelEqualsSerial decompresses the same message with
// one core and with many, and against arrow-go's reader.
func TestDecompress_ParallelEqualsSerial(t *testing.T) {
	mem := memory.NewGoAllocator()
	rec := testBatch(t, mem, 400_000, 9)
	defer rec.Release()
	for _, codec := range []Codec{CodecLZ4, CodecZSTD} {
		for _, writer := range []string{"arrow-go", "quiver"} {
			t.Run(codec.String()+"/"+writer, func(t *testing.T) {
				var data []byte
				if writer == "quiver" {
					data = writeQuiver(t, Compression{Codec: codec}, rec)
				} else {
					data = writeArrow(t, codec, rec)
				}
				header, body := batchMessage(t, data)
				_, par, _, err := Decompress(header, body, nil)
				if err != nil {
					t.Fatal(err)
				}
				old := setProcs(1)
				_, ser, _, err := Decompress(header, body, nil)
				setProcs(old)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(par, ser) {
					t.Fatal("parallel and serial decompression differ")
				}
				rdr, err := NewReader(bytes.NewReader(data), nil)
				if err != nil {
					t.Fatal(err)
				}
				checkStream(t, rdr, []arrow.RecordBatch{rec})
			})
		}
	}
}

// batchMessage returns the first batch message of an IPC stream.
func batchMessage(t *testing.T, data []byte) (header, body []byte) {
	t.Helper()
	for len(data) > 8 {
		n := int(binary.LittleEndian.Uint32(data[4:]))
		meta := data[8 : 8+n]
		bodyLen, err := fbBodyLength(meta)
		if err != nil {
			t.Fatal(err)
		}
		body := data[8+n : 8+n+int(bodyLen)]
		if _, err := parseBatchMeta(meta); err == nil {
			return meta, body
		}
		data = data[8+n+int(bodyLen):]
	}
	t.Fatal("no batch in stream")
	return nil, nil
}

func TestLZ4Decoder_ForeignFrames(t *testing.T) {
	src := make([]byte, 700_000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = "abcdefgh"[r.IntN(8)]
	}
	frame := func(opts ...lz4.Option) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(opts...); err != nil {
			t.Fatal(err)
		}
		w.Write(src)
		w.Close()
		return buf.Bytes()
	}
	// shortBlocks is a frame of independent blocks of 50,000 bytes: not
	// full 64 KiB blocks, so the parallel layout does not hold.
	shortBlocks := func(src []byte) []byte {
		out := append([]byte(nil), lz4Header[:]...)
		for off := 0; off < len(src); off += 50_000 {
			blk := src[off:min(len(src), off+50_000)]
			dst := make([]byte, lz4.CompressBlockBound(len(blk)))
			n, _ := lz4.CompressBlock(blk, dst, nil)
			out = binary.LittleEndian.AppendUint32(out, uint32(n))
			out = append(out, dst[:n]...)
		}
		return binary.LittleEndian.AppendUint32(out, 0)
	}
	cases := map[string][]byte{
		"pierrec default":     frame(),
		"block 64k":           frame(lz4.BlockSizeOption(lz4.Block64Kb)),
		"block 4M":            frame(lz4.BlockSizeOption(lz4.Block4Mb)),
		"checksums":           frame(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(true), lz4.BlockChecksumOption(true)),
		"content size":        frame(lz4.SizeOption(uint64(len(src)))),
		"short blocks":        shortBlocks(src),
		"short blocks 100k":   shortBlocks(src[:100_000]),
		"two frames":          append(frame(lz4.SizeOption(uint64(len(src)))), frame()...),
		"quiver encode":       quiverLZ4(src),
		"quiver encode small": quiverLZ4(src[:1000]),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			want := src
			if name == "two frames" {
				want = append(append([]byte(nil), src...), src...)
			}
			switch name {
			case "quiver encode small":
				want = src[:1000]
			case "short blocks 100k":
				want = src[:100_000]
			}
			got := make([]byte, len(want))
			d, err := newLZ4Decoder(in, got)
			if err != nil {
				t.Fatal(err)
			}
			buf := &decodeBuf{codec: CodecLZ4, src: in, dst: got, lz4: d}
			n := d.pieces(128 << 10)
			for i := 0; i < n; i++ {
				if err := (decodeTask{buf: buf, i: i, n: n}).run(); err != nil {
					t.Fatal(err)
				}
			}
			if buf.irregular.Load() {
				if err := d.decodeSerial(); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatal("decoded bytes differ")
			}
			// pierrec's reader agrees on quiver's frames.
			if name == "quiver encode" {
				back, err := io.ReadAll(lz4.NewReader(bytes.NewReader(in)))
				if err != nil || !bytes.Equal(back, src) {
					t.Fatalf("pierrec reader: %v", err)
				}
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		in := quiverLZ4(src)
		for _, cut := range []int{3, 8, len(in) / 2, len(in) - 1} {
			got := make([]byte, len(src))
			if d, err := newLZ4Decoder(in[:cut], got); err == nil {
				if err := d.decodeSerial(); err == nil {
					t.Errorf("truncated at %d: no error", cut)
				}
			}
		}
	})
}

// quiverLZ4 is one LZ4 frame as quiver's writer lays it out.
func quiverLZ4(src []byte) []byte {
	dst := make([]byte, lz4MaxBlocksLen(len(src)))
	n := lz4EncodeBlocks(dst, src)
	out := append(append([]byte(nil), lz4Header[:]...), dst[:n]...)
	return binary.LittleEndian.AppendUint32(out, 0)
}

func TestXXH32(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
	}{
		{"", 0x02CC5D05},
		{"a", 0x550D7456},
		{"abc", 0x32D153FF},
		{"Nobody inspects the spammish repetition", 0xE2293B2F},
	} {
		if got := xxh32([]byte(c.in), 0); got != c.want {
			t.Errorf("xxh32(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

func TestZstdFrames(t *testing.T) {
	src := bytes.Repeat([]byte("quiver zstd frames "), 200_000)
	var in []byte
	var sizes []int64
	for off := 0; off < len(src); off += 1 << 20 {
		chunk := src[off:min(len(src), off+1<<20)]
		frame, err := zstdCompress(make([]byte, zstdMaxFrameLen(len(chunk))), chunk)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, frame...)
		sizes = append(sizes, int64(len(chunk)))
	}
	frames, err := zstdFrames(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != len(sizes) {
		t.Fatalf("got %d frames, want %d", len(frames), len(sizes))
	}
	for i, f := range frames {
		if f.size != sizes[i] {
			t.Errorf("frame %d: size %d, want %d", i, f.size, sizes[i])
		}
	}
	if frames[len(frames)-1].end != len(in) {
		t.Errorf("last frame ends at %d, want %d", frames[len(frames)-1].end, len(in))
	}
}

func TestDecompress_RejectsMalformed(t *testing.T) {
	mem := memory.NewGoAllocator()
	rec := testBatch(t, mem, 5000, 5)
	defer rec.Release()
	for _, codec := range []Codec{CodecLZ4, CodecZSTD} {
		header, body := batchMessage(t, writeQuiver(t, Compression{Codec: codec}, rec))
		m, _ := parseBatchMeta(header)
		// Damage every compressed buffer's payload.
		for _, b := range m.buffers {
			if b.length > 16 && int64(binary.LittleEndian.Uint64(body[b.offset:])) >= 0 {
				bad := append([]byte(nil), body...)
				for k := b.offset + 8; k < b.offset+b.length; k++ {
					bad[k] ^= 0x5A
				}
				if _, _, _, err := Decompress(header, bad, nil); err == nil {
					t.Errorf("%v: damaged buffer at %d: no error", codec, b.offset)
				}
			}
		}
		for _, cut := range []int{0, 7, len(header) / 2} {
			if _, _, _, err := Decompress(header[:cut], body, nil); err == nil && cut < 8 {
				t.Errorf("%v: header cut at %d: no error", codec, cut)
			}
		}
		if _, _, _, err := Decompress(header, body[:len(body)/2], nil); err == nil {
			t.Errorf("%v: short body: no error", codec)
		}
	}
}

func setProcs(n int) int { return runtime.GOMAXPROCS(n) }

func TestStreamWriter_Dictionaries(t *testing.T) {
	mem := testmem.Checked(t)
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	db := b.Field(0).(*array.BinaryDictionaryBuilder)
	for i := 0; i < 50_000; i++ {
		if err := db.AppendString(fmt.Sprintf("category-%03d", i%300)); err != nil {
			t.Fatal(err)
		}
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, comp := range []Compression{{Codec: CodecLZ4}, {Codec: CodecZSTD}, {Auto: true}} {
		t.Run(comp.String(), func(t *testing.T) {
			data := writeQuiver(t, comp, rec)
			stock, err := ipc.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			checkStream(t, stock, []arrow.RecordBatch{rec})
			ours, err := NewReader(bytes.NewReader(data), nil)
			if err != nil {
				t.Fatal(err)
			}
			checkStream(t, ours, []arrow.RecordBatch{rec})
		})
	}
}

// FuzzDecompress feeds damaged messages to the decoder: it must return an
// error or a body, never panic or allocate past MaxDecompressedBody.
func FuzzDecompress(f *testing.F) {
	mem := memory.NewGoAllocator()
	rec := testBatch(f, mem, 3000, 11)
	defer rec.Release()
	for _, codec := range []Codec{CodecLZ4, CodecZSTD} {
		header, body := batchMessageTB(f, writeQuiver(f, Compression{Codec: codec}, rec))
		f.Add(header, body)
		header, body = batchMessageTB(f, writeArrow(f, codec, rec))
		f.Add(header, body)
	}
	f.Fuzz(func(t *testing.T, header, body []byte) {
		Decompress(header, body, func(n int) []byte {
			if n > 64<<20 {
				t.Skip("large claimed body")
			}
			return make([]byte, n)
		})
	})
}

func batchMessageTB(tb testing.TB, data []byte) (header, body []byte) {
	tb.Helper()
	for len(data) > 8 {
		n := int(binary.LittleEndian.Uint32(data[4:]))
		meta := data[8 : 8+n]
		bodyLen, err := fbBodyLength(meta)
		if err != nil {
			tb.Fatal(err)
		}
		b := data[8+n : 8+n+int(bodyLen)]
		if _, err := parseBatchMeta(meta); err == nil {
			return meta, b
		}
		data = data[8+n+int(bodyLen):]
	}
	tb.Fatal("no batch in stream")
	return nil, nil
}

func TestBufCache(t *testing.T) {
	c := &bufCache{maxBytes: 10 << 20}
	a := c.get(4 << 20)
	c.put(a)
	if b := c.get(3 << 20); cap(b) != cap(a) {
		t.Errorf("get(3 MB) after put(4 MB): cap %d, want the kept %d", cap(b), cap(a))
	}
	c.put(a)
	if b := c.get(1 << 10); cap(b) >= 4<<20 {
		t.Errorf("get(1 KB) handed out a %d-byte buffer", cap(b))
	}
	for i := 0; i < 5; i++ {
		c.put(make([]byte, 3<<20))
	}
	if c.held > c.maxBytes {
		t.Errorf("holds %d bytes, more than %d", c.held, c.maxBytes)
	}
	c.put(make([]byte, 20<<20))
	if c.held > c.maxBytes {
		t.Errorf("holds %d bytes after an oversized put, more than %d", c.held, c.maxBytes)
	}
}

// TestStreamWriter_MultiFrameZstd checks a buffer large enough to be
// written as several zstd frames is read back by arrow-go's reader.
func TestStreamWriter_MultiFrameZstd(t *testing.T) {
	mem := testmem.Checked(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	nb := b.Field(0).(*array.Int64Builder)
	for i := 0; i < 1_500_000; i++ { // 12 MB: three frames
		nb.Append(int64(i) * 31)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := writeQuiver(t, Compression{Codec: CodecZSTD}, rec)
	header, body := batchMessage(t, data)
	m, err := parseBatchMeta(header)
	if err != nil {
		t.Fatal(err)
	}
	buf := m.buffers[1]
	frames, err := zstdFrames(body[buf.offset+8 : buf.offset+buf.length])
	if err != nil || len(frames) < 2 {
		t.Fatalf("data buffer: %d frames, %v; want several", len(frames), err)
	}
	rdr, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	checkStream(t, rdr, []arrow.RecordBatch{rec})
}
