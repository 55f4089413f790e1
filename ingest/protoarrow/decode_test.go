package protoarrow

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// decodeAll appends msgs to a new decoder of md and returns the rows.
func decodeAll(t *testing.T, md protoreflect.MessageDescriptor, msgs ...[]byte) []map[string]any {
	t.Helper()
	mem := checkedMem()
	defer mem.AssertSize(t, 0)
	d, err := NewDecoder(md, mem)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	defer d.Release()
	for i, m := range msgs {
		if err := d.Append(m); err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
	}
	if got, want := d.Len(), len(msgs); got != want {
		t.Errorf("got Len %d, want %d", got, want)
	}
	return flushT(t, d)
}

// checkRows compares decoded rows with expected ones field by field.
func checkRows(t *testing.T, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for k, w := range want[i] {
			if g := got[i][k]; !reflect.DeepEqual(g, w) {
				t.Errorf("row %d field %s: got %#v, want %#v", i, k, g, w)
			}
		}
		if len(got[i]) != len(want[i]) {
			t.Errorf("row %d: got %d columns, want %d", i, len(got[i]), len(want[i]))
		}
	}
}

func TestDecoder_Flat14(t *testing.T) {
	md := compileT(t, "flat.proto", "Flat14")
	full := newMessage(md)
	set(full, "id", 42)
	set(full, "ts_ms", 1_700_000_000_000)
	set(full, "campaign_id", -7)
	set(full, "impressions", math.MaxInt64)
	set(full, "delta", -123456789)
	set(full, "bid_micros", 2_500_000)
	set(full, "region", -1)
	set(full, "width", 300)
	set(full, "height", 250)
	set(full, "score", math.MinInt32)
	set(full, "device", "mobile")
	set(full, "country", "DE")
	set(full, "publisher", "pub-ü")
	set(full, "url", "https://example.com/a?b=c")

	tests := []struct {
		name string
		msg  protoreflect.Message
		want map[string]any
	}{
		{"all set", full, map[string]any{
			"id": int64(42), "ts_ms": int64(1_700_000_000_000), "campaign_id": int32(-7),
			"impressions": uint64(math.MaxInt64), "delta": int64(-123456789), "bid_micros": uint64(2_500_000),
			"region": int32(-1), "width": uint32(300), "height": int64(250), "score": int32(math.MinInt32),
			"device": "mobile", "country": "DE", "publisher": "pub-ü", "url": "https://example.com/a?b=c",
		}},
		{"empty message gives zero values", newMessage(md), map[string]any{
			"id": int64(0), "ts_ms": int64(0), "campaign_id": int32(0), "impressions": uint64(0), "delta": int64(0),
			"bid_micros": uint64(0), "region": int32(0), "width": uint32(0), "height": int64(0), "score": int32(0),
			"device": "", "country": "", "publisher": "", "url": "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeAll(t, md, marshalT(t, tt.msg.Interface()))
			checkRows(t, got, []map[string]any{tt.want})
		})
	}
}

func TestDecoder_RoundTrip(t *testing.T) {
	tests := []struct{ file, message string }{
		{"flat.proto", "Flat14"},
		{"all.proto", "Scalars"},
		{"all.proto", "Optionals"},
		{"all.proto", "Repeated"},
		{"all.proto", "Maps"},
		{"all.proto", "WellKnown"},
		{"all.proto", "BidRequest"},
		{"legacy.proto", "Legacy"},
		{"app/place.proto", "Place"},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			md := compileT(t, tt.file, tt.message)
			r := rand.New(rand.NewPCG(1, uint64(len(tt.message))))
			var msgs [][]byte
			var want []map[string]any
			for range 300 {
				m := randomMessage(r, md)
				msgs = append(msgs, marshalT(t, m))
				want = append(want, expectRow(m))
			}
			checkRows(t, decodeAll(t, md, msgs...), want)
		})
	}
}

