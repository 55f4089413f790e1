package flightsql

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/quiverdata/quiver/internal/testmem"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sampleParams encodes two parameter rows (INT64, VARCHAR).
func sampleParams(t testing.TB) []byte {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "1", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "2", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", ""}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	enc, ok := encodeParams([]arrow.RecordBatch{rec})
	if !ok {
		t.Fatal("two parameter rows do not travel")
	}
	return enc
}

// FuzzTicket checks a statement ticket's handle and the parameters a
// ticket carries never crash the decoder, and are either refused with
// InvalidArgument (ResourceExhausted for too many rows) or decode to a
// handle that encodes back to an equal one.
func FuzzTicket(f *testing.F) {
	params := sampleParams(f)
	n := int64(3)
	for _, h := range []handle{
		{Count: &n},
		{Held: newID()},
		{Query: "SELECT 1", Catalog: "memory", Schema: "main"},
		{Query: "SELECT 1", Txn: newID()},
		{Query: "SELECT * FROM t", Part: json.RawMessage(`{"i":0,"part":{"lo":1000000,"hi":2000000}}`)},
		{Query: "SELECT ? AS a, ? AS b", Params: params},
	} {
		b, err := json.Marshal(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, params)
	}
	f.Add([]byte(`{"q":"SELECT 1","x":1}`), []byte("ARROW1"))
	f.Add([]byte(`{"q":"SELECT 1"} {}`), params[:len(params)/2])
	f.Add([]byte(`{"n":1,"q":"x"}`), []byte{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw, params []byte) {
		checkSealed(t, kindTicket, raw)
		h, err := parseHandle(raw)
		if err != nil {
			if code := status.Code(err); code != codes.InvalidArgument {
				t.Fatalf("handle %q: got %v (%v), want InvalidArgument", raw, code, err)
			}
		} else {
			b, err := json.Marshal(h)
			if err != nil {
				t.Fatalf("encode %+v: %v", h, err)
			}
			again, err := parseHandle(b)
			if err != nil {
				t.Fatalf("handle %q parsed, but its encoding %q did not: %v", raw, b, err)
			}
			if b2, _ := json.Marshal(again); !bytes.Equal(b, b2) {
				t.Fatalf("handle %q: encodes to %q, then to %q", raw, b, b2)
			}
		}
		recs, err := decodeParams(params)
		if err != nil {
			if code := status.Code(err); code != codes.InvalidArgument && code != codes.ResourceExhausted {
				t.Fatalf("params: got %v (%v), want InvalidArgument", code, err)
			}
			return
		}
		releaseRecs(recs)
	})
}

