package protoarrow

import (
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func TestDecoder_Malformed(t *testing.T) {
	scalars := compileT(t, "all.proto", "Scalars")
	repeated := compileT(t, "all.proto", "Repeated")
	bid := compileT(t, "all.proto", "BidRequest")
	maps := compileT(t, "all.proto", "Maps")
	legacy := compileT(t, "legacy.proto", "Legacy")
	wk := compileT(t, "all.proto", "WellKnown")

	tsMsg := func(sec int64, nanos int32) []byte {
		return wire{}.varint(1, uint64(sec)).varint(2, uint64(uint32(nanos)))
	}
	deal := func(seat string) []byte { return wire{}.str(1, "d").str(3, seat) }
	// imp[0].pmp.deals[1].wseat holds bad UTF-8.
	badSeat := wire{}.str(1, "req").bytes(2, wire{}.str(1, "i").bytes(4, wire{}.bytes(2, deal("ok")).bytes(2, deal("\xff"))))

	tests := []struct {
		name     string
		md       protoreflect.MessageDescriptor
		msg      []byte
		want     error
		wantPath string
		wantAt   int // byte offset; -1 to skip
	}{
		{"truncated tag", scalars, wire{}.varint(1, 1).raw(0x80), ErrTruncated, "", 2},
		{"truncated varint value", scalars, wire{}.tag(2, protowire.VarintType).raw(0xff, 0xff), ErrTruncated, "i64", 0},
		{"varint over 10 bytes", scalars, wire{}.tag(2, protowire.VarintType).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrVarintOverflow, "i64", 0},
		{"truncated fixed32", scalars, wire{}.tag(7, protowire.Fixed32Type).raw(1, 2), ErrTruncated, "f32", 0},
		{"truncated fixed64", scalars, wire{}.tag(8, protowire.Fixed64Type).raw(1, 2, 3, 4, 5, 6, 7), ErrTruncated, "f64", 0},
		{"length past the end", scalars, wire{}.tag(14, protowire.BytesType).raw(10, 'a', 'b'), ErrLengthOverflow, "str", 0},
		{"huge length", scalars, wire{}.tag(14, protowire.BytesType).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), ErrLengthOverflow, "str", 0},
		{"truncated length", scalars, wire{}.tag(15, protowire.BytesType).raw(0x80), ErrTruncated, "raw", 0},
		{"varint field sent as fixed32", scalars, wire{}.fixed32(2, 1), ErrWireType, "i64", 0},
		{"string sent as varint", scalars, wire{}.varint(14, 1), ErrWireType, "str", 0},
		{"fixed64 sent as varint", scalars, wire{}.varint(1, 1).varint(8, 1), ErrWireType, "f64", 2},
		{"message sent as varint", bid, wire{}.varint(3, 1), ErrWireType, "site", 0},
		{"message sent as group", bid, wire{}.group(3, nil), ErrWireType, "site", 0},
		{"group sent as bytes", legacy, wire{}.bytes(3, nil), ErrWireType, "info", 0},
		{"repeated string sent as varint", repeated, wire{}.varint(7, 1), ErrWireType, "str", 0},
		{"repeated int sent as fixed64", repeated, wire{}.fixed64(1, 1), ErrWireType, "i32", 0},
		{"invalid UTF-8", scalars, wire{}.str(14, "ok\xc3"), ErrInvalidUTF8, "str", 0},
		{"invalid UTF-8 in a list", repeated, wire{}.str(7, "a").str(7, "\xed\xa0\x80"), ErrInvalidUTF8, "str", 3},
		{"invalid UTF-8 deep inside lists", bid, badSeat, ErrInvalidUTF8, "imp[0].pmp.deals[1].wseat", -1},
		{"invalid UTF-8 in a map key", maps, wire{}.bytes(1, wire{}.str(1, "\xff").varint(2, 1)), ErrInvalidUTF8, "counts[0].key", 2},
		{"bytes may hold anything", scalars, nil, nil, "", 0},
		{"field number zero", scalars, wire{}.raw(0x00, 0x01), ErrFieldNumber, "", 0},
		{"field number too large", scalars, wire{}.raw(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3)...), ErrFieldNumber, "", 0},
		{"reserved wire type on unknown field", scalars, wire{}.tag(99, 6), ErrWireType, "", 0},
		{"reserved wire type on known field", scalars, wire{}.tag(2, 7), ErrWireType, "i64", 0},
		{"lone end group", scalars, wire{}.tag(99, protowire.EndGroupType), ErrGroup, "", 0},
		{"unterminated unknown group", scalars, wire{}.tag(99, protowire.StartGroupType).varint(1, 1), ErrTruncated, "", 0},
		{"mismatched end group", scalars, wire{}.tag(99, protowire.StartGroupType).tag(98, protowire.EndGroupType), ErrGroup, "", 0},
		{"unterminated known group", legacy, wire{}.tag(3, protowire.StartGroupType).str(4, "x"), ErrTruncated, "info", 0},
		{"truncated unknown bytes", scalars, wire{}.tag(99, protowire.BytesType).raw(5, 1), ErrTruncated, "", 0},
		{"packed fixed32 not a multiple of 4", repeated, wire{}.bytes(4, []byte{1, 2, 3}), ErrTruncated, "f32", 0},
		{"packed varint truncated", repeated, wire{}.bytes(1, []byte{1, 0x80}), ErrTruncated, "i32", 0},
		{"length overflow in nested message", bid, wire{}.bytes(2, wire{}.tag(1, protowire.BytesType).raw(9)), ErrLengthOverflow, "imp[0].id", 2},
		{"nested message longer than parent", bid, wire{}.tag(2, protowire.BytesType).raw(50, 1), ErrLengthOverflow, "imp", 0},
		{"timestamp seconds out of range", wk, wire{}.bytes(1, tsMsg(maxTimestampSeconds+1, 0)), ErrInvalidTimestamp, "at", 0},
		{"timestamp negative nanos", wk, wire{}.bytes(2, tsMsg(0, 0)).bytes(2, tsMsg(0, -1)), ErrInvalidTimestamp, "history[1]", 6},
		{"timestamp nanos too big", wk, wire{}.bytes(1, tsMsg(0, 1_000_000_000)), ErrInvalidTimestamp, "at", 0},
		{"timestamp wrong wire type inside", wk, wire{}.bytes(1, wire{}.fixed64(1, 1)), ErrWireType, "at.seconds", 2},
		{"wrapper wrong wire type inside", wk, wire{}.bytes(5, wire{}.str(1, "x")), ErrWireType, "i64.value", 2},
		{"min timestamp is fine", wk, wire{}.bytes(1, tsMsg(minTimestampSeconds, 0)), nil, "", 0},
		{"max int64 varint is fine", scalars, wire{}.varint(2, math.MaxUint64), nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := checkedMem()
			defer mem.AssertSize(t, 0)
			d, err := NewDecoder(tt.md, mem)
			if err != nil {
				t.Fatalf("NewDecoder: %v", err)
			}
			defer d.Release()

			good := marshalT(t, randomMessage(newRand(tt.name), tt.md))
			if err := d.Append(good); err != nil {
				t.Fatalf("Append(good): %v", err)
			}
			err = d.Append(tt.msg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				flushT(t, d)
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want errors.Is %v and ErrMalformed", err, tt.want)
			}
			t.Logf("error: %v", err)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %T, want *DecodeError", err)
			}
			if got, want := de.Path, tt.wantPath; got != want {
				t.Errorf("got path %q, want %q", got, want)
			}
			if got, want := de.Offset, tt.wantAt; want >= 0 && got != want {
				t.Errorf("got offset %d, want %d", got, want)
			}
			if got, want := d.Len(), 1; got != want {
				t.Errorf("got Len %d after a bad message, want %d", got, want)
			}

			if err := d.Append(good); err != nil {
				t.Fatalf("Append(good) after bad: %v", err)
			}
			rows := flushT(t, d)
			if got, want := len(rows), 2; got != want {
				t.Fatalf("got %d rows, want %d", got, want)
			}
			checkRows(t, rows[1:], rows[:1])
		})
	}
}

func TestDecodeError_Error(t *testing.T) {
	md := compileT(t, "all.proto", "BidRequest")
	d, err := NewDecoder(md, nil)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	defer d.Release()
	err = d.Append(wire{}.str(1, "x").bytes(2, wire{}.str(1, "\xff")))
	got, want := err.Error(), "decode field imp[0].id at byte 5: invalid UTF-8 in string field"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	err = d.Append(wire{}.raw(0x80))
	if got, want := err.Error(), "decode message at byte 0: unexpected end of message"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !strings.Contains(d.Append(wire{}.varint(1, 1)).Error(), "got varint, want bytes") {
		t.Errorf("got no wire type detail")
	}
}
