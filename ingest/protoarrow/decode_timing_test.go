package protoarrow

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/quiverdata/quiver/mempool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// benchBatchRows is the batch size the ingest pipeline flushes at: DuckDB's
// row group.
const benchBatchRows = 122_880

// flat14Messages returns n Flat14 messages with realistic values: growing
// ids and timestamps, small counters and short strings.
func flat14Messages(b *testing.B, n int) [][]byte {
	md := compileT(b, "flat.proto", "Flat14")
	r := rand.New(rand.NewPCG(14, 14))
	devices := []string{"mobile", "desktop", "tablet", "ctv"}
	countries := []string{"DE", "US", "FR", "BR", "JP"}
	out := make([][]byte, n)
	for i := range out {
		m := newMessage(md)
		set(m, "id", 1_000_000+i)
		set(m, "ts_ms", 1_740_000_000_000+int(r.IntN(3_600_000)))
		set(m, "campaign_id", r.IntN(5000))
		set(m, "impressions", r.IntN(1_000_000))
		set(m, "delta", r.IntN(2000)-1000)
		set(m, "bid_micros", r.IntN(5_000_000))
		set(m, "region", r.IntN(300))
		set(m, "width", []int{300, 728, 160, 320}[r.IntN(4)])
		set(m, "height", []int{250, 90, 600, 50}[r.IntN(4)])
		set(m, "score", r.IntN(200)-100)
		set(m, "device", devices[r.IntN(len(devices))])
		set(m, "country", countries[r.IntN(len(countries))])
		set(m, "publisher", fmt.Sprintf("pub-%05d", r.IntN(20000)))
		set(m, "url", fmt.Sprintf("https://news.example.com/section/%d/article-%d.html", r.IntN(50), r.IntN(100000)))
		out[i] = marshalT(b, m)
	}
	return out
}

// benchDecode appends msgs round robin, flushing every benchBatchRows rows
// as the pipeline does, and reports messages per second. The memory is
// recycled, as in the pipeline.
func benchDecode(b *testing.B, md protoreflect.MessageDescriptor, msgs [][]byte, opts ...Option) {
	d, err := NewDecoder(md, mempool.New(), opts...)
	if err != nil {
		b.Fatalf("NewDecoder: %v", err)
	}
	benchDecoder(b, d, msgs)
}

func benchDecoder(b *testing.B, d *Decoder, msgs [][]byte) {
	defer d.Release()
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	b.SetBytes(int64(size / len(msgs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Append(msgs[i%len(msgs)]); err != nil {
			b.Fatalf("Append: %v", err)
		}
		if d.Len() == benchBatchRows {
			d.NewRecord().Release()
			if rec := d.NewNormalizedRecord(); rec != nil {
				rec.Release()
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkDecoder_Flat14 takes the flat decoder's one pass.
func BenchmarkDecoder_Flat14(b *testing.B) {
	benchDecode(b, compileT(b, "flat.proto", "Flat14"), flat14Messages(b, 1024))
}

// BenchmarkDecoder_Flat14General decodes the same messages the general
// way, through frames and builders.
func BenchmarkDecoder_Flat14General(b *testing.B) {
	md := compileT(b, "flat.proto", "Flat14")
	benchDecoder(b, newGeneralDecoder(b, md, mempool.New()), flat14Messages(b, 1024))
}

// BenchmarkUnmarshal_Flat14Dynamicpb is the reflection baseline: proto.Unmarshal
// into a reused dynamicpb message, without building any Arrow data.
func BenchmarkUnmarshal_Flat14Dynamicpb(b *testing.B) {
	md := compileT(b, "flat.proto", "Flat14")
	msgs := flat14Messages(b, 1024)
	m := dynamicpb.NewMessage(md)
	b.SetBytes(int64(len(msgs[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		proto.Reset(m)
		if err := proto.Unmarshal(msgs[i%len(msgs)], m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// nestedMessages returns random BidRequests.
func nestedMessages(b *testing.B, md protoreflect.MessageDescriptor, n int) [][]byte {
	r := rand.New(rand.NewPCG(21, 21))
	out := make([][]byte, n)
	for i := range out {
		out[i] = marshalT(b, randomMessage(r, md))
	}
	return out
}

func BenchmarkDecoder_Nested(b *testing.B) {
	md := compileT(b, "all.proto", "BidRequest")
	benchDecode(b, md, nestedMessages(b, md, 1024))
}

func BenchmarkDecoder_NestedNormalized(b *testing.B) {
	md := compileT(b, "all.proto", "BidRequest")
	benchDecode(b, md, nestedMessages(b, md, 1024),
		WithNormalizer("id, imp[].id AS imp, imp[].pmp.deals[].id AS deal, imp[].pmp.deals[].bidfloor, imp[].pmp.deals[].wseat[] AS seat"))
}
