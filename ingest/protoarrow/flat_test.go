package protoarrow

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// newGeneralDecoder is NewDecoder without the flat decoder: the general
// path, which the flat one must match.
func newGeneralDecoder(t testing.TB, md protoreflect.MessageDescriptor, mem memory.Allocator) *Decoder {
	t.Helper()
	d, err := NewDecoder(md, mem)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	if d.flat == nil {
		d.Release()
		t.Fatalf("%s: want a flat decoder", md.FullName())
	}
	d.flat.release()
	d.flat = nil
	d.useBuilders(mem)
	return d
}

func TestFlatDecoder_Chosen(t *testing.T) {
	for _, tt := range []struct {
		file, message string
		flat          bool
	}{
		{"all.proto", "Scalars", true},
		{"all.proto", "FlatOptionals", true},
		{"all.proto", "Wide", true},
		{"flat.proto", "Flat14", true},
		{"all.proto", "Optionals", false}, // a oneof and a message
		{"all.proto", "Repeated", false},
		{"all.proto", "Maps", false},
		{"all.proto", "WellKnown", false},
		{"legacy.proto", "Legacy", false}, // a group
	} {
		t.Run(tt.message, func(t *testing.T) {
			d, err := NewDecoder(compileT(t, tt.file, tt.message), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			if got := d.flat != nil; got != tt.flat {
				t.Errorf("flat decoder: got %v, want %v", got, tt.flat)
			}
		})
	}
	// A normalizer needs the frames: the general path.
	d, err := NewDecoder(compileT(t, "all.proto", "Scalars"), nil, WithNormalizer("i32"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if d.flat != nil {
		t.Error("flat decoder chosen with a normalizer")
	}
}

// flatTargets are the flat message types of the differential tests.
func flatTargets(t testing.TB) []protoreflect.MessageDescriptor {
	return []protoreflect.MessageDescriptor{
		compileT(t, "all.proto", "Scalars"),
		compileT(t, "all.proto", "FlatOptionals"),
		compileT(t, "flat.proto", "Flat14"),
		compileT(t, "all.proto", "Wide"),
	}
}

// matchPaths feeds the same messages to the flat decoder and the general
// path, flushing every flushEvery messages, and fails unless both accept
// and reject the same messages with the same errors and build equal,
// valid records. Both leak-check their memory. It returns how many
// messages were rejected.
func matchPaths(t *testing.T, md protoreflect.MessageDescriptor, msgs [][]byte, flushEvery int) (rejected int) {
	t.Helper()
	memF, memG := checkedMem(), checkedMem()
	defer memF.AssertSize(t, 0)
	defer memG.AssertSize(t, 0)
	fast, err := NewDecoder(md, memF)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Release()
	general := newGeneralDecoder(t, md, memG)
	defer general.Release()
	compare := func() {
		t.Helper()
		rf, rg := fast.NewRecord(), general.NewRecord()
		defer rf.Release()
		defer rg.Release()
		if err := array.ValidateRecordFull(rf); err != nil {
			t.Fatalf("invalid record from the flat decoder: %v", err)
		}
		// NaN fields are equal here; the rows below compare the values
		// exactly.
		if !array.RecordApproxEqual(rf, rg, array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
			t.Fatalf("records differ:\nflat    %v\ngeneral %v", recordRows(t, rf), recordRows(t, rg))
		}
		if got, want := fmt.Sprint(recordRows(t, rf)), fmt.Sprint(recordRows(t, rg)); got != want {
			t.Fatalf("rows differ:\nflat    %s\ngeneral %s", got, want)
		}
	}
	for i, m := range msgs {
		ef, eg := fast.Append(m), general.Append(m)
		if fmt.Sprint(ef) != fmt.Sprint(eg) {
			t.Fatalf("message %d (% x): flat decoder: %v; general: %v", i, m, ef, eg)
		}
		if ef != nil {
			rejected++
		}
		if fast.Len() != general.Len() {
			t.Fatalf("message %d: Len %d and %d", i, fast.Len(), general.Len())
		}
		if (i+1)%flushEvery == 0 {
			compare()
		}
	}
	compare()
	return rejected
}

// TestFlatDecoder_MatchesGeneral compares the two paths on random
// messages, on the same messages cut short or with a byte flipped, and on
// hand-made edge cases: repeated occurrences, unknown fields, sparse field
// numbers, bad UTF-8, wrong wire types.
func TestFlatDecoder_MatchesGeneral(t *testing.T) {
	for _, md := range flatTargets(t) {
		t.Run(string(md.Name()), func(t *testing.T) {
			r := newRand(t.Name())
			var msgs [][]byte
			const valid = 1000
			for range valid {
				m := marshalT(t, randomMessage(r, md))
				msgs = append(msgs, m)
				if len(m) > 0 && r.IntN(4) == 0 {
					msgs = append(msgs, m[:r.IntN(len(m))])
				}
				if len(m) > 0 && r.IntN(4) == 0 {
					bad := append([]byte(nil), m...)
					bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
					msgs = append(msgs, bad)
				}
			}
			msgs = append(msgs, flatEdgeCases()...)
			for _, every := range []int{1, 7, 1000, len(msgs) + 1} {
				// Both outcomes must occur, or the comparison proves little.
				if rejected := matchPaths(t, md, msgs, every); rejected < 50 || rejected > len(msgs)-valid {
					t.Fatalf("%d of %d messages rejected", rejected, len(msgs))
				}
			}
		})
	}
}

// flatEdgeCases are wire inputs for every flat message type (field numbers
// 1-16 and 5000).
func flatEdgeCases() [][]byte {
	var w wire
	return [][]byte{
		{},
		[]byte(w.varint(1, 5).varint(1, 6)), // last occurrence wins
		[]byte(w.str(14, "first").str(14, "second").str(5, "a")),   // strings too
		[]byte(w.str(5, "x").str(5, "").str(4, "long value here")), // ... and an empty one
		[]byte(w.varint(99, 1).str(98, "skip").fixed64(97, 3)),     // unknown fields
		[]byte(w.group(96, w.varint(1, 1))),                        // an unknown group
		[]byte(w.str(5000, "sparse").varint(5001, 2)),
		[]byte(w.str(14, "\xff")),                                 // bad UTF-8
		[]byte(w.str(5, "\xc3")),                                  // bad UTF-8
		[]byte(w.varint(14, 1)),                                   // wrong wire type
		[]byte(w.fixed32(1, 1)),                                   // wrong wire type
		[]byte(w.varint(16, 5000).varint(7, 77).varint(9, 1<<40)), // enum numbers: far, unknown, huge
		{0x08},                               // truncated value
		{0x00, 0x01},                         // field number 0
		{0xfc, 0xff, 0xff, 0xff, 0x7f, 0x00}, // field number too big
		{0x0a, 0x05, 'a'},                    // length past the end
		{0x0c},                               // a lone end-group
		{0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, // varint too long
		{0x0f, 0x01}, // reserved wire type
	}
}

// FuzzFlatDecoder_MatchesGeneral is TestFlatDecoder_MatchesGeneral on
// arbitrary bytes, each between two random messages.
func FuzzFlatDecoder_MatchesGeneral(f *testing.F) {
	r := rand.New(rand.NewPCG(6, 6))
	mds := flatTargets(f)
	for _, md := range mds {
		for range 4 {
			f.Add(marshalT(f, randomMessage(r, md)))
		}
	}
	for _, m := range flatEdgeCases() {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, md := range mds {
			r := rand.New(rand.NewPCG(uint64(len(data)), 1))
			msgs := [][]byte{marshalT(t, randomMessage(r, md)), data, marshalT(t, randomMessage(r, md))}
			matchPaths(t, md, msgs, 2)
		}
	})
}

// TestFlatDecoder_ColumnFull checks that a message whose string would take
// a column past what its offsets address is rejected with a DecodeError
// naming the field, leaves the batch as it was, and that the batch goes on
// once flushed.
func TestFlatDecoder_ColumnFull(t *testing.T) {
	defer func(old int) { maxColumnData = old }(maxColumnData)
	maxColumnData = 10
	mem := checkedMem()
	defer mem.AssertSize(t, 0)
	d, err := NewDecoder(compileT(t, "all.proto", "Scalars"), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	var w wire
	if err := d.Append(w.str(14, "123456")); err != nil {
		t.Fatal(err)
	}
	err = d.Append(w.str(14, "789012"))
	var de *DecodeError
	if !errors.As(err, &de) || de.Path != "str" || !errors.Is(err, ErrLengthOverflow) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %T %v, want a DecodeError for field str wrapping ErrLengthOverflow", err, err)
	}
	if d.Len() != 1 {
		t.Fatalf("Len %d after the rejected message, want 1", d.Len())
	}
	rec := d.NewRecord()
	rows := recordRows(t, rec)
	rec.Release()
	if len(rows) != 1 || rows[0]["str"] != "123456" {
		t.Fatalf("got rows %v, want the first message only", rows)
	}
	if err := d.Append(w.str(14, "789012")); err != nil {
		t.Fatalf("after a flush: %v", err)
	}
	rec = d.NewRecord()
	defer rec.Release()
	if rows := recordRows(t, rec); len(rows) != 1 || rows[0]["str"] != "789012" {
		t.Fatalf("got rows %v after the flush, want the second message", rows)
	}
}
