package protoarrow

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Schema returns the Arrow schema of the rows a [Decoder] builds from md,
// following the mapping and presence rules of the package documentation.
// Columns are md's fields in declaration order, named as in the .proto file.
// It fails with ErrRecursive when a message type contains itself.
func Schema(md protoreflect.MessageDescriptor) (*arrow.Schema, error) {
	w := schemaWalk{root: md.FullName()}
	fields, err := w.fields(md, false)
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

// schemaWalk builds Arrow types depth first and detects cycles.
type schemaWalk struct {
	root  protoreflect.FullName
	stack []protoreflect.FullName // messages being expanded
	path  []string                // field names from the root
}

// fields returns one Arrow field per field of md.
func (w *schemaWalk) fields(md protoreflect.MessageDescriptor, inStruct bool) ([]arrow.Field, error) {
	if err := w.push(md); err != nil {
		return nil, err
	}
	defer func() { w.stack = w.stack[:len(w.stack)-1] }()

	fds := md.Fields()
	out := make([]arrow.Field, fds.Len())
	for i := range out {
		fd := fds.Get(i)
		w.path = append(w.path, string(fd.Name()))
		t, err := w.columnType(fd)
		w.path = w.path[:len(w.path)-1]
		if err != nil {
			return nil, err
		}
		out[i] = arrow.Field{Name: string(fd.Name()), Type: t, Nullable: inStruct || nullWhenAbsent(fd)}
	}
	return out, nil
}

// push enters md, or reports the cycle that entering it would close.
func (w *schemaWalk) push(md protoreflect.MessageDescriptor) error {
	for _, name := range w.stack {
		if name == md.FullName() {
			return fmt.Errorf("schema %s: %w: %s contains itself through field path %s",
				w.root, ErrRecursive, md.FullName(), strings.Join(w.path, "."))
		}
	}
	w.stack = append(w.stack, md.FullName())
	return nil
}

// columnType returns the Arrow type of the whole field: a list or map for
// repeated fields, else the type of one value.
func (w *schemaWalk) columnType(fd protoreflect.FieldDescriptor) (arrow.DataType, error) {
	if fd.IsMap() {
		k, err := w.valueType(fd.MapKey())
		if err != nil {
			return nil, err
		}
		v, err := w.valueType(fd.MapValue())
		if err != nil {
			return nil, err
		}
		return arrow.MapOf(k, v), nil
	}
	t, err := w.valueType(fd)
	if err != nil {
		return nil, err
	}
	if fd.IsList() {
		return arrow.ListOfNonNullable(t), nil
	}
	return t, nil
}

// valueType returns the Arrow type of one value of fd.
func (w *schemaWalk) valueType(fd protoreflect.FieldDescriptor) (arrow.DataType, error) {
	switch k := classify(fd); k {
	case kindMessage:
		fields, err := w.fields(fd.Message(), true)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	case kindWrapper:
		return leafType(classify(fd.Message().Fields().ByNumber(1))), nil
	default:
		return leafType(k), nil
	}
}

// nullWhenAbsent reports whether an absent fd is null rather than its zero
// value: singular fields with presence.
func nullWhenAbsent(fd protoreflect.FieldDescriptor) bool {
	return fd.HasPresence() && !fd.IsList() && !fd.IsMap()
}