func TestDecoder_Presence(t *testing.T) {
	md := compileT(t, "all.proto", "Optionals")
	zeros := newMessage(md)
	set(zeros, "i32", 0)
	set(zeros, "str", "")
	set(zeros, "raw", []byte{})
	set(zeros, "color", 0)
	set(zeros, "flag", false)
	set(zeros, "db", 0.0)
	set(zeros, "code", 0)
	sub(zeros, "point")
	oneofName := newMessage(md)
	set(oneofName, "name", "n")

	tests := []struct {
		name string
		msg  protoreflect.Message
		want map[string]any
	}{
		{"absent is null", newMessage(md), map[string]any{
			"i32": nil, "i64": nil, "str": nil, "raw": nil, "color": nil, "flag": nil, "db": nil,
			"name": nil, "code": nil, "point": nil,
		}},
		{"present zero is not null", zeros, map[string]any{
			"i32": int32(0), "i64": nil, "str": "", "raw": []byte{}, "color": "COLOR_UNSPECIFIED", "flag": false,
			"db": 0.0, "name": nil, "code": int64(0), "point": map[string]any{"x": int64(0), "y": int64(0)},
		}},
		{"oneof member", oneofName, map[string]any{
			"i32": nil, "i64": nil, "str": nil, "raw": nil, "color": nil, "flag": nil, "db": nil,
			"name": "n", "code": nil, "point": nil,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRows(t, decodeAll(t, md, marshalT(t, tt.msg.Interface())), []map[string]any{tt.want})
		})
	}
}

