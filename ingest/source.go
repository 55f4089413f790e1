package ingest

import "context"

// Source feeds a Pipeline. Package ingest/kafka has the Kafka one.
type Source interface {
	// Run consumes until ctx is done or consumption fails, handing every
	// message to h. Before it returns after ctx is done it should
	// h.Flush, so that everything delivered is committed, and then record
	// h.Committed() wherever it keeps positions of its own.
	//
	// A source must resume each partition it starts consuming at
	// h.Stored, when that is set, and never deliver a message twice
	// within one Run.
	Run(ctx context.Context, h Handler) error
}

// Handler is the pipeline side a Source talks to. Its methods are safe for
// concurrent use.
type Handler interface {
	// Ready blocks while the pipeline is paused (the disk is too full) and
	// returns an error once the pipeline has failed or ctx is done. Call
	// it before fetching more messages.
	Ready(ctx context.Context) error
	// Deliver hands over chunks. It blocks while the pipeline's queues are
	// full and fails once the pipeline has failed or ctx is done. Chunks
	// of one partition must arrive in offset order without gaps in what
	// was consumed.
	Deliver(ctx context.Context, chunks []Chunk) error
	// Stored returns the next offset DuckDB holds for a partition, if any.
	Stored(topic string, partition int32) (int64, bool)
	// Flush commits everything delivered so far and returns the committed
	// offsets. Call it before giving up partitions.
	Flush(ctx context.Context) (Offsets, error)
	// Committed returns the offsets committed so far: to DuckDB, or with
	// a lake, to the lake.
	Committed() Offsets
	// Assigned is called when the source starts consuming partitions of
	// topic, before it asks Stored where they resume. With a lake it
	// commits what the process still holds of them and takes their
	// positions from the lake.
	Assigned(ctx context.Context, topic string, partitions []int32) error
	// Release is called before the source gives partitions up, with
	// commit true when what was delivered of them may still be committed
	// (a revocation, a clean stop) and false when they are already
	// another member's. It returns their committed offsets, to report to
	// Kafka. Without a lake it is Flush.
	Release(ctx context.Context, topic string, partitions []int32, commit bool) (Offsets, error)
	// StoredWins reports whether Stored is the truth even when Kafka's
	// committed offset is further along (with a lake, it is; without one,
	// a further Kafka offset means another process ingested the rows into
	// its own database).
	StoredWins() bool
	// Watermarks records partitions' high watermarks as the source last
	// saw them (every fetch carries them), for the consumer lag that
	// Pipeline.Live and the metrics show. It does not block.
	Watermarks(topic string, marks map[int32]int64)
	// ReportError records an error the source hit and carries on after (a
	// failed fetch or offset commit, which it retries), so that
	// Pipeline.Live shows it. An error that stops the source is returned
	// by Run instead.
	ReportError(err error)
}

// ClientCounter is implemented by sources that consume with several
// clients, for the report's kafka_clients line.
type ClientCounter interface {
	Clients() int
}

// TopicNamer is implemented by sources that consume one topic, for
// Pipeline.Live's topic.
type TopicNamer interface {
	Topic() string
}
