package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
)

const topic = "t"

// fakeHandler stands in for the pipeline: every delivery is committed at
// once.
type fakeHandler struct {
	mu        sync.Mutex
	stored    ingest.Offsets
	committed ingest.Offsets
	seen      map[int32][]int64
	total     int
	flushes   int
	marks     map[int32]int64 // high watermarks reported
}

func newFakeHandler(stored ingest.Offsets) *fakeHandler {
	if stored == nil {
		stored = ingest.Offsets{}
	}
	return &fakeHandler{stored: stored, committed: stored.Clone(), seen: map[int32][]int64{}, marks: map[int32]int64{}}
}

func (h *fakeHandler) Ready(ctx context.Context) error { return ctx.Err() }

func (h *fakeHandler) Deliver(_ context.Context, chunks []ingest.Chunk) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range chunks {
		for _, m := range c.Messages {
			h.seen[c.Partition] = append(h.seen[c.Partition], m.Offset)
			h.total++
		}
		h.committed.Advance(c.Topic, c.Partition, c.Messages[len(c.Messages)-1].Offset+1)
	}
	return nil
}

func (h *fakeHandler) Stored(t string, p int32) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stored.Get(t, p)
}

func (h *fakeHandler) Flush(context.Context) (ingest.Offsets, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushes++
	return h.committed.Clone(), nil
}

func (h *fakeHandler) Assigned(context.Context, string, []int32) error { return nil }

func (h *fakeHandler) Release(ctx context.Context, _ string, _ []int32, _ bool) (ingest.Offsets, error) {
	return h.Flush(ctx)
}

func (h *fakeHandler) StoredWins() bool { return false }

func (h *fakeHandler) Watermarks(_ string, marks map[int32]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, n := range marks {
		h.marks[p] = max(h.marks[p], n)
	}
}

func (h *fakeHandler) ReportError(error) {}

func (h *fakeHandler) Committed() ingest.Offsets {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.committed.Clone()
}

