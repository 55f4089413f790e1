package ingest

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/quiverdata/quiver/ingest/protoarrow"
)

// batchJob is a numbered batch of messages on its way to a decoder.
type batchJob struct {
	seq     uint64
	chunks  []Chunk
	msgs    int
	bytes   int64
	offsets Offsets // next offset of each partition after this batch
}

// decoded is a batch turned into Arrow, on its way to an inserter. Any of
// its records may be nil when it has no rows.
type decoded struct {
	seq     uint64
	main    arrow.RecordBatch
	norm    arrow.RecordBatch
	dead    arrow.RecordBatch
	offsets Offsets
	msgs    int
	bytes   int64
}

func (d *decoded) rows(r arrow.RecordBatch) int64 {
	if r == nil {
		return 0
	}
	return r.NumRows()
}

// release frees the records.
func (d *decoded) release() {
	for _, r := range []arrow.RecordBatch{d.main, d.norm, d.dead} {
		if r != nil {
			r.Release()
		}
	}
	d.main, d.norm, d.dead = nil, nil, nil
}

// schemas are the Arrow schemas of the three tables a batch writes.
type schemas struct {
	main, norm, dead *arrow.Schema
}

// newSchemas derives the table schemas from the message type.
func newSchemas(md protoreflect.MessageDescriptor, normalize string) (schemas, error) {
	d, err := newBatchDecoder(md, normalize, memory.NewGoAllocator())
	if err != nil {
		return schemas{}, err
	}
	defer d.release()
	return d.schemas, nil
}

// Decoder is the pipeline's decode stage on its own: it turns messages
// into the records a Pipeline inserts, for a caller that decodes without
// Kafka or DuckDB (a benchmark of the stage, say). The main and normalized
// records end with the _partition, _offset and _timestamp columns; a
// message that does not decode becomes a dead letter. A Decoder belongs
// to one goroutine.
type Decoder struct{ bd *batchDecoder }

// NewDecoder returns a decoder of messages of type md that allocates from
// mem. A non-empty normalize is a normalizer spec, as Config.Normalize.
func NewDecoder(md protoreflect.MessageDescriptor, normalize string, mem memory.Allocator) (*Decoder, error) {
	bd, err := newBatchDecoder(md, normalize, mem)
	if err != nil {
		return nil, err
	}
	return &Decoder{bd: bd}, nil
}

// Decode decodes every message of chunks into the main, normalized and
// dead-letter records; each is nil when it has no rows. The caller
// releases the others.
func (d *Decoder) Decode(chunks []Chunk) (main, norm, dead arrow.RecordBatch) {
	dec := d.bd.decode(&batchJob{chunks: chunks})
	return dec.main, dec.norm, dec.dead
}

// Release frees the decoder's builders.
func (d *Decoder) Release() { d.bd.release() }

// batchDecoder turns whole batches into records. It belongs to one
// decoder goroutine.
type batchDecoder struct {
	dec     *protoarrow.Decoder
	schemas schemas
	meta    *metaBuilder // metadata of main rows
	normMet *metaBuilder // metadata of normalized rows; nil without one
	dead    *array.RecordBuilder
}

func newBatchDecoder(md protoreflect.MessageDescriptor, normalize string, mem memory.Allocator) (*batchDecoder, error) {
	var opts []protoarrow.Option
	if normalize != "" {
		opts = append(opts, protoarrow.WithNormalizer(normalize))
	}
	dec, err := protoarrow.NewDecoder(md, mem, opts...)
	if err != nil {
		return nil, err
	}
	b := &batchDecoder{dec: dec, meta: newMetaBuilder(mem)}
	if b.schemas.main, err = withMeta(dec.Schema()); err != nil {
		dec.Release()
		return nil, err
	}
	if ns := dec.NormalizedSchema(); ns != nil {
		if b.schemas.norm, err = withMeta(ns); err != nil {
			dec.Release()
			return nil, fmt.Errorf("normalizer: %w", err)
		}
		b.normMet = newMetaBuilder(mem)
	}
	b.schemas.dead = deadLetterSchema
	b.dead = array.NewRecordBuilder(mem, deadLetterSchema)
	return b, nil
}

