package ipcx

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/quiverdata/quiver/internal/testmem"
	"google.golang.org/protobuf/proto"
)

// flatSchema has a column of every layout GroupReader decodes.
var flatSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 3}, Nullable: true},
	{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "iv", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
	{Name: "never_null", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// flatBatch builds a batch of flatSchema whose nullable columns are null
// with probability nullP.
func flatBatch(rng *rand.Rand, alloc memory.Allocator, rows int, nullP float64) arrow.RecordBatch {
	b := array.NewRecordBuilder(alloc, flatSchema)
	defer b.Release()
	for range rows {
		for i, f := range b.Fields() {
			if i < len(b.Fields())-1 && rng.Float64() < nullP {
				f.AppendNull()
				continue
			}
			v := rng.Int64N(1 << 40)
			switch f := f.(type) {
			case *array.Int8Builder:
				f.Append(int8(v))
			case *array.Int32Builder:
				f.Append(int32(v))
			case *array.Int64Builder:
				f.Append(v)
			case *array.Float64Builder:
				f.Append(float64(v) / 7)
			case *array.BooleanBuilder:
				f.Append(v%3 == 0)
			case *array.StringBuilder:
				f.Append(strings.Repeat("x", int(v%40)) + fmt.Sprint(v))
			case *array.LargeStringBuilder:
				f.Append(fmt.Sprint(v))
			case *array.BinaryBuilder:
				f.Append([]byte(fmt.Sprint(v, "é")))
			case *array.TimestampBuilder:
				f.Append(arrow.Timestamp(v))
			case *array.Decimal128Builder:
				f.Append(decimal128.FromI64(v))
			case *array.FixedSizeBinaryBuilder:
				f.Append([]byte{byte(v), byte(v >> 8), byte(v >> 16)})
			case *array.Date32Builder:
				f.Append(arrow.Date32(v % 100000))
			case *array.MonthDayNanoIntervalBuilder:
				f.Append(arrow.MonthDayNanoInterval{Months: int32(v % 12), Days: int32(v % 30), Nanoseconds: v})
			default:
				panic(fmt.Sprintf("flatBatch: no case for %T", f))
			}
		}
	}
	return b.NewRecordBatch()
}

// groupStream returns the messages that send recs, schema first, and a
// stream that plays the rest through the server codec in chunks of 1000
// bytes.
func groupStream(t *testing.T, recs []arrow.RecordBatch, opts ...ipc.Option) *fakeStream {
	t.Helper()
	msgs := streamMessages(t, recs, opts...)
	return &fakeStream{msgs: msgs[1:], chunk: 1000, codec: ServerCodec()}
}

// wholeStream is groupStream with each message in one buffer.
func wholeStream(t *testing.T, recs []arrow.RecordBatch, opts ...ipc.Option) *fakeStream {
	s := groupStream(t, recs, opts...)
	s.chunk = 1 << 30
	return s
}

// readGroups reads every group of s and returns them; the caller
// releases them.
func readGroups(t *testing.T, s flightStream, schema *arrow.Schema, min int64, alloc memory.Allocator) ([]arrow.RecordBatch, error) {
	t.Helper()
	r, err := NewGroupReader(s, schema, min, alloc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	return out, r.Err()
}

// sameRows fails unless got holds the rows of want, in order.
func sameRows(t *testing.T, want, got []arrow.RecordBatch) {
	t.Helper()
	for i, f := range flatSchema.Fields() {
		var w, g []arrow.Array
		for _, r := range want {
			w = append(w, r.Column(i))
		}
		for _, r := range got {
			g = append(g, r.Column(i))
		}
		wa, err := array.Concatenate(w, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := array.Concatenate(g, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if !array.Equal(wa, ga) {
			t.Errorf("column %s differs:\nwant %v\n got %v", f.Name, wa, ga)
		}
		if wa.NullN() != ga.NullN() {
			t.Errorf("column %s: %d nulls, want %d", f.Name, ga.NullN(), wa.NullN())
		}
		wa.Release()
		ga.Release()
	}
}

// groupSizes is the batch sizes a GroupReader makes of batches of sizes.
func groupSizes(sizes []int, min int) []int64 {
	var out []int64
	acc := 0
	for _, n := range sizes {
		acc += n
		if acc >= min {
			out, acc = append(out, int64(acc)), 0
		}
	}
	if acc > 0 {
		out = append(out, int64(acc))
	}
	return out
}

func TestGroupReader_RoundTrip(t *testing.T) {
	const min = 4096
	for _, tc := range []struct {
		name  string
		sizes []int
		nullP float64
		opts  []ipc.Option
		whole bool // each message in one buffer, not in 1000-byte pieces
	}{
		{"equal batches", []int{1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024}, 0.1, nil, false},
		{"ragged, unaligned bitmaps", []int{3, 1000, 5, 1001, 0, 77, 4000, 1, 6000, 13}, 0.2, nil, false},
		{"a small batch, then a big one", []int{100, 5000, 9000}, 0.05, nil, false},
		{"no nulls", []int{700, 700, 700, 700, 700, 700, 700}, 0, nil, false},
		{"nulls only in later batches", []int{1000, 1000, 3, 2000}, -1, nil, false},
		{"lz4", []int{1000, 3000, 500, 9000}, 0.1, []ipc.Option{ipc.WithLZ4()}, false},
		{"zstd", []int{2500, 2500, 17}, 0.1, []ipc.Option{ipc.WithZstd()}, false},
		{"lz4, messages whole", []int{1000, 3000, 500, 9000}, 0.1, []ipc.Option{ipc.WithLZ4()}, true},
		{"messages whole", []int{1000, 3000, 500, 9000}, 0.1, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.sizes))))
			var recs []arrow.RecordBatch
			for i, n := range tc.sizes {
				p := tc.nullP
				if p < 0 { // nulls from the third batch on
					p = 0
					if i >= 2 {
						p = 0.3
					}
				}
				recs = append(recs, flatBatch(rng, memory.DefaultAllocator, n, p))
			}
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			alloc := testmem.Checked(t)
			stream := groupStream
			if tc.whole {
				stream = wholeStream
			}
			got, err := readGroups(t, stream(t, recs, tc.opts...), flatSchema, min, alloc)
			defer func() {
				for _, r := range got {
					r.Release()
				}
			}()
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int64
			for _, r := range got {
				sizes = append(sizes, r.NumRows())
			}
			if want := groupSizes(tc.sizes, min); !slices.Equal(sizes, want) {
				t.Fatalf("groups of %v rows, want %v", sizes, want)
			}
			sameRows(t, recs, got)
		})
	}
}