func (h *fakeHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

func cluster(t *testing.T, partitions int32) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produce writes n records, record i to partition i % partitions.
func produce(t *testing.T, addrs []string, partitions int32, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		cl.Produce(context.Background(), &kgo.Record{Partition: int32(i) % partitions, Value: []byte(fmt.Sprint(i))}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func logger() *slog.Logger {
	lvl := slog.LevelWarn
	if os.Getenv("QUIVER_TEST_LOG") != "" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

func newSource(t *testing.T, addrs []string, group string, opts ...kafka.Opt) *kafka.Source {
	t.Helper()
	src, err := kafka.New(append([]kafka.Opt{kafka.Brokers(addrs...), kafka.Topic(topic), kafka.Group(group),
		kafka.Logger(logger()), kafka.CommitInterval(100 * time.Millisecond), kafka.SessionTimeout(6 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// runUntil runs src until h has seen want records, then stops it.
func runUntil(t *testing.T, src *kafka.Source, h *fakeHandler, want int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, h) }()
	deadline := time.After(30 * time.Second)
	for h.count() < want {
		select {
		case <-deadline:
			cancel()
			t.Fatalf("got %d records, want %d", h.count(), want)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// kafkaCommitted returns the group's committed offsets.
func kafkaCommitted(t *testing.T, addrs []string, group string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
	return out
}

// checkContiguous checks each partition's offsets run from[p], from[p]+1, …
func checkContiguous(t *testing.T, seen map[int32][]int64, from map[int32]int64) {
	t.Helper()
	for p, offs := range seen {
		for i, o := range offs {
			if want := from[p] + int64(i); o != want {
				t.Fatalf("partition %d record %d: got offset %d, want %d", p, i, o, want)
			}
		}
	}
}

func TestSource_ConsumeAndCommit(t *testing.T) {
	const n, parts = 3000, 3
	addrs := cluster(t, parts)
	produce(t, addrs, parts, n)
	h := newFakeHandler(nil)
	runUntil(t, newSource(t, addrs, "g"), h, n)
	checkContiguous(t, h.seen, map[int32]int64{})
	if h.total != n {
		t.Errorf("got %d records, want %d", h.total, n)
	}
	got := kafkaCommitted(t, addrs, "g")
	for p := int32(0); p < parts; p++ {
		if want := int64(n / parts); got[p] != want {
			t.Errorf("partition %d: Kafka committed %d, want %d", p, got[p], want)
		}
	}
	if h.flushes == 0 {
		t.Error("no flush before leaving the group")
	}
	for p := int32(0); p < parts; p++ {
		if want := int64(n / parts); h.marks[p] != want {
			t.Errorf("partition %d: high watermark reported %d, want %d", p, h.marks[p], want)
		}
	}
}

// TestSource_WatermarksWhenCaughtUp checks that the high watermarks of
// partitions with nothing to consume are looked up: no fetch reports them.
func TestSource_WatermarksWhenCaughtUp(t *testing.T) {
	const n, parts = 300, 3
	addrs := cluster(t, parts)
	produce(t, addrs, parts, n)
	stored := ingest.Offsets{}
	for p := int32(0); p < parts; p++ {
		stored.Set(topic, p, n/parts)
	}
	h := newFakeHandler(stored)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- newSource(t, addrs, "g").Run(ctx, h) }()
	marks := func() map[int32]int64 {
		h.mu.Lock()
		defer h.mu.Unlock()
		return maps.Clone(h.marks)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(marks()) < parts && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	for p := int32(0); p < parts; p++ {
		if got := marks()[p]; got != n/parts {
			t.Errorf("partition %d: high watermark %d, want %d (all: %v)", p, got, n/parts, marks())
		}
	}
	if h.count() != 0 {
		t.Errorf("consumed %d records, want none", h.count())
	}
}

func TestSource_ResumesAtStoredOffsets(t *testing.T) {
	const n, parts = 300, 3
	addrs := cluster(t, parts)
	produce(t, addrs, parts, n)
	// Kafka has a commit for partition 2 beyond DuckDB's, as when another
	// process consumed it, and one for partition 1 behind DuckDB's, as when
	// this process died before its Kafka commit.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	var off kadm.Offsets
	off.Add(kadm.Offset{Topic: topic, Partition: 1, At: 5, LeaderEpoch: -1})
	off.Add(kadm.Offset{Topic: topic, Partition: 2, At: 70, LeaderEpoch: -1})
	if _, err := kadm.NewClient(cl).CommitOffsets(context.Background(), "g", off); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	stored := ingest.Offsets{}
	stored.Set(topic, 0, 10)
	stored.Set(topic, 1, 20)
	stored.Set(topic, 2, 30)
	h := newFakeHandler(stored)
	from := map[int32]int64{0: 10, 1: 20, 2: 70}
	runUntil(t, newSource(t, addrs, "g"), h, n-10-20-70)
	checkContiguous(t, h.seen, from)
}

func TestSource_StartLatest(t *testing.T) {
	addrs := cluster(t, 1)
	produce(t, addrs, 1, 50)
	h := newFakeHandler(nil)
	src := newSource(t, addrs, "g", kafka.StartOffset("latest"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, h) }()
	time.Sleep(2 * time.Second) // join the group and start at the end
	produce(t, addrs, 1, 5)
	deadline := time.Now().Add(30 * time.Second)
	for h.count() < 5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if got := h.count(); got < 5 {
		t.Fatalf("records after the group joined: got %d in 30s, want 5", got)
	}
	checkContiguous(t, h.seen, map[int32]int64{0: 50})
}

// TestSource_Rebalance runs two members of one group, each with its own
// handler (as two processes with their own databases). The second joins
// midway; the first flushes and commits before handing partitions over,
// so together they see every record exactly once.
func TestSource_Rebalance(t *testing.T) {
	const parts = 4
	addrs := cluster(t, parts)
	produce(t, addrs, parts, 400)
	ha, hb := newFakeHandler(nil), newFakeHandler(nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = newSource(t, addrs, "g").Run(ctx, ha) }()
	for ha.count() < 400 {
		time.Sleep(20 * time.Millisecond)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = newSource(t, addrs, "g").Run(ctx, hb) }()
	deadline := time.Now().Add(20 * time.Second)
	for hb.count() == 0 && time.Now().Before(deadline) {
		produce(t, addrs, parts, 40)
		time.Sleep(300 * time.Millisecond)
	}
	produce(t, addrs, parts, 400)
	time.Sleep(2 * time.Second)
	cancel()
	wg.Wait()
	if hb.count() == 0 {
		t.Fatal("the second member got no partition")
	}
	if ha.flushes == 0 {
		t.Error("the first member gave partitions up without a flush")
	}
	// Merge what each saw: every partition must be 0..end, each once.
	merged := map[int32]map[int64]int{}
	for _, h := range []*fakeHandler{ha, hb} {
		for p, offs := range h.seen {
			if merged[p] == nil {
				merged[p] = map[int64]int{}
			}
			for _, o := range offs {
				merged[p][o]++
			}
		}
	}
	total := 0
	for p, offs := range merged {
		for o := int64(0); o < int64(len(offs)); o++ {
			if offs[o] != 1 {
				t.Errorf("partition %d offset %d seen %d times", p, o, offs[o])
			}
		}
		total += len(offs)
	}
	if produced := ha.count() + hb.count(); total != produced {
		t.Errorf("distinct records %d, deliveries %d", total, produced)
	}
}

func TestNew_Validate(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []kafka.Opt
	}{
		{"no brokers", []kafka.Opt{kafka.Topic("t"), kafka.Group("g")}},
		{"bad broker", []kafka.Opt{kafka.Brokers("nohost"), kafka.Topic("t"), kafka.Group("g")}},
		{"no topic", []kafka.Opt{kafka.Brokers("h:1"), kafka.Group("g")}},
		{"no group", []kafka.Opt{kafka.Brokers("h:1"), kafka.Topic("t")}},
		{"bad start", []kafka.Opt{kafka.Brokers("h:1"), kafka.Topic("t"), kafka.Group("g"), kafka.StartOffset("middle")}},
		{"bad clients", []kafka.Opt{kafka.Brokers("h:1"), kafka.Topic("t"), kafka.Group("g"), kafka.Clients(-1)}},
		{"negative fetch max", []kafka.Opt{kafka.Brokers("h:1"), kafka.Topic("t"), kafka.Group("g"), kafka.FetchMaxBytes(-1)}},
		{"negative partition fetch", []kafka.Opt{kafka.Brokers("h:1"), kafka.Topic("t"), kafka.Group("g"), kafka.FetchMaxPartitionBytes(-1)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := kafka.New(tt.opts...); err == nil {
				t.Error("got no error")
			}
		})
	}
	if _, err := kafka.New(kafka.Brokers("a:1, b:2"), kafka.Topic("t"), kafka.Group("g")); err != nil {
		t.Errorf("comma-separated brokers: %v", err)
	}
}

func TestSource_Check(t *testing.T) {
	addrs := cluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := newSource(t, addrs, "g").Check(ctx)
	if err != nil || n != 2 {
		t.Errorf("existing topic: got %d, %v; want 2 partitions", n, err)
	}
	src, _ := kafka.New(kafka.Brokers(addrs...), kafka.Topic("missing"), kafka.Group("g"), kafka.Logger(logger()))
	if _, err := src.Check(ctx); err == nil {
		t.Error("missing topic: got no error")
	}
}
