package protoarrow

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Errors returned by [Compile] and [Schema].
var (
	// ErrUnknownMessage is returned by Compile when the file does not define
	// the requested message.
	ErrUnknownMessage = errors.New("unknown message")
	// ErrRecursive is returned when a message type contains itself, directly
	// or through other messages, so its columns would have no fixed depth.
	ErrRecursive = errors.New("recursive message type")
	// ErrSpec is returned for a normalizer spec that cannot be applied.
	ErrSpec = errors.New("invalid normalizer spec")
)

// Errors that a [DecodeError] wraps. Every DecodeError also matches
// ErrMalformed with errors.Is.
var (
	// ErrMalformed matches every error Append returns for bad input.
	ErrMalformed = errors.New("malformed protobuf message")
	// ErrTruncated means the message ended inside a tag or a value.
	ErrTruncated = errors.New("unexpected end of message")
	// ErrLengthOverflow means a length prefix points past the end of its
	// enclosing message.
	ErrLengthOverflow = errors.New("length exceeds remaining bytes")
	// ErrVarintOverflow means a varint is longer than 10 bytes or overflows
	// 64 bits.
	ErrVarintOverflow = errors.New("varint overflows 64 bits")
	// ErrFieldNumber means a tag carries field number 0 or one above 2^29-1.
	ErrFieldNumber = errors.New("invalid field number")
	// ErrWireType means a known field arrived with a wire type its
	// declaration does not allow, or a reserved wire type was used.
	ErrWireType = errors.New("wrong wire type")
	// ErrGroup means a group is unterminated, ends with the wrong field
	// number, or nests too deeply, or an end-group tag stands alone.
	ErrGroup = errors.New("malformed group")
	// ErrInvalidUTF8 means a string field holds bytes that are not UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8 in string field")
	// ErrInvalidTimestamp means a google.protobuf.Timestamp is out of range.
	ErrInvalidTimestamp = errors.New("invalid timestamp")
)

// DecodeError is the error [Decoder.Append] returns for a message it rejects.
// It says where the problem is, for a dead-letter table.
type DecodeError struct {
	// Path is the field path, such as "items[2].sku", or "" when the error
	// is in a tag of the top-level message.
	Path string
	// Offset is the byte offset in the message where the bad tag or value
	// starts.
	Offset int
	// Err is the cause; it wraps one of the Err* variables of this package.
	Err error
}

// Error formats the path, offset and cause.
func (e *DecodeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("decode message at byte %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("decode field %s at byte %d: %v", e.Path, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is reports that every DecodeError is an ErrMalformed.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

// protowire reports errors as negative lengths; ParseError maps each code
// to a fixed error value, which these hold for comparison.
var (
	wireTruncated = protowire.ParseError(-1)
	wireNumber    = protowire.ParseError(-2)
	wireOverflow  = protowire.ParseError(-3)
	wireReserved  = protowire.ParseError(-4)
)

// wireError turns a negative protowire length into the matching sentinel.
func wireError(code int) error {
	switch err := protowire.ParseError(code); err {
	case wireTruncated:
		return ErrTruncated
	case wireNumber:
		return ErrFieldNumber
	case wireOverflow:
		return ErrVarintOverflow
	case wireReserved:
		return fmt.Errorf("%w: reserved wire type", ErrWireType)
	default:
		return fmt.Errorf("%w: %v", ErrGroup, err)
	}
}
