package ipcx

import (
	"fmt"
	"testing"

	ddzstd "github.com/DataDog/zstd"
	"github.com/klauspost/compress/zstd"
)

func BenchmarkZZLevels(b *testing.B) {
	data, offsets := str20Buffers(49152, 7)
	c := ddzstd.NewCtx()
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	for _, buf := range []struct {
		name string
		src  []byte
	}{{"data", data}, {"offsets", offsets}} {
		dst := make([]byte, zstdMaxFrameLen(len(buf.src)))
		for _, lvl := range []int{-7, -5, -3, -2, -1, 1} {
			b.Run(fmt.Sprintf("%s/c%d", buf.name, lvl), func(b *testing.B) {
				b.SetBytes(int64(len(buf.src)))
				var n int
				for b.Loop() {
					out, err := c.CompressLevel(dst, buf.src, lvl)
					if err != nil {
						b.Fatal(err)
					}
					n = len(out)
				}
				b.ReportMetric(float64(n)/float64(len(buf.src)), "ratio")
			})
			out, _ := c.CompressLevel(nil, buf.src, lvl)
			plain := make([]byte, 0, len(buf.src))
			b.Run(fmt.Sprintf("%s/d%d", buf.name, lvl), func(b *testing.B) {
				b.SetBytes(int64(len(buf.src)))
				for b.Loop() {
					if _, err := dec.DecodeAll(out, plain[:0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
