package ipcx

import (
	"encoding/binary"
	"fmt"
	"testing"

	ddzstd "github.com/DataDog/zstd"
	"github.com/klauspost/compress/zstd"
)

// str20Buffers are the two buffers of one str20 column batch (the link
// benchmark's strings, 'val_' || (i*k % 100000)): the string data and the
// int32 offsets.
func str20Buffers(rows, k int) (data, offsets []byte) {
	offsets = make([]byte, 4*(rows+1))
	for i := range rows {
		binary.LittleEndian.PutUint32(offsets[4*i:], uint32(len(data)))
		data = fmt.Appendf(data, "val_%d", (i*k)%100000)
	}
	binary.LittleEndian.PutUint32(offsets[4*rows:], uint32(len(data)))
	return data, offsets
}

// BenchmarkZstdCompress compares the zstd library quiver compresses with
// (cgo, level 1) against klauspost/compress at its fastest level, on
// str20 buffers; ratio is compressed over raw bytes.
func BenchmarkZstdCompress(b *testing.B) {
	data, offsets := str20Buffers(49152, 7)
	kp, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	for _, buf := range []struct {
		name string
		src  []byte
	}{{"data", data}, {"offsets", offsets}} {
		dst := make([]byte, zstdMaxFrameLen(len(buf.src)))
		for _, enc := range []struct {
			name string
			do   func() int
		}{
			{"library", func() int {
				out, err := zstdCompress(dst, buf.src)
				if err != nil {
					b.Fatal(err)
				}
				return len(out)
			}},
			{"klauspost", func() int { return len(kp.EncodeAll(buf.src, dst[:0])) }},
		} {
			b.Run(buf.name+"/"+enc.name, func(b *testing.B) {
				b.SetBytes(int64(len(buf.src)))
				var n int
				for b.Loop() {
					n = enc.do()
				}
				b.ReportMetric(float64(n)/float64(len(buf.src)), "ratio")
			})
		}
	}
}

// BenchmarkZstdDecompress decodes the library's frames of str20 buffers
// with klauspost/compress, which quiver decodes with, and with the
// library.
func BenchmarkZstdDecompress(b *testing.B) {
	data, offsets := str20Buffers(49152, 7)
	for _, buf := range []struct {
		name string
		src  []byte
	}{{"data", data}, {"offsets", offsets}} {
		frame, err := zstdCompress(make([]byte, zstdMaxFrameLen(len(buf.src))), buf.src)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, len(buf.src))
		b.Run(buf.name+"/klauspost", func(b *testing.B) {
			b.SetBytes(int64(len(buf.src)))
			for b.Loop() {
				if err := zstdDecodeInto(frame, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(buf.name+"/library", func(b *testing.B) {
			c := ddzstd.NewCtx()
			b.SetBytes(int64(len(buf.src)))
			for b.Loop() {
				if _, err := c.DecompressInto(dst, frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
