package protoarrow

import (
	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// kind is how one value of a field is decoded and which Arrow type holds it.
type kind uint8

const (
	kindInt32 kind = iota
	kindSint32
	kindSfixed32
	kindInt64
	kindSint64
	kindSfixed64
	kindUint32
	kindFixed32
	kindUint64
	kindFixed64
	kindBool
	kindFloat
	kindDouble
	kindEnum
	kindString
	kindBytes
	kindMessage   // struct
	kindTimestamp // google.protobuf.Timestamp, a leaf
	kindWrapper   // google.protobuf.*Value, a leaf of the wrapped kind
)

// timestampName is the full name of the Timestamp well-known type.
const timestampName protoreflect.FullName = "google.protobuf.Timestamp"

// wrapperNames lists the google/protobuf/wrappers.proto messages.
var wrapperNames = map[protoreflect.FullName]bool{
	"google.protobuf.DoubleValue": true,
	"google.protobuf.FloatValue":  true,
	"google.protobuf.Int64Value":  true,
	"google.protobuf.UInt64Value": true,
	"google.protobuf.Int32Value":  true,
	"google.protobuf.UInt32Value": true,
	"google.protobuf.BoolValue":   true,
	"google.protobuf.StringValue": true,
	"google.protobuf.BytesValue":  true,
}

// timestampType is the Arrow type of google.protobuf.Timestamp.
var timestampType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// classify returns the kind of one value of fd (for a map field, of an
// entry).
func classify(fd protoreflect.FieldDescriptor) kind {
	switch fd.Kind() {
	case protoreflect.Int32Kind:
		return kindInt32
	case protoreflect.Sint32Kind:
		return kindSint32
	case protoreflect.Sfixed32Kind:
		return kindSfixed32
	case protoreflect.Int64Kind:
		return kindInt64
	case protoreflect.Sint64Kind:
		return kindSint64
	case protoreflect.Sfixed64Kind:
		return kindSfixed64
	case protoreflect.Uint32Kind:
		return kindUint32
	case protoreflect.Fixed32Kind:
		return kindFixed32
	case protoreflect.Uint64Kind:
		return kindUint64
	case protoreflect.Fixed64Kind:
		return kindFixed64
	case protoreflect.BoolKind:
		return kindBool
	case protoreflect.FloatKind:
		return kindFloat
	case protoreflect.DoubleKind:
		return kindDouble
	case protoreflect.EnumKind:
		return kindEnum
	case protoreflect.StringKind:
		return kindString
	case protoreflect.BytesKind:
		return kindBytes
	default: // MessageKind, GroupKind
		name := fd.Message().FullName()
		if fd.IsMap() {
			return kindMessage
		}
		if name == timestampName {
			return kindTimestamp
		}
		if wrapperNames[name] {
			return kindWrapper
		}
		return kindMessage
	}
}

// wireType returns the wire type of one unpacked value of fd.
func wireType(fd protoreflect.FieldDescriptor) protowire.Type {
	switch fd.Kind() {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	default:
		return protowire.VarintType
	}
}

// leafType returns the Arrow type of a scalar kind; it is nil for
// kindMessage and kindWrapper, whose type depends on the descriptor.
func leafType(k kind) arrow.DataType {
	switch k {
	case kindInt32, kindSint32, kindSfixed32:
		return arrow.PrimitiveTypes.Int32
	case kindInt64, kindSint64, kindSfixed64:
		return arrow.PrimitiveTypes.Int64
	case kindUint32, kindFixed32:
		return arrow.PrimitiveTypes.Uint32
	case kindUint64, kindFixed64:
		return arrow.PrimitiveTypes.Uint64
	case kindBool:
		return arrow.FixedWidthTypes.Boolean
	case kindFloat:
		return arrow.PrimitiveTypes.Float32
	case kindDouble:
		return arrow.PrimitiveTypes.Float64
	case kindEnum, kindString:
		return arrow.BinaryTypes.String
	case kindBytes:
		return arrow.BinaryTypes.Binary
	case kindTimestamp:
		return timestampType
	default:
		return nil
	}
}
