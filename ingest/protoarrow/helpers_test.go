package protoarrow

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// compileT compiles testdata/file, or testdata/imports/file when it is in
// that import tree, and returns message name.
func compileT(t testing.TB, file, name string) protoreflect.MessageDescriptor {
	t.Helper()
	path, imports := filepath.Join("testdata", file), []string(nil)
	if strings.HasPrefix(file, "app/") {
		path, imports = file, []string{filepath.Join("testdata", "imports")}
	}
	md, err := Compile(context.Background(), path, imports, name)
	if err != nil {
		t.Fatalf("Compile(%s, %s): %v", file, name, err)
	}
	return md
}

// newMessage returns an empty dynamic message of md.
func newMessage(md protoreflect.MessageDescriptor) *dynamicpb.Message {
	return dynamicpb.NewMessage(md)
}

// marshalT encodes m deterministically, allowing unset required fields.
func marshalT(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(m)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// set sets field name of m to v, converting Go values to protoreflect ones.
func set(m protoreflect.Message, name string, v any) {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil {
		panic("no field " + name)
	}
	m.Set(fd, pv(fd, v))
}

// appendTo appends v to the repeated field name of m.
func appendTo(m protoreflect.Message, name string, vs ...any) {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	l := m.Mutable(fd).List()
	for _, v := range vs {
		l.Append(pv(fd, v))
	}
}

// putMap sets key k of the map field name of m to v.
func putMap(m protoreflect.Message, name string, k, v any) {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	m.Mutable(fd).Map().Set(pv(fd.MapKey(), k).MapKey(), pv(fd.MapValue(), v))
}

// sub returns the message in field name of m, creating it.
func sub(m protoreflect.Message, name string) protoreflect.Message {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	return m.Mutable(fd).Message()
}

// pv converts a Go value to a protoreflect.Value for fd.
func pv(fd protoreflect.FieldDescriptor, v any) protoreflect.Value {
	switch x := v.(type) {
	case protoreflect.Message:
		return protoreflect.ValueOfMessage(x)
	case *dynamicpb.Message:
		return protoreflect.ValueOfMessage(x)
	case string:
		if fd.Kind() == protoreflect.EnumKind {
			return protoreflect.ValueOfEnum(fd.Enum().Values().ByName(protoreflect.Name(x)).Number())
		}
		return protoreflect.ValueOfString(x)
	case int:
		switch fd.Kind() {
		case protoreflect.EnumKind:
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(x))
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			return protoreflect.ValueOfUint32(uint32(x))
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			return protoreflect.ValueOfUint64(uint64(x))
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			return protoreflect.ValueOfInt32(int32(x))
		default:
			return protoreflect.ValueOfInt64(int64(x))
		}
	default:
		return protoreflect.ValueOf(v)
	}
}

// ts builds a Timestamp message of the descriptor that field name of m uses.
func ts(m protoreflect.Message, name string, sec int64, nanos int32) protoreflect.Message {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	t := dynamicpb.NewMessage(fd.Message())
	t.Set(t.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(sec))
	t.Set(t.Descriptor().Fields().ByName("nanos"), protoreflect.ValueOfInt32(nanos))
	return t
}

// wrap builds a wrapper message for field name of m holding v.
func wrap(m protoreflect.Message, name string, v any) protoreflect.Message {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	w := dynamicpb.NewMessage(fd.Message())
	vf := w.Descriptor().Fields().ByNumber(1)
	w.Set(vf, protoreflect.ValueOf(v))
	return w
}

// flushT returns the pending rows of d, after validating the batch.
func flushT(t testing.TB, d *Decoder) []map[string]any {
	t.Helper()
	rec := d.NewRecord()
	defer rec.Release()
	return recordRows(t, rec)
}

// flushNormT returns the pending normalized rows of d.
func flushNormT(t testing.TB, d *Decoder) []map[string]any {
	t.Helper()
	rec := d.NewNormalizedRecord()
	defer rec.Release()
	return recordRows(t, rec)
}

// recordRows validates rec and converts it to rows.
func recordRows(t testing.TB, rec arrow.RecordBatch) []map[string]any {
	t.Helper()
	if err := array.ValidateRecordFull(rec); err != nil {
		t.Fatalf("invalid record: %v", err)
	}
	rows := make([]map[string]any, rec.NumRows())
	for i := range rows {
		row := map[string]any{}
		for c, f := range rec.Schema().Fields() {
			row[f.Name] = arrowValue(rec.Column(c), i)
		}
		rows[i] = row
	}
	return rows
}