// TestGroupReader_SlicedInput sends batches that are slices of bigger
// ones, whose offsets need not start at zero.
func TestGroupReader_SlicedInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	whole := flatBatch(rng, memory.DefaultAllocator, 3000, 0.2)
	defer whole.Release()
	recs := []arrow.RecordBatch{whole.NewSlice(5, 1000), whole.NewSlice(1003, 2999), whole.NewSlice(0, 0)}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	alloc := testmem.Checked(t)
	got, err := readGroups(t, groupStream(t, recs), flatSchema, 100_000, alloc)
	defer func() {
		for _, r := range got {
			r.Release()
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].NumRows() != 995+1996 {
		t.Fatalf("got %d groups, want one of %d rows", len(got), 995+1996)
	}
	sameRows(t, recs, got)
}

// TestGroupReader_WideRows checks a group ends at its byte bound before
// it has min rows.
func TestGroupReader_WideRows(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	var recs []arrow.RecordBatch
	for range 10 {
		for range 10 {
			b.Append(strings.Repeat("w", 1000))
		}
		a := b.NewArray()
		recs = append(recs, array.NewRecordBatch(schema, []arrow.Array{a}, 10))
		a.Release()
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	alloc := testmem.Checked(t)
	r, err := NewGroupReader(groupStream(t, recs), schema, 1000, alloc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	r.g.maxBytes = 25_000 // 25 rows of 1,000 bytes
	var sizes []int64
	for r.Next() {
		sizes = append(sizes, r.RecordBatch().NumRows())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []int64{30, 30, 30, 10}; !slices.Equal(sizes, want) {
		t.Fatalf("groups of %v rows, want %v", sizes, want)
	}
}

// TestGroupReader_OffsetOverflow checks a group is finished before its
// 32-bit offsets would overflow.
func TestGroupReader_OffsetOverflow(t *testing.T) {
	g := newGroupBuilder(flatSchema, 1000, memory.DefaultAllocator)
	g.rows = 10
	si := flatSchema.FieldIndices("s")[0]
	lsi := flatSchema.FieldIndices("ls")[0]
	g.cols[si].dataLen = 1 << 30
	g.need[si] = 1 << 30
	if !g.overflows(1) {
		t.Fatal("2 GiB of string data in a group does not overflow")
	}
	g.need[si] = 1<<30 - 1
	g.cols[lsi].dataLen, g.need[lsi] = 1<<40, 1<<40
	if g.overflows(1) {
		t.Fatal("a group under 2 GiB of string data overflows, or large strings do")
	}
	g.rows = 1<<31 - 10
	if !g.overflows(10) {
		t.Fatal("2^31 rows do not overflow")
	}
}

func TestGroupDecodable(t *testing.T) {
	for _, tc := range []struct {
		typ  arrow.DataType
		want bool
	}{
		{arrow.PrimitiveTypes.Uint16, true},
		{arrow.FixedWidthTypes.Boolean, true},
		{arrow.BinaryTypes.LargeBinary, true},
		{&arrow.Decimal256Type{Precision: 40, Scale: 2}, true},
		{arrow.FixedWidthTypes.Time64ns, true},
		{arrow.Null, false},
		{arrow.BinaryTypes.StringView, false},
		{arrow.ListOf(arrow.PrimitiveTypes.Int64), false},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64}), false},
		{&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, false},
	} {
		s := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: tc.typ}}, nil)
		if got := GroupDecodable(s); got != tc.want {
			t.Errorf("GroupDecodable(%s) = %v, want %v", tc.typ, got, tc.want)
		}
	}
	if GroupDecodable(arrow.NewSchema(nil, nil)) {
		t.Error("a schema without columns is decodable")
	}
}

