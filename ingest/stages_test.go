package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func msgs(from, n int) []Message {
	out := make([]Message, n)
	for i := range out {
		out[i] = Message{Offset: int64(from + i), Value: []byte{byte(i)}}
	}
	return out
}

func TestBatcher_Cut(t *testing.T) {
	in := make(chan inItem, 10)
	out := make(chan *batchJob, 10)
	b := &batcher{size: 100, linger: time.Hour, in: in, out: out}
	done := make(chan error, 1)
	go func() { done <- b.run(context.Background()) }()

	in <- inItem{chunks: []Chunk{{Topic: "t", Partition: 0, Messages: msgs(0, 150)}, {Topic: "t", Partition: 1, Messages: msgs(500, 70)}}}
	reply := make(chan uint64, 1)
	in <- inItem{flush: reply}
	if got := <-reply; got != 3 {
		t.Errorf("flush: got last batch %d, want 3", got)
	}
	in <- inItem{chunks: []Chunk{{Topic: "t", Partition: 0, Messages: msgs(150, 5)}}}
	close(in)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []*batchJob
	for j := range out {
		got = append(got, j)
	}
	want := []struct {
		seq        uint64
		msgs       int
		next0, nxt int64 // next offsets of partitions 0 and 1 (-1: absent)
	}{{1, 100, 100, -1}, {2, 100, 150, 550}, {3, 20, -1, 570}, {4, 5, 155, -1}}
	if len(got) != len(want) {
		t.Fatalf("got %d batches, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		n0, ok0 := g.offsets.Get("t", 0)
		n1, ok1 := g.offsets.Get("t", 1)
		if !ok0 {
			n0 = -1
		}
		if !ok1 {
			n1 = -1
		}
		if g.seq != w.seq || g.msgs != w.msgs || n0 != w.next0 || n1 != w.nxt {
			t.Errorf("batch %d: got seq %d, %d msgs, next %d/%d; want %+v", i, g.seq, g.msgs, n0, n1, w)
		}
	}
}

// TestBatcher_MaxBytes checks that a batch is cut once it holds maxBytes of
// messages, whatever its row count, and that a message larger than the cap
// makes a batch of its own.
func TestBatcher_MaxBytes(t *testing.T) {
	in := make(chan inItem, 10)
	out := make(chan *batchJob, 10)
	b := &batcher{size: 100, maxBytes: 35, linger: time.Hour, in: in, out: out}
	done := make(chan error, 1)
	go func() { done <- b.run(context.Background()) }()

	sized := func(from, n, size int) []Message {
		out := make([]Message, n)
		for i := range out {
			out[i] = Message{Offset: int64(from + i), Value: make([]byte, size)}
		}
		return out
	}
	in <- inItem{chunks: []Chunk{
		{Topic: "t", Partition: 0, Messages: sized(0, 6, 10)},  // 4, then 2 …
		{Topic: "t", Partition: 1, Messages: sized(0, 3, 10)},  // … +2, then 1 …
		{Topic: "t", Partition: 2, Messages: sized(0, 1, 100)}, // … +1 (131 bytes)
		{Topic: "t", Partition: 3, Messages: sized(0, 2, 100)}, // one each
	}}
	close(in)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []string
	for j := range out {
		got = append(got, fmt.Sprintf("%d/%d", j.msgs, j.bytes))
	}
	want := []string{"4/40", "4/40", "2/110", "1/100", "1/100"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batches (messages/bytes): got %v, want %v", got, want)
	}
}

func TestBatcher_Linger(t *testing.T) {
	in := make(chan inItem, 1)
	out := make(chan *batchJob, 1)
	b := &batcher{size: 100, linger: 30 * time.Millisecond, in: in, out: out}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.run(ctx)
	in <- inItem{chunks: []Chunk{{Topic: "t", Messages: msgs(0, 3)}}}
	select {
	case j := <-out:
		if j.msgs != 3 {
			t.Errorf("got %d messages, want 3", j.msgs)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a partial batch was not cut after the flush interval")
	}
}

func TestBudget(t *testing.T) {
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_budget"})
	b := newBudget(10, gauge)
	ctx := context.Background()
	if err := b.acquire(ctx, ctx, 8); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, ctx, 5) }()
	select {
	case <-got:
		t.Fatal("acquire over the cap did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(8)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(gauge); got != 5 {
		t.Errorf("gauge: got %v, want 5", got)
	}
	b.release(5)
	// An oversized request passes when nothing is held.
	if err := b.acquire(ctx, ctx, 25); err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("stage failed"))
	if err := b.acquire(ctx, stop, 1); err == nil || err.Error() != "stage failed" {
		t.Errorf("acquire after failure: got %v, want the failure", err)
	}
}

