package stages

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/ingest/protoarrow"
)

// messages makes n messages from a pool of distinct ones.
func messages(md protoreflect.MessageDescriptor, n int, gen func(protoreflect.MessageDescriptor, *rand.Rand, int) []byte) ([][]byte, int64) {
	const pool = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	distinct := make([][]byte, min(pool, n))
	for i := range distinct {
		distinct[i] = gen(md, rng, i)
	}
	out := make([][]byte, n)
	var total int64
	for i := range out {
		out[i] = distinct[i%len(distinct)]
		total += int64(len(out[i]))
	}
	return out, total
}

// nestedMessage builds one random bid request.
func nestedMessage(md protoreflect.MessageDescriptor, rng *rand.Rand, i int) []byte {
	m := dynamicpb.NewMessage(md)
	f := md.Fields()
	str := func(name, v string) { m.Set(f.ByName(protoreflect.Name(name)), protoreflect.ValueOfString(v)) }
	str("id", fmt.Sprintf("req-%08d", i))
	ts := dynamicpb.NewMessage(f.ByName("at").Message())
	ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1_740_000_000+int64(i)))
	m.Set(f.ByName("at"), protoreflect.ValueOfMessage(ts))
	m.Set(f.ByName("user_id"), protoreflect.ValueOfInt64(rng.Int64N(1e9)))
	str("country", []string{"US", "CA", "FR", "DE", "JP", "BR"}[rng.IntN(6)])
	str("device", []string{"phone", "tablet", "screen", "billboard"}[rng.IntN(4)])
	m.Set(f.ByName("width"), protoreflect.ValueOfInt32(int32(320+rng.IntN(1600))))
	m.Set(f.ByName("height"), protoreflect.ValueOfInt32(int32(240+rng.IntN(900))))
	m.Set(f.ByName("floor_price"), protoreflect.ValueOfFloat64(rng.Float64()*5))
	m.Set(f.ByName("test"), protoreflect.ValueOfBool(rng.IntN(50) == 0))
	m.Set(f.ByName("publisher_id"), protoreflect.ValueOfInt64(rng.Int64N(10_000)))
	str("site", fmt.Sprintf("site-%d.example", rng.IntN(500)))
	m.Set(f.ByName("tmax"), protoreflect.ValueOfUint32(uint32(100+rng.IntN(400))))
	cats := m.Mutable(f.ByName("categories")).List()
	for range rng.IntN(4) {
		cats.Append(protoreflect.ValueOfString(fmt.Sprintf("IAB%d", rng.IntN(26))))
	}
	imd := f.ByName("imps").Message()
	dmd := imd.Fields().ByName("deals").Message()
	imps := m.Mutable(f.ByName("imps")).List()
	for j := range 1 + rng.IntN(3) {
		imp := dynamicpb.NewMessage(imd)
		imp.Set(imd.Fields().ByName("id"), protoreflect.ValueOfString(fmt.Sprint(j+1)))
		imp.Set(imd.Fields().ByName("bid_floor"), protoreflect.ValueOfFloat64(rng.Float64()))
		deals := imp.Mutable(imd.Fields().ByName("deals")).List()
		for k := range rng.IntN(4) {
			d := dynamicpb.NewMessage(dmd)
			d.Set(dmd.Fields().ByName("id"), protoreflect.ValueOfString(fmt.Sprintf("deal-%d-%d", j, k)))
			d.Set(dmd.Fields().ByName("price"), protoreflect.ValueOfFloat64(rng.Float64()*10))
			seats := d.Mutable(dmd.Fields().ByName("seats")).List()
			for s := range 1 + rng.IntN(3) {
				seats.Append(protoreflect.ValueOfString(fmt.Sprintf("seat-%d", s)))
			}
			deals.Append(protoreflect.ValueOfMessage(d))
		}
		imps.Append(protoreflect.ValueOfMessage(imp))
	}
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err) // a dynamic message of a compiled descriptor always marshals
	}
	return b
}

// flatMessage builds one random flat message.
func flatMessage(md protoreflect.MessageDescriptor, rng *rand.Rand, i int) []byte {
	m := dynamicpb.NewMessage(md)
	f := md.Fields()
	set := func(name string, v protoreflect.Value) { m.Set(f.ByName(protoreflect.Name(name)), v) }
	set("id", protoreflect.ValueOfInt64(int64(i)))
	set("ts_ms", protoreflect.ValueOfInt64(1_740_000_000_000+int64(i)))
	set("user_id", protoreflect.ValueOfInt64(rng.Int64N(1e9)))
	set("country", protoreflect.ValueOfString([]string{"US", "CA", "FR", "DE", "JP", "BR"}[rng.IntN(6)]))
	set("device", protoreflect.ValueOfString([]string{"phone", "tablet", "screen", "billboard"}[rng.IntN(4)]))
	set("width", protoreflect.ValueOfInt32(int32(320+rng.IntN(1600))))
	set("height", protoreflect.ValueOfInt32(int32(240+rng.IntN(900))))
	set("floor_price", protoreflect.ValueOfFloat64(rng.Float64()*5))
	set("test", protoreflect.ValueOfBool(rng.IntN(50) == 0))
	set("publisher_id", protoreflect.ValueOfInt64(rng.Int64N(10_000)))
	set("site", protoreflect.ValueOfString(fmt.Sprintf("site-%d.example", rng.IntN(500))))
	set("tmax", protoreflect.ValueOfUint32(uint32(100+rng.IntN(400))))
	set("bid", protoreflect.ValueOfFloat64(rng.Float64()*10))
	set("campaign_id", protoreflect.ValueOfInt64(rng.Int64N(100_000)))
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err) // a dynamic message of a compiled descriptor always marshals
	}
	return b
}

// FlatPool compiles the flat benchmark message (FlatMessage) in dir and
// returns its descriptor and a pool of n distinct messages of it, for
// suites that produce the benchmark's messages at a rate of their own.
func FlatPool(ctx context.Context, dir string, n int) (protoreflect.MessageDescriptor, [][]byte, error) {
	path := filepath.Join(dir, "bench.proto")
	if err := os.WriteFile(path, benchProto, 0o644); err != nil {
		return nil, nil, err
	}
	md, err := protoarrow.Compile(ctx, path, nil, FlatMessage)
	if err != nil {
		return nil, nil, err
	}
	vals, _ := messages(md, n, flatMessage)
	return md, vals, nil
}