// mangled returns the messages of one 1000-row batch of flatSchema with
// its record batch message changed by change.
func mangled(t *testing.T, change func(m *batchMeta, body []byte) ([]byte, []byte)) []*flight.FlightData {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 3))
	rec := flatBatch(rng, memory.DefaultAllocator, 1000, 0.2)
	defer rec.Release()
	msgs := streamMessages(t, []arrow.RecordBatch{rec})
	m, err := parseBatchMeta(msgs[1].DataHeader)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte(nil), msgs[1].DataBody...)
	h, b := change(m, body)
	msgs[1].DataHeader, msgs[1].DataBody = h, b
	return msgs[1:]
}

// lz4Messages returns the messages of one LZ4-compressed 1000-row batch
// of flatSchema, after the schema.
func lz4Messages(t *testing.T) []*flight.FlightData {
	t.Helper()
	rec := flatBatch(rand.New(rand.NewPCG(4, 4)), memory.DefaultAllocator, 1000, 0.2)
	defer rec.Release()
	return streamMessages(t, []arrow.RecordBatch{rec}, ipc.WithLZ4())[1:]
}

// colBuffer is the index of the first IPC buffer of flatSchema's column name.
func colBuffer(name string) int {
	bi := 0
	for _, f := range flatSchema.Fields() {
		if f.Name == name {
			return bi
		}
		k, _, _ := colKindOf(f.Type)
		bi += k.buffers()
	}
	panic(name)
}