func TestSequencer(t *testing.T) {
	s := newSequencer()
	ctx := context.Background()
	if err := s.wait(ctx, 0); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.wait(ctx, 2) }()
	s.finish(1)
	select {
	case <-waited:
		t.Fatal("wait(2) returned after 1 committed")
	case <-time.After(30 * time.Millisecond):
	}
	s.finish(2)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	go func() { waited <- s.wait(ctx, 5) }()
	s.fail(errors.New("commit failed"))
	if err := <-waited; err == nil {
		t.Error("wait after fail: got nil")
	}
	if s.committed() != 2 {
		t.Errorf("committed: got %d, want 2", s.committed())
	}
}

func TestReport_WriteText(t *testing.T) {
	r := Report{NumCPU: 60, OS: "linux", KafkaClients: 5, Records: 123_686_901, NormRecords: 122_212_452,
		Bytes: 146_530_000_000, Start: time.Date(2025, 2, 24, 21, 6, 23, 0, time.UTC)}
	r.finish(r.Start.Add(4*time.Minute + 59585*time.Millisecond))
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"records:                123_686_901.00\n",
		"data_transferred:       146.53 GB\n",
		"duration:               4m59.585s\n",
		"records_per_second:     412_860.79\n",
		"transfer_rate:          489.11 MB/second\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

// TestDeliver_ByteBudget checks that Deliver holds the source back once
// the bytes of the undecoded messages reach their cap, even while the
// message count has room, and gives the budgets back when it fails.
func TestDeliver_ByteBudget(t *testing.T) {
	p := &Pipeline{
		budget:     newBudget(1000, prometheus.NewGauge(prometheus.GaugeOpts{Name: "m"})),
		byteBudget: newBudget(100, prometheus.NewGauge(prometheus.GaugeOpts{Name: "b"})),
		in:         make(chan inItem, 10),
		stop:       context.Background(),
	}
	h := handler{p: p}
	ctx := context.Background()
	chunk := func(n, size int) []Chunk {
		ms := make([]Message, n)
		for i := range ms {
			ms[i] = Message{Offset: int64(i), Value: make([]byte, size)}
		}
		return []Chunk{{Topic: "t", Messages: ms}}
	}
	if err := h.Deliver(ctx, chunk(4, 20)); err != nil { // 80 bytes
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- h.Deliver(ctx, chunk(1, 30)) }() // 110 > 100
	select {
	case err := <-got:
		t.Fatalf("Deliver over the byte cap did not wait (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.budget.release(4) // the decoder's release of the first batch
	p.byteBudget.release(80)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if p.budget.used != 1 || p.byteBudget.used != 30 {
		t.Fatalf("held %d messages and %d bytes, want 1 and 30", p.budget.used, p.byteBudget.used)
	}
	// A cancelled Deliver gives both back.
	cctx, cancel := context.WithCancel(ctx)
	go func() { got <- h.Deliver(cctx, chunk(2, 40)) }() // 110 > 100
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if p.budget.used != 1 || p.byteBudget.used != 30 {
		t.Fatalf("after the cancelled Deliver: held %d messages and %d bytes, want 1 and 30", p.budget.used, p.byteBudget.used)
	}
}
