package protoarrow

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// fuzzTarget is one decoder configuration the fuzz input is fed to.
type fuzzTarget struct {
	md   protoreflect.MessageDescriptor
	spec string // normalizer spec; "" for none
	good []byte // a valid message appended before and after the input
}

// FuzzDecoder_Append feeds arbitrary bytes to decoders of several message
// types, between two known-good messages. Append must not panic, must
// either accept the input or reject it with a DecodeError, and the batches
// must stay consistent: the good rows decode identically and the records
// validate. When the decoder accepts the input proto.Unmarshal must accept
// it too, and the decoded row must match what proto.Unmarshal read.
func FuzzDecoder_Append(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 5))
	bid := compileT(f, "all.proto", "BidRequest")
	var targets []fuzzTarget
	for _, tt := range []struct{ message, spec string }{
		{"BidRequest", "id, imp[].id AS imp, imp[].pmp.deals[].id AS deal, imp[].pmp.deals[].wseat[] AS seat"},
		{"BidRequest", "id, user.ext[].key AS k, user.ext[].value AS v"},
		{"Optionals", "i32, point.x"},
		{"Maps", "counts[].key, counts[].value"},
		{"Repeated", ""},
		{"WellKnown", "at, history[]"},
		{"Scalars", ""},       // the flat decoder
		{"FlatOptionals", ""}, // the flat decoder, with presence
	} {
		md := compileT(f, "all.proto", tt.message)
		targets = append(targets, fuzzTarget{md: md, spec: tt.spec, good: marshalT(f, randomMessage(r, md))})
		for range 4 {
			f.Add(marshalT(f, randomMessage(r, md)))
		}
	}
	f.Add(marshalT(f, bidRequest(bid)))
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Add([]byte(wire{}.bytes(2, wire{}.str(1, "\xff"))))
	f.Add([]byte(wire{}.group(99, wire{}.varint(1, 1))))
	f.Add([]byte(wire{}.bytes(4, wire{}.bytes(3, wire{}.str(1, "a").str(2, "1")).bytes(3, wire{}.str(1, "a").str(2, "2")))))
	f.Add([]byte(wire{}.str(8, "n").varint(9, 5).bytes(10, wire{}.varint(1, 1)).bytes(10, wire{}.varint(2, 2))))

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tg := range targets {
			fuzzOne(t, tg, data)
		}
	})
}

// fuzzOne runs the FuzzDecoder_Append checks for one target.
func fuzzOne(t *testing.T, tg fuzzTarget, data []byte) {
	mem := checkedMem()
	defer mem.AssertSize(t, 0)
	var opts []Option
	if tg.spec != "" {
		opts = append(opts, WithNormalizer(tg.spec))
	}
	d, err := NewDecoder(tg.md, mem, opts...)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	defer d.Release()

	if err := d.Append(tg.good); err != nil {
		t.Fatalf("Append(good): %v", err)
	}
	normGood := d.NormalizedLen()
	appendErr := d.Append(data)
	if appendErr != nil {
		var de *DecodeError
		if !errors.As(appendErr, &de) || !errors.Is(appendErr, ErrMalformed) {
			t.Fatalf("got %T %v, want a *DecodeError", appendErr, appendErr)
		}
		if got, want := d.Len(), 1; got != want {
			t.Fatalf("got Len %d after rejected input, want %d", got, want)
		}
		if got, want := d.NormalizedLen(), normGood; got != want {
			t.Fatalf("got NormalizedLen %d after rejected input, want %d", got, want)
		}
	}
	normData := d.NormalizedLen() - normGood
	if err := d.Append(tg.good); err != nil {
		t.Fatalf("Append(good) after input: %v", err)
	}

	rec := d.NewRecord()
	defer rec.Release()
	rows := recordRows(t, rec)
	wantRows := 3
	if appendErr != nil {
		wantRows = 2
	}
	if got := len(rows); got != wantRows {
		t.Fatalf("got %d rows, want %d", got, wantRows)
	}
	if got, want := fmt.Sprint(rows[len(rows)-1]), fmt.Sprint(rows[0]); got != want {
		t.Fatalf("good message decoded differently after input:\ngot  %s\nwant %s", got, want)
	}
	if tg.spec != "" {
		norm := d.NewNormalizedRecord()
		defer norm.Release()
		if err := array.ValidateRecordFull(norm); err != nil {
			t.Fatalf("invalid normalized record: %v", err)
		}
		if got, want := norm.NumRows(), int64(2*normGood+normData); got != want {
			t.Fatalf("got %d normalized rows, want %d", got, want)
		}
	}

	if appendErr != nil {
		// Only inputs the decoder accepts go to proto.Unmarshal: with
		// dynamicpb it panics on some map entries whose key has the wrong
		// wire type, which the decoder rejects.
		return
	}
	m := dynamicpb.NewMessage(tg.md)
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(data, m); err != nil {
		t.Fatalf("decoder accepted input that proto.Unmarshal rejects: %v", err)
	}
	if got, want := fmt.Sprint(rows[1]), fmt.Sprint(expectRow(m)); got != want {
		t.Fatalf("decoded row differs from proto.Unmarshal:\ngot  %s\nwant %s", got, want)
	}
}