func TestGroupReader_Malformed(t *testing.T) {
	putOffset := func(body []byte, m *batchMeta, col string, row int, v int32) {
		b := m.buffers[colBuffer(col)+1]
		arrow.Int32Traits.CastFromBytes(body[b.offset : b.offset+b.length])[row] = v
	}
	setNode := func(m *batchMeta, col int, length, nulls int64) {
		n := append([]byte(nil), m.nodes...)
		copy(n[col*16:], arrow.Int64Traits.CastToBytes([]int64{length, nulls}))
		m.nodes = n
	}
	for _, tc := range []struct {
		name string
		msgs func(t *testing.T) []*flight.FlightData
		want string
	}{
		{"decreasing offsets", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				putOffset(body, m, "s", 500, 3)
				return m.encode(), body
			})
		}, `column "s": offsets decrease`},
		{"offset past the data", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				putOffset(body, m, "s", 1000, 1<<30)
				return m.encode(), body
			})
		}, `column "s": offsets 0 to 1073741824`},
		{"negative first offset", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				putOffset(body, m, "s", 0, -4)
				return m.encode(), body
			})
		}, `column "s": offsets -4`},
		{"short body", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				return m.encode(), body[:len(body)-100]
			})
		}, "its header says"},
		{"no body", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				return m.encode(), nil
			})
		}, "its header says"},
		{"a column's node has other rows", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				setNode(m, 2, 999, 0)
				return m.encode(), body
			})
		}, `column "f64": 999 values with 0 nulls in a batch of 1000 rows`},
		{"more nulls than rows", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				setNode(m, 0, 1000, 1001)
				return m.encode(), body
			})
		}, "1001 nulls"},
		{"a missing field node", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				m.nodes = m.nodes[:len(m.nodes)-16]
				return m.encode(), body
			})
		}, "12 field nodes for 13 columns"},
		{"a missing buffer", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				m.buffers = m.buffers[:len(m.buffers)-1]
				return m.encode(), body
			})
		}, "buffers for 13 columns"},
		{"values too short", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				m.buffers[colBuffer("i64")+1].length = 7999
				return m.encode(), body
			})
		}, `column "i64": 7999 bytes of values for 1000 rows, want 8000`},
		{"validity too short", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				m.buffers[colBuffer("i8")].length = 100
				return m.encode(), body
			})
		}, `column "i8": validity bitmap of 100 bytes for 1000 rows`},
		{"more rows than the buffers hold", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				m.length = 1 << 60
				for i := range 13 {
					setNode(m, i, 1<<60, 0)
				}
				return m.encode(), body
			})
		}, "bytes of values for 1152921504606846976 rows"},
		{"a dictionary batch", func(t *testing.T) []*flight.FlightData {
			return mangled(t, func(m *batchMeta, body []byte) ([]byte, []byte) {
				m.headerType, m.dictID = fbHeaderDictionaryBatch, 1
				return m.encode(), body
			})
		}, "dictionary batch"},
		{"the schema again", func(t *testing.T) []*flight.FlightData {
			return streamMessages(t, []arrow.RecordBatch{flatBatch(rand.New(rand.NewPCG(1, 1)), memory.DefaultAllocator, 1, 0)})
		}, "other than a record batch"},
		{"a compressed batch without a body", func(t *testing.T) []*flight.FlightData {
			msgs := lz4Messages(t)
			msgs[0].DataBody = nil
			return msgs
		}, "compressed record batch without a body"},
		{"a compressed batch cut short", func(t *testing.T) []*flight.FlightData {
			msgs := lz4Messages(t)
			msgs[0].DataBody = msgs[0].DataBody[:len(msgs[0].DataBody)/2]
			return msgs
		}, "body is"},
		{"a compressed batch whose frames are garbage", func(t *testing.T) []*flight.FlightData {
			msgs := lz4Messages(t)
			m, err := parseBatchMeta(msgs[0].DataHeader)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range m.buffers {
				if b.length > 8 { // an 8-byte length, then the LZ4 frame
					for i := b.offset + 8; i < b.offset+b.length; i++ {
						msgs[0].DataBody[i] = 0xA5
					}
				}
			}
			return msgs
		}, "not an LZ4 frame"},
		{"a body without a header", func(t *testing.T) []*flight.FlightData {
			return []*flight.FlightData{{DataBody: []byte("body")}}
		}, "a body but no IPC header"},
		{"a header that is not a flatbuffer", func(t *testing.T) []*flight.FlightData {
			return []*flight.FlightData{{DataHeader: []byte("not a flatbuffer at all"), DataBody: []byte("body")}}
		}, "malformed IPC message header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alloc := testmem.Checked(t)
			s := &fakeStream{msgs: tc.msgs(t), chunk: 700, codec: ServerCodec()}
			got, err := readGroups(t, s, flatSchema, 10, alloc)
			for _, r := range got {
				r.Release()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestGroupReader_AppMetadataOnly checks a message with app metadata and
// no batch is skipped.
func TestGroupReader_AppMetadataOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	rec := flatBatch(rng, memory.DefaultAllocator, 100, 0.1)
	defer rec.Release()
	msgs := streamMessages(t, []arrow.RecordBatch{rec})
	msgs = []*flight.FlightData{{AppMetadata: []byte("note")}, msgs[1], {AppMetadata: []byte("end")}}
	alloc := testmem.Checked(t)
	got, err := readGroups(t, &fakeStream{msgs: msgs, chunk: 333, codec: ServerCodec()}, flatSchema, 1000, alloc)
	defer func() {
		for _, r := range got {
			r.Release()
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, []arrow.RecordBatch{rec}, got)
}

// FuzzGroupMessage feeds any bytes as the message after flatSchema's
// schema: the reader never panics or leaks, and what it accepts has the
// rows its groups say.
func FuzzGroupMessage(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 9))
	rec := flatBatch(rng, memory.DefaultAllocator, 50, 0.3)
	var s sink
	w := flight.NewRecordWriter(&s, ipc.WithSchema(flatSchema))
	w.Write(rec)
	w.Close()
	rec.Release()
	good, _ := proto.Marshal(s.msgs[1])
	f.Add(good, uint16(100))
	f.Add(good[:len(good)/2], uint16(7))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint16) {
		alloc := testmem.Checked(t)
		r, err := NewGroupReader(&rawStream{msgs: [][]byte{b, b}, chunk: int(chunk) + 1}, flatSchema, 64, alloc)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		for r.Next() {
			rec := r.RecordBatch()
			for _, c := range rec.Columns() {
				if int64(c.Len()) != rec.NumRows() {
					t.Fatalf("a column of %d rows in a batch of %d", c.Len(), rec.NumRows())
				}
				if err := validLayout(c); err != nil {
					t.Fatalf("an accepted batch is invalid: %v", err)
				}
			}
		}
	})
}

// validLayout checks a column's offsets and sizes. Strings are checked
// as binary: the reader passes bytes on as they came, valid UTF-8 or not,
// as arrow-go's own reader does.
func validLayout(c arrow.Array) error {
	d := c.Data()
	var as arrow.DataType
	switch c.DataType().ID() {
	case arrow.STRING:
		as = arrow.BinaryTypes.Binary
	case arrow.LARGE_STRING:
		as = arrow.BinaryTypes.LargeBinary
	default:
		if v, ok := c.(interface{ ValidateFull() error }); ok {
			return v.ValidateFull()
		}
		return nil
	}
	bd := array.NewData(as, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	defer bd.Release()
	b := array.MakeFromData(bd)
	defer b.Release()
	return b.(interface{ ValidateFull() error }).ValidateFull()
}

// rawStream plays raw message bytes through the server codec.
type rawStream struct {
	msgs  [][]byte
	chunk int
}

func (s *rawStream) RecvMsg(m any) error {
	if len(s.msgs) == 0 {
		return io.EOF
	}
	data := chunked(s.msgs[0], s.chunk)
	s.msgs = s.msgs[1:]
	defer data.Free()
	return ServerCodec().Unmarshal(data, m)
}