// decode appends every message of job and returns the batch's records.
// A message that fails to decode becomes a dead letter.
func (b *batchDecoder) decode(job *batchJob) *decoded {
	for _, c := range job.chunks {
		for i := range c.Messages {
			m := &c.Messages[i]
			before := b.dec.NormalizedLen()
			if err := b.dec.Append(m.Value); err != nil {
				b.appendDead(c.Topic, c.Partition, m, err)
				continue
			}
			b.meta.append(c.Partition, m.Offset, m.Timestamp.UnixMicro())
			if b.normMet != nil {
				for n := b.dec.NormalizedLen() - before; n > 0; n-- {
					b.normMet.append(c.Partition, m.Offset, m.Timestamp.UnixMicro())
				}
			}
		}
	}
	d := &decoded{seq: job.seq, offsets: job.offsets, msgs: job.msgs, bytes: job.bytes}
	d.main = withColumns(b.schemas.main, b.dec.NewRecord(), b.meta)
	if b.normMet != nil {
		d.norm = withColumns(b.schemas.norm, b.dec.NewNormalizedRecord(), b.normMet)
	}
	if dead := b.dead.NewRecordBatch(); dead.NumRows() > 0 {
		d.dead = dead
	} else {
		dead.Release()
	}
	return d
}

// appendDead records a message that failed to decode.
func (b *batchDecoder) appendDead(topic string, partition int32, m *Message, err error) {
	b.dead.Field(0).(*array.StringBuilder).Append(topic)
	b.dead.Field(1).(*array.Int32Builder).Append(partition)
	b.dead.Field(2).(*array.Int64Builder).Append(m.Offset)
	b.dead.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(m.Timestamp.UnixMicro()))
	if m.Value == nil {
		b.dead.Field(4).AppendNull()
	} else {
		b.dead.Field(4).(*array.BinaryBuilder).Append(m.Value)
	}
	b.dead.Field(5).(*array.StringBuilder).Append(err.Error())
}

// release frees the builders.
func (b *batchDecoder) release() {
	b.dec.Release()
	b.meta.release()
	if b.normMet != nil {
		b.normMet.release()
	}
	b.dead.Release()
}

// withColumns joins rec's columns with the metadata built alongside it
// into one record of schema s, or returns nil when there are no rows. It
// releases rec.
func withColumns(s *arrow.Schema, rec arrow.RecordBatch, meta *metaBuilder) arrow.RecordBatch {
	defer rec.Release()
	extra := meta.finish()
	defer func() {
		for _, a := range extra {
			a.Release()
		}
	}()
	if rec.NumRows() == 0 {
		return nil
	}
	cols := append(append(make([]arrow.Array, 0, s.NumFields()), rec.Columns()...), extra...)
	return array.NewRecordBatch(s, cols, rec.NumRows())
}

// metaBuilder builds the _partition, _offset and _timestamp columns.
type metaBuilder struct {
	part *array.Int32Builder
	off  *array.Int64Builder
	ts   *array.TimestampBuilder
}

func newMetaBuilder(mem memory.Allocator) *metaBuilder {
	return &metaBuilder{
		part: array.NewInt32Builder(mem),
		off:  array.NewInt64Builder(mem),
		ts:   array.NewTimestampBuilder(mem, timestampType),
	}
}

func (m *metaBuilder) append(partition int32, offset, micros int64) {
	m.part.Append(partition)
	m.off.Append(offset)
	m.ts.Append(arrow.Timestamp(micros))
}

// finish returns the built columns, which the caller releases.
func (m *metaBuilder) finish() []arrow.Array {
	return []arrow.Array{m.part.NewArray(), m.off.NewArray(), m.ts.NewArray()}
}

func (m *metaBuilder) release() {
	m.part.Release()
	m.off.Release()
	m.ts.Release()
}