func TestDecoder_Enums(t *testing.T) {
	md := compileT(t, "all.proto", "Scalars")
	const color = 16
	tests := []struct {
		name string
		msg  []byte
		want string
	}{
		{"absent is the zero value's name", nil, "COLOR_UNSPECIFIED"},
		{"known", wire{}.varint(color, 2), "GREEN"},
		{"sparse number", wire{}.varint(color, 5000), "FAR"},
		{"unknown number", wire{}.varint(color, 42), "42"},
		{"negative unknown number", wire{}.varint(color, uint64(math.MaxUint64-2)), "-3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := decodeAll(t, md, tt.msg)
			if got, want := rows[0]["color"], any(tt.want); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}

	legacy := compileT(t, "legacy.proto", "Legacy")
	rows := decodeAll(t, legacy, nil, wire{}.varint(11, 2))
	if got := rows[0]["kind"]; got != nil {
		t.Errorf("got proto2 absent enum %v, want nil", got)
	}
	if got, want := rows[1]["kind"], any("KIND_B"); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestDecoder_WireSemantics(t *testing.T) {
	repeated := compileT(t, "all.proto", "Repeated")
	scalars := compileT(t, "all.proto", "Scalars")
	optionals := compileT(t, "all.proto", "Optionals")
	legacy := compileT(t, "legacy.proto", "Legacy")
	bid := compileT(t, "all.proto", "BidRequest")

	unknown := wire{}.varint(900, 1).fixed32(901, 2).fixed64(902, 3).str(903, "x").
		group(904, wire{}.varint(1, 5).group(2, wire{}.str(3, "nested"))).bytes(905, nil)
	point := func(x, y uint64) []byte { return wire{}.varint(1, x).varint(2, y) }

	tests := []struct {
		name  string
		md    protoreflect.MessageDescriptor
		msg   []byte
		field string
		want  any
	}{
		{"packed and unpacked mixed", repeated,
			wire{}.varint(1, 1).varint(1, 2).bytes(1, packedVarints(3, 4)).varint(1, 5),
			"i32", []any{int32(1), int32(2), int32(3), int32(4), int32(5)}},
		{"packed sent to an unpacked field", repeated,
			wire{}.bytes(2, packedVarints(7, 8)),
			"i32_unpacked", []any{int32(7), int32(8)}},
		{"negative int32 in a packed list", repeated,
			wire{}.bytes(1, packedVarints(uint64(math.MaxUint64))),
			"i32", []any{int32(-1)}},
		{"packed fixed32", repeated,
			wire{}.bytes(4, protowire.AppendFixed32(protowire.AppendFixed32(nil, 1), 2)).fixed32(4, 3),
			"f32", []any{uint32(1), uint32(2), uint32(3)}},
		{"packed double sent to an unpacked field", repeated,
			wire{}.bytes(5, protowire.AppendFixed64(nil, math.Float64bits(1.5))).fixed64(5, math.Float64bits(-2)),
			"db", []any{1.5, -2.0}},
		{"empty packed payload", repeated, wire{}.bytes(1, nil), "i32", []any{}},
		{"absent repeated is an empty list", repeated, nil, "str", []any{}},
		{"last scalar wins", scalars, wire{}.varint(2, 1).varint(2, 9), "i64", int64(9)},
		{"last string wins", scalars, wire{}.str(14, "a").str(14, "b"), "str", "b"},
		{"fields out of order", scalars, wire{}.str(14, "s").varint(1, 3).varint(2, 4), "i32", int32(3)},
		{"singular message occurrences merge", optionals,
			wire{}.bytes(10, wire{}.varint(1, 1)).bytes(10, wire{}.varint(2, 2)),
			"point", map[string]any{"x": int64(1), "y": int64(2)}},
		{"later occurrence overrides merged scalar", optionals,
			wire{}.bytes(10, point(1, 2)).bytes(10, wire{}.varint(1, 5)),
			"point", map[string]any{"x": int64(5), "y": int64(2)}},
		{"repeated lists concatenate across merged messages", bid,
			wire{}.bytes(3, wire{}.str(1, "s1")).bytes(2, wire{}.str(1, "i1")).bytes(2, wire{}.str(1, "i2")),
			"site", map[string]any{"id": "s1", "domain": "", "publisher": nil}},
		{"oneof keeps the last member", optionals, wire{}.str(8, "n").varint(9, 5), "name", nil},
		{"oneof member set again after another", optionals, wire{}.varint(9, 5).str(8, "n"), "name", "n"},
		{"oneof other member cleared", optionals, wire{}.varint(9, 5).str(8, "n"), "code", nil},
		{"unknown fields skipped", scalars, append(unknown, wire{}.varint(2, 77)...), "i64", int64(77)},
		{"unknown fields inside nested message skipped", optionals,
			wire{}.bytes(10, append(wire(point(3, 4)), unknown...)),
			"point", map[string]any{"x": int64(3), "y": int64(4)}},
		{"group field", legacy,
			wire{}.group(3, wire{}.str(4, "hi").varint(5, 2)),
			"info", map[string]any{"note": "hi", "level": int32(2)}},
		{"repeated group", legacy,
			wire{}.group(6, wire{}.str(7, "a")).group(6, nil),
			"entry", []any{map[string]any{"key": "a"}, map[string]any{"key": nil}}},
		{"proto2 unpacked list accepts packed", legacy,
			wire{}.bytes(8, packedVarints(1, 2)).varint(8, 3),
			"nums", []any{int32(1), int32(2), int32(3)}},
		{"field number above the dense table", legacy, wire{}.varint(100000, 12), "big_field", int32(12)},
		{"proto2 absent required is null", legacy, nil, "id", nil},
		{"map entry with missing key and value", compileT(t, "all.proto", "Maps"),
			wire{}.bytes(1, nil), "counts", []any{[2]any{"", int64(0)}}},
		{"duplicate map key: last entry wins", compileT(t, "all.proto", "Maps"),
			wire{}.bytes(1, wire{}.str(1, "a").varint(2, 1)).bytes(1, wire{}.str(1, "b").varint(2, 2)).
				bytes(1, wire{}.str(1, "a").varint(2, 3)),
			"counts", []any{[2]any{"a", int64(3)}, [2]any{"b", int64(2)}}},
		{"duplicate int32 key in two encodings", compileT(t, "all.proto", "Maps"),
			wire{}.bytes(2, wire{}.varint(1, math.MaxUint64).str(2, "long")).bytes(2, wire{}.varint(1, math.MaxUint32).str(2, "short")),
			"names", []any{[2]any{int32(-1), "short"}}},
		{"absent key equals the zero key", compileT(t, "all.proto", "Maps"),
			wire{}.bytes(4, wire{}.varint(2, 1)).bytes(4, wire{}.varint(1, 0).varint(2, 2)),
			"colors", []any{[2]any{false, "GREEN"}}},
		{"duplicate keys in a large map", compileT(t, "all.proto", "Maps"),
			manyEntries(20), "counts", manyEntriesWant(20)},
		{"map entry without its message value gets the default instance", compileT(t, "all.proto", "Maps"),
			wire{}.bytes(3, wire{}.str(1, "p")), "points", []any{[2]any{"p", map[string]any{"x": int64(0), "y": int64(0)}}}},
		{"map entry without its timestamp value gets the epoch", compileT(t, "all.proto", "Maps"),
			wire{}.bytes(5, wire{}.varint(1, 9)), "times", []any{[2]any{uint64(9), arrow.Timestamp(0)}}},
		{"map entry fields in reverse order", compileT(t, "all.proto", "Maps"),
			wire{}.bytes(2, wire{}.str(2, "two").varint(1, 2)), "names", []any{[2]any{int32(2), "two"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := decodeAll(t, tt.md, tt.msg)
			if got := rows[0][tt.field]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestDecoder_WellKnown(t *testing.T) {
	md := compileT(t, "all.proto", "WellKnown")
	m := newMessage(md)
	set(m, "at", ts(m, "at", 1_700_000_000, 123_456_789))
	appendTo(m, "history", ts(m, "history", -1, 999_999_999), ts(m, "history", 0, 0))
	set(m, "dbl", wrap(m, "dbl", 2.5))
	set(m, "flt", wrap(m, "flt", float32(1.25)))
	set(m, "i64", wrap(m, "i64", int64(-5)))
	set(m, "u64", wrap(m, "u64", uint64(5)))
	set(m, "i32", wrap(m, "i32", int32(-6)))
	set(m, "u32", wrap(m, "u32", uint32(6)))
	set(m, "flag", wrap(m, "flag", true))
	set(m, "str", wrap(m, "str", "s"))
	set(m, "raw", wrap(m, "raw", []byte("r")))
	appendTo(m, "tags", wrap(m, "tags", "a"), wrap(m, "tags", ""))

	empty := newMessage(md)
	set(empty, "i64", wrap(empty, "i64", int64(0))) // present wrapper holding zero

	rows := decodeAll(t, md, marshalT(t, m), marshalT(t, empty))
	checkRows(t, rows, []map[string]any{
		{
			"at":      arrow.Timestamp(1_700_000_000_123_456),
			"history": []any{arrow.Timestamp(-1), arrow.Timestamp(0)},
			"dbl":     2.5, "flt": float32(1.25), "i64": int64(-5), "u64": uint64(5), "i32": int32(-6), "u32": uint32(6),
			"flag": true, "str": "s", "raw": []byte("r"), "tags": []any{"a", ""},
		},
		{
			"at": nil, "history": []any{}, "dbl": nil, "flt": nil, "i64": int64(0), "u64": nil, "i32": nil, "u32": nil,
			"flag": nil, "str": nil, "raw": nil, "tags": []any{},
		},
	})
}

func TestDecoder_Nested(t *testing.T) {
	md := compileT(t, "all.proto", "BidRequest")
	m := newMessage(md)
	set(m, "id", "req-1")
	set(m, "tmax", 120)
	appendTo(m, "cur", "USD", "EUR")
	impFD := md.Fields().ByName("imp")
	l := m.Mutable(impFD).List()
	i0 := l.NewElement().Message()
	set(i0, "id", "imp-0")
	set(i0, "bidfloor", 0.5)
	b := sub(i0, "banner")
	set(b, "w", 300)
	pmp := sub(i0, "pmp")
	set(pmp, "private_auction", true)
	dealsFD := pmp.Descriptor().Fields().ByName("deals")
	d0 := pmp.Mutable(dealsFD).List().NewElement().Message()
	set(d0, "id", "deal-a")
	appendTo(d0, "wseat", "s1", "s2")
	set(d0, "color", "BLUE")
	pmp.Mutable(dealsFD).List().Append(protoreflect.ValueOfMessage(d0))
	l.Append(protoreflect.ValueOfMessage(i0))
	i1 := l.NewElement().Message()
	set(i1, "id", "imp-1")
	l.Append(protoreflect.ValueOfMessage(i1))
	u := sub(m, "user")
	putMap(u, "ext", "k", "v")

	rows := decodeAll(t, md, marshalT(t, m.Interface()))
	want := map[string]any{
		"id":   "req-1",
		"tmax": int64(120),
		"cur":  []any{"USD", "EUR"},
		"at":   nil,
		"site": nil,
		"user": map[string]any{"id": "", "yob": nil, "ext": []any{[2]any{"k", "v"}}},
		"imp": []any{
			map[string]any{
				"id": "imp-0", "bidfloor": 0.5, "metric": []any{},
				"banner": map[string]any{"w": int32(300), "h": int32(0), "format": []any{}},
				"pmp": map[string]any{"private_auction": true, "deals": []any{
					map[string]any{"id": "deal-a", "bidfloor": 0.0, "wseat": []any{"s1", "s2"}, "color": "BLUE"},
				}},
			},
			map[string]any{"id": "imp-1", "bidfloor": 0.0, "metric": []any{}, "banner": nil, "pmp": nil},
		},
	}
	checkRows(t, rows, []map[string]any{want})
	checkRows(t, rows, []map[string]any{expectRow(m)})
}

func TestDecoder_Flush(t *testing.T) {
	mem := checkedMem()
	defer mem.AssertSize(t, 0)
	md := compileT(t, "all.proto", "BidRequest")
	d, err := NewDecoder(md, mem)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	defer d.Release()
	r := rand.New(rand.NewPCG(7, 7))
	for batch := range 3 {
		var want []map[string]any
		for range 50 + batch {
			m := randomMessage(r, md)
			if err := d.Append(marshalT(t, m)); err != nil {
				t.Fatalf("Append: %v", err)
			}
			want = append(want, expectRow(m))
		}
		checkRows(t, flushT(t, d), want)
		if got, want := d.Len(), 0; got != want {
			t.Errorf("got Len %d after flush, want %d", got, want)
		}
	}
	if got := d.NewNormalizedRecord(); got != nil {
		t.Errorf("got normalized record %v without a normalizer, want nil", got)
	}
	if got := d.NormalizedSchema(); got != nil {
		t.Errorf("got normalized schema %v without a normalizer, want nil", got)
	}
}

func TestDecoder_AppendAllocs(t *testing.T) {
	tests := []struct {
		name string
		md   protoreflect.MessageDescriptor
		opts []Option
	}{
		{"flat14", compileT(t, "flat.proto", "Flat14"), nil},
		{"nested", compileT(t, "all.proto", "BidRequest"), nil},
		{"nested with normalizer", compileT(t, "all.proto", "BidRequest"),
			[]Option{WithNormalizer("id, imp[].id, imp[].pmp.deals[].id, imp[].pmp.deals[].wseat[] AS seat")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 3))
			var msgs [][]byte
			for range 64 {
				msgs = append(msgs, marshalT(t, randomMessage(r, tt.md)))
			}
			d, err := NewDecoder(tt.md, memory.NewGoAllocator(), tt.opts...)
			if err != nil {
				t.Fatalf("NewDecoder: %v", err)
			}
			defer d.Release()
			for _, m := range msgs { // warm up pools and builders
				if err := d.Append(m); err != nil {
					t.Fatalf("Append: %v", err)
				}
			}
			i := 0
			got := testing.AllocsPerRun(5000, func() {
				_ = d.Append(msgs[i%len(msgs)])
				i++
			})
			if got != 0 {
				t.Errorf("got %v allocs per Append, want 0", got)
			}
		})
	}
}

// manyEntries encodes a counts map with n distinct keys, each written twice
// (value i, then value 100+i), in an order that needs sorting to dedupe.
func manyEntries(n int) []byte {
	var w wire
	for pass := range 2 {
		for i := range n {
			k := (i * 7) % n
			w = w.bytes(1, wire{}.str(1, fmt.Sprintf("k%02d", k)).varint(2, uint64(pass*100+k)))
		}
	}
	return w
}

// manyEntriesWant is what manyEntries decodes to.
func manyEntriesWant(n int) []any {
	out := []any{}
	for k := range n {
		out = append(out, [2]any{fmt.Sprintf("k%02d", k), int64(100 + k)})
	}
	return out
}