// arrowValue converts element i of arr to plain Go values: nil for null,
// map[string]any for structs, []any for lists and sorted [2]any entries for
// maps.
func arrowValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return append([]byte{}, a.Value(i)...)
	case *array.Timestamp:
		return a.Value(i)
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := map[string]any{}
		for j := 0; j < a.NumField(); j++ {
			m[st.Field(j).Name] = arrowValue(a.Field(j), i)
		}
		return m
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, [2]any{arrowValue(a.Keys(), int(j)), arrowValue(a.Items(), int(j))})
		}
		sortEntries(out)
		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, arrowValue(a.ListValues(), int(j)))
		}
		return out
	default:
		panic(fmt.Sprintf("unexpected array %T", arr))
	}
}

// sortEntries orders map entries by key.
func sortEntries(es []any) {
	sort.Slice(es, func(i, j int) bool {
		return fmt.Sprint(es[i].([2]any)[0]) < fmt.Sprint(es[j].([2]any)[0])
	})
}

// expectRow is what the decoder should produce for m, computed with
// reflection from the mapping rules: the independent side of round-trip
// tests.
func expectRow(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		out[string(fd.Name())] = expectField(m, fd)
	}
	return out
}

// expectField is the expected column value of fd in m.
func expectField(m protoreflect.Message, fd protoreflect.FieldDescriptor) any {
	switch {
	case fd.IsMap():
		out := []any{}
		m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			out = append(out, [2]any{expectValue(fd.MapKey(), k.Value()), expectValue(fd.MapValue(), v)})
			return true
		})
		sortEntries(out)
		return out
	case fd.IsList():
		l := m.Get(fd).List()
		out := []any{}
		for j := 0; j < l.Len(); j++ {
			out = append(out, expectValue(fd, l.Get(j)))
		}
		return out
	case fd.HasPresence() && !m.Has(fd):
		return nil
	case fd.Kind() == protoreflect.EnumKind && !m.Has(fd):
		return string(fd.Enum().Values().ByNumber(fd.Default().Enum()).Name())
	default:
		return expectValue(fd, m.Get(fd))
	}
}

// expectValue is the expected Arrow value of one value of fd.
func expectValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return int32(v.Int())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return uint32(v.Uint())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint()
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.FloatKind:
		return float32(v.Float())
	case protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return append([]byte{}, v.Bytes()...)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	default:
		msg := v.Message()
		fields := fd.Message().Fields()
		switch name := fd.Message().FullName(); {
		case name == timestampName:
			sec := msg.Get(fields.ByName("seconds")).Int()
			nanos := msg.Get(fields.ByName("nanos")).Int()
			return arrow.Timestamp(sec*1_000_000 + nanos/1_000)
		case wrapperNames[name]:
			inner := fields.ByNumber(1)
			return expectValue(inner, msg.Get(inner))
		default:
			return expectRow(msg)
		}
	}
}

// randomMessage fills a message of md with random values; about a third of
// the fields stay unset.
func randomMessage(r *rand.Rand, md protoreflect.MessageDescriptor) *dynamicpb.Message {
	m := dynamicpb.NewMessage(md)
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if r.IntN(3) == 0 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for n := r.IntN(4); n > 0; n-- {
				mp.Set(randomValue(r, fd.MapKey()).MapKey(), randomValue(r, fd.MapValue()))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for n := r.IntN(4); n > 0; n-- {
				l.Append(randomValue(r, fd))
			}
		default:
			if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && m.WhichOneof(od) != nil {
				continue
			}
			m.Set(fd, randomValue(r, fd))
		}
	}
	return m
}

// randomValue returns a random value for one value of fd.
func randomValue(r *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	ints := []int64{0, 1, -1, 127, 128, -129, 300, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, r.Int64(), -r.Int64()}
	n := ints[r.IntN(len(ints))]
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(n&1 == 1)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) / 7)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) / 3)
	case protoreflect.StringKind:
		strs := []string{"", "a", "héllo wörld", "日本語", "x\x00y", strconv.FormatInt(n, 36)}
		return protoreflect.ValueOfString(strs[r.IntN(len(strs))])
	case protoreflect.BytesKind:
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if r.IntN(5) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(40 + r.IntN(10)))
		}
		return protoreflect.ValueOfEnum(vals.Get(r.IntN(vals.Len())).Number())
	default:
		if fd.Message().FullName() == timestampName {
			t := dynamicpb.NewMessage(fd.Message())
			f := t.Descriptor().Fields()
			t.Set(f.ByName("seconds"), protoreflect.ValueOfInt64(r.Int64N(maxTimestampSeconds-minTimestampSeconds)+minTimestampSeconds))
			t.Set(f.ByName("nanos"), protoreflect.ValueOfInt32(r.Int32N(1_000_000_000)))
			return protoreflect.ValueOfMessage(t)
		}
		return protoreflect.ValueOfMessage(randomMessage(r, fd.Message()))
	}
}

// checkedMem returns a leak-checking allocator.
func checkedMem() *memory.CheckedAllocator {
	return memory.NewCheckedAllocator(memory.NewGoAllocator())
}

// newRand returns a generator seeded from a test name.
func newRand(name string) *rand.Rand {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(h, 1))
}