// FuzzPreparedHandle checks prepared-statement handles decode strictly:
// refused with InvalidArgument, or with an id and a query, encoding back to
// the same handle.
func FuzzPreparedHandle(f *testing.F) {
	for _, h := range []preparedHandle{
		{ID: newID(), Query: "SELECT 1"},
		{ID: newID(), Query: "INSERT INTO t VALUES (?)", Txn: newID()},
		{ID: newID(), Query: "SELECT ? AS a, ? AS b", Params: sampleParams(f)},
	} {
		b, err := json.Marshal(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"nope", "", "{}", `{"i":"0123","q":"SELECT 1"}`, `{"i":"` + newID() + `","q":""}`, `[1]`, `{"i":"` + newID() + `","q":"x","z":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkSealed(t, kindPrepared, raw)
		h, err := parsePreparedHandle(raw)
		if err != nil {
			if code := status.Code(err); code != codes.InvalidArgument {
				t.Fatalf("handle %q: got %v (%v), want InvalidArgument", raw, code, err)
			}
			return
		}
		if !isID(h.ID) || h.Query == "" {
			t.Fatalf("handle %q accepted without an id or a query: %+v", raw, h)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parsePreparedHandle(b)
		if err != nil || !reflect.DeepEqual(again, h) {
			t.Fatalf("handle %q: encodes to %q, which parses to %+v, %v", raw, b, again, err)
		}
	})
}

// fuzzKey signs the envelopes of the fuzz tests.
var fuzzKey = []byte("the fuzz tests' ticket key: 32 by")

// checkSealed checks raw, as a client's envelope, is refused with
// PermissionDenied and without a panic; and that raw, when it is JSON,
// sealed for one user, opens to what it held for that user and for
// nobody else, and not as another kind.
func checkSealed(t *testing.T, kind string, raw []byte) {
	t.Helper()
	sg := signer{key: fuzzKey}
	if _, err := sg.open(kind, "ann", raw); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("unsigned %q: got %v, want PermissionDenied", raw, err)
	}
	if !json.Valid(raw) {
		return
	}
	env, err := sg.seal(kind, "ann", raw)
	if err != nil {
		t.Fatalf("seal %q: %v", raw, err)
	}
	data, err := sg.open(kind, "ann", env)
	if err != nil {
		t.Fatalf("open the envelope of %q: %v", raw, err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, raw); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Compact(&got, data); err != nil {
		t.Fatal(err)
	}
	var a, b any
	if json.Unmarshal(want.Bytes(), &a) != nil || json.Unmarshal(got.Bytes(), &b) != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("sealed %q, opened %q", raw, data)
	}
	other := kindTicket
	if kind == kindTicket {
		other = kindPrepared
	}
	for _, bad := range []struct{ kind, user string }{{kind, "bob"}, {kind, ""}, {other, "ann"}} {
		if _, err := sg.open(bad.kind, bad.user, env); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("%q sealed for ann as a %s, opened by %q as a %s: got %v, want PermissionDenied", raw, kind, bad.user, bad.kind, err)
		}
	}
	if _, err := (signer{key: []byte("another key, thirty-two bytes...")}).open(kind, "ann", env); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("%q opened with another key: got %v, want PermissionDenied", raw, err)
	}
}

func TestParseHandle(t *testing.T) {
	id := newID()
	for _, tt := range []struct {
		raw string
		ok  bool
	}{
		{`{"q":"SELECT 1"}`, true},
		{`{"q":"SELECT 1","t":"` + id + `","c":"memory","s":"main"}`, true},
		{`{"n":0}`, true},
		{`{"h":"` + id + `"}`, true},
		{`{"q":"SELECT 1","p":{"lo":1}}`, true},
		{`{"q":"SELECT 1","l":"small"}`, true},
		{`{"q":"SELECT 1","l":"bulk"}`, true},
		{`{"q":"SELECT 1","l":"urgent"}`, false},
		{`{"n":1,"l":"small"}`, false},
		{``, false},
		{`{}`, false},
		{`null`, false},
		{`{"q":""}`, false},
		{`{"q":"SELECT 1","zz":1}`, false},
		{`{"q":"SELECT 1"}x`, false},
		{`{"n":1,"q":"SELECT 1"}`, false},
		{`{"h":"` + id + `","q":"SELECT 1"}`, false},
		{`{"h":"../etc"}`, false},
		{`{"q":"SELECT 1","t":"x","p":{}}`, false},
		{`{"q":"SELECT 1","t":"x","b":"AAAA"}`, false},
		{`{"q":"SELECT 1","p":null}`, false},
		{`{"q":"SELECT 1","b":"not base64!"}`, false},
	} {
		_, err := parseHandle([]byte(tt.raw))
		if (err == nil) != tt.ok {
			t.Errorf("%s: got %v, want ok=%v", tt.raw, err, tt.ok)
		}
		if err != nil && status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: got %v, want InvalidArgument", tt.raw, status.Code(err))
		}
	}
}

func TestEncodeParams(t *testing.T) {
	mem := testmem.Checked(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "1", Type: arrow.BinaryTypes.String}}, nil)
	build := func(rows, width int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for range rows {
			b.Field(0).(*array.StringBuilder).Append(string(bytes.Repeat([]byte("x"), width)))
		}
		return b.NewRecordBatch()
	}
	small, large := build(3, 10), build(3, maxTicketParams/2)
	defer small.Release()
	defer large.Release()
	enc, ok := encodeParams([]arrow.RecordBatch{small})
	if !ok || len(enc) == 0 {
		t.Fatalf("small parameters: got ok=%v, %d bytes", ok, len(enc))
	}
	recs, err := decodeParams(enc)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !array.RecordEqual(recs[0], small) {
		t.Errorf("round trip: got %v, want %v", recs, small)
	}
	releaseRecs(recs)
	if _, ok := encodeParams([]arrow.RecordBatch{large}); ok {
		t.Errorf("parameters over %d bytes: got ok, want them kept local", maxTicketParams)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "1", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ib := array.NewRecordBuilder(mem, other)
	defer ib.Release()
	ib.Field(0).(*array.Int64Builder).Append(1)
	irec := ib.NewRecordBatch()
	defer irec.Release()
	if _, ok := encodeParams([]arrow.RecordBatch{small, irec}); ok {
		t.Errorf("batches of two schemas: got ok, want them kept local")
	}
}

// TestCheckIPCStream checks metadata that would make arrow-go allocate by
// a forged count is refused before arrow-go reads it.
func TestCheckIPCStream(t *testing.T) {
	good := sampleParams(t)
	if err := checkIPCStream(good); err != nil {
		t.Fatalf("a stream encodeParams wrote: %v", err)
	}
	// The schema message comes first: continuation, length, flatbuffer.
	meta := fbuf(good[8 : 8+int(binary.LittleEndian.Uint32(good[4:]))])
	root, _ := meta.u32(0)
	msg, _ := meta.table(root)
	schema, _, _ := msg.child(2)
	fields, ok := schema.vector(1, 4)
	if !ok || fields.n != 2 {
		t.Fatalf("schema fields: got %+v, %v; want 2", fields, ok)
	}
	forged := bytes.Clone(good)
	binary.LittleEndian.PutUint32(forged[8+fields.start-4:], 0x7fffffff)
	if err := checkIPCStream(forged); err == nil {
		t.Errorf("a schema claiming 2^31 fields: got no error")
	}
	if _, err := decodeParams(forged); status.Code(err) != codes.InvalidArgument {
		t.Errorf("decode a schema claiming 2^31 fields: got %v, want InvalidArgument", err)
	}
	for _, cut := range []int{3, 9, len(good) / 2, len(good) - 9} {
		if err := checkIPCStream(good[:cut]); err == nil {
			t.Errorf("stream cut at %d of %d bytes: got no error", cut, len(good))
		}
	}
}
