package ingest

import (
	"maps"
	"time"
)

// Message is one record as the pipeline sees it.
type Message struct {
	// Offset is the record's position in its partition.
	Offset int64
	// Timestamp is the record's timestamp (producer or broker time).
	Timestamp time.Time
	// Value is the Protobuf-encoded payload. The pipeline reads it until
	// the batch holding it is decoded and never modifies it.
	Value []byte
}

// Chunk is a run of messages from one partition, in offset order.
type Chunk struct {
	// Topic and Partition say where the messages come from.
	Topic     string
	Partition int32
	// Messages are in offset order; offsets may have gaps (compaction,
	// transaction markers) but nothing consumed may be left out.
	Messages []Message
}

// Offsets maps topic and partition to the next offset to consume.
type Offsets map[string]map[int32]int64

// Get returns the next offset of a partition, if known.
func (o Offsets) Get(topic string, partition int32) (int64, bool) {
	n, ok := o[topic][partition]
	return n, ok
}

// Set records the next offset of a partition.
func (o Offsets) Set(topic string, partition int32, next int64) {
	m := o[topic]
	if m == nil {
		m = map[int32]int64{}
		o[topic] = m
	}
	m[partition] = next
}

// Advance raises the next offset of a partition to next; it never lowers it.
func (o Offsets) Advance(topic string, partition int32, next int64) {
	if cur, ok := o.Get(topic, partition); !ok || next > cur {
		o.Set(topic, partition, next)
	}
}

// Merge advances o by every offset of other.
func (o Offsets) Merge(other Offsets) {
	for t, ps := range other {
		for p, n := range ps {
			o.Advance(t, p, n)
		}
	}
}

// Clone returns a deep copy.
func (o Offsets) Clone() Offsets {
	c := make(Offsets, len(o))
	for t, ps := range o {
		c[t] = maps.Clone(ps)
	}
	return c
}
