package protoarrow

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Decoder appends Protobuf messages of one type to an Arrow record batch
// being built, and optionally to a normalized batch (see [WithNormalizer]).
//
// A Decoder is not safe for concurrent use: give each goroutine its own.
// Call Release when done with it.
type Decoder struct {
	schema *arrow.Schema
	rb     *array.RecordBuilder
	root   *msgNode
	nodes  []*msgNode
	rows   int
	norm   *normalizer
	sized  []sized      // builders presized to the last batch
	flat   *flatDecoder // the one-pass path of flat messages, or nil
}

// NewDecoder compiles md into a decode plan bound to new builders that
// allocate from mem (memory.DefaultAllocator when nil). It fails when md
// cannot be mapped (see [Schema]) or an option is invalid.
func NewDecoder(md protoreflect.MessageDescriptor, mem memory.Allocator, opts ...Option) (*Decoder, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new decoder: %w", err)
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	schema, err := Schema(md)
	if err != nil {
		return nil, fmt.Errorf("new decoder: %w", err)
	}
	var p planner
	root := p.message(md)
	d := &Decoder{schema: schema, root: root}

	if cfg.hasNormalize {
		if d.norm, err = newNormalizer(root, cfg.normalize, mem); err != nil {
			return nil, fmt.Errorf("new decoder: %w", err)
		}
	}
	d.nodes = p.nodes
	if d.norm == nil {
		if d.flat = newFlatDecoder(root, schema, mem); d.flat != nil {
			return d, nil
		}
	}
	d.useBuilders(mem)
	return d, nil
}

// useBuilders binds the general path's plan to new builders.
func (d *Decoder) useBuilders(mem memory.Allocator) {
	d.rb = array.NewRecordBuilder(mem, d.schema)
	d.root.bind(d.rb.Fields())
	d.sized = d.root.collectBuilders(nil)
}

// Schema returns the schema of the main record batches.
func (d *Decoder) Schema() *arrow.Schema { return d.schema }

// NormalizedSchema returns the schema of the normalized batches, or nil
// without a normalizer.
func (d *Decoder) NormalizedSchema() *arrow.Schema {
	if d.norm == nil {
		return nil
	}
	return d.norm.schema
}

// Append decodes one message and appends it as one row, and appends its
// normalized rows if a normalizer is configured. The caller may reuse msg
// once Append returns.
//
// On malformed input it returns a *DecodeError (which matches ErrMalformed)
// and leaves both batches exactly as they were, so the caller can send the
// message to a dead-letter table and go on.
func (d *Decoder) Append(msg []byte) error {
	if d.flat != nil {
		if err := d.flat.append(msg); err != errFlatReject {
			return err
		}
		return d.walkError(msg)
	}
	f, err := d.parse(msg)
	if err != nil {
		return err
	}
	if d.root.hasMaps {
		d.root.dedupeMaps(f)
	}
	d.root.emit(f)
	d.rows++
	if d.norm != nil {
		d.norm.emit(f)
	}
	return nil
}

// parse walks msg into a fresh tree of frames, the general path's first
// step.
func (d *Decoder) parse(msg []byte) (*frame, error) {
	for _, n := range d.nodes {
		n.release()
	}
	f := d.root.get()
	return f, walk(d.root, f, msg, cap(msg))
}

// walkError parses msg with the general walker, which describes what is
// wrong with a message the flat decoder rejected.
func (d *Decoder) walkError(msg []byte) error {
	if _, err := d.parse(msg); err != nil {
		return err
	}
	return &DecodeError{Err: errFlatReject} // the two paths disagree: a bug
}

// Len returns the number of rows pending in the main batch.
func (d *Decoder) Len() int {
	if d.flat != nil {
		return d.flat.rows
	}
	return d.rows
}

// NormalizedLen returns the number of rows pending in the normalized batch,
// or 0 without a normalizer.
func (d *Decoder) NormalizedLen() int {
	if d.norm == nil {
		return 0
	}
	return d.norm.rows
}

// NewRecord returns the pending rows as a record batch, which the caller
// must release, and starts a new batch with the capacity of this one, as
// batches tend to be the same size. Normalized rows stay pending until
// NewNormalizedRecord: flush both at the same message boundary to keep the
// two tables in step.
func (d *Decoder) NewRecord() arrow.RecordBatch {
	if d.flat != nil {
		return d.flat.record(d.schema)
	}
	d.rows = 0
	remember(d.sized)
	rec := d.rb.NewRecordBatch()
	reserve(d.sized)
	return rec
}

// NewNormalizedRecord returns the pending normalized rows as a record batch,
// which the caller must release, and starts a new one. It returns nil
// without a normalizer.
func (d *Decoder) NewNormalizedRecord() arrow.RecordBatch {
	if d.norm == nil {
		return nil
	}
	d.norm.rows = 0
	remember(d.norm.sized)
	rec := d.norm.rb.NewRecordBatch()
	reserve(d.norm.sized)
	return rec
}

// Release frees the builders and any pending rows. The Decoder must not be
// used afterwards.
func (d *Decoder) Release() {
	if d.flat != nil {
		d.flat.release()
	}
	if d.rb != nil {
		d.rb.Release()
		d.rb = nil
	}
	if d.norm != nil {
		d.norm.rb.Release()
		d.norm.rb = nil
	}
	for _, n := range d.nodes {
		n.pool = nil
	}
}
