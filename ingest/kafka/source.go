package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/quiverdata/quiver/ingest"
)

// flushTimeout bounds the flush and commit done before partitions are
// given up; it stays under franz-go's default rebalance timeout.
const flushTimeout = 45 * time.Second

// fetchMaxWait is how long a broker may hold a fetch that finds no new
// records (Kafka's own consumers wait 500 ms; franz-go 5 s). A partition
// assigned to a member that keeps others (a cooperative rebalance) is
// fetched only once the fetch in flight returns: with franz-go's 5 s, a
// caught-up member left a newly assigned partition unfetched that long,
// longer than a short --idle-exit, so it could stop idle while the
// partition held messages nobody consumed.
const fetchMaxWait = 500 * time.Millisecond

// errorBackoff is the pause after a poll that returned only errors.
const errorBackoff = 250 * time.Millisecond

// watermarkRefresh is how often a member looks up the high watermarks of
// its partitions that no fetch brought news of meanwhile (caught up and
// idle, or paused), so the lag the pipeline shows stays current.
const watermarkRefresh = 5 * time.Second

// ErrUnknownTopic is returned by Check when the topic does not exist.
var ErrUnknownTopic = errors.New("unknown topic")

// Source consumes one topic as members of a consumer group and implements
// ingest.Source.
type Source struct {
	cfg cfg
	log *slog.Logger
}

// New validates the options and returns a Source. It does not connect.
func New(opts ...Opt) (*Source, error) {
	var c cfg
	for _, o := range opts {
		o(&c)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	return &Source{cfg: c, log: c.log.With("component", "ingest.kafka")}, nil
}

// Clients is how many group members the source runs.
func (s *Source) Clients() int { return s.cfg.clients }

// Topic is the topic the source consumes.
func (s *Source) Topic() string { return s.cfg.topic }

// Check connects to the brokers and looks the topic up, so that a wrong
// address or topic fails at start with a clear message. It returns the
// topic's partition count.
func (s *Source) Check(ctx context.Context) (int, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.cfg.brokers...),
		kgo.WithLogger(kgoLogger{s.log})}, s.cfg.extra...)...)
	if err != nil {
		return 0, fmt.Errorf("create kafka client: %w", err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return 0, fmt.Errorf("reach brokers %s: %w", strings.Join(s.cfg.brokers, ","), err)
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx, s.cfg.topic)
	if err != nil {
		return 0, fmt.Errorf("look up topic %s: %w", s.cfg.topic, err)
	}
	if !topics.Has(s.cfg.topic) {
		return 0, fmt.Errorf("look up topic %s: %w", s.cfg.topic, ErrUnknownTopic)
	}
	if err := topics[s.cfg.topic].Err; err != nil {
		return 0, fmt.Errorf("look up topic %s: %w", s.cfg.topic, err)
	}
	return len(topics[s.cfg.topic].Partitions), nil
}

// Run consumes with every member until ctx is done or a member fails,
// then has the pipeline commit what was delivered, commits those offsets
// to Kafka and leaves the group.
func (s *Source) Run(ctx context.Context, h ingest.Handler) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	members := make([]*member, s.cfg.clients)
	for i := range members {
		m, err := newMember(s, i, h)
		if err != nil {
			for _, m := range members[:i] {
				m.cl.Close()
			}
			return err
		}
		members[i] = m
	}
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.run(ctx)
			if errs[i] != nil {
				cancel(errs[i])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// member is one group member: a franz-go client and its poll loop.
type member struct {
	s   *Source
	h   ingest.Handler
	cl  *kgo.Client
	log *slog.Logger

	mu       sync.Mutex
	assigned map[string]map[int32]bool
	sent     ingest.Offsets      // last offsets committed to Kafka
	commitMu sync.Mutex          // one commit at a time
	failed   error               // set under mu when a partition could not be taken on
	kick     chan struct{}       // asks commitLoop to commit now
	marked   map[int32]time.Time // when a fetch last brought a partition's high watermark
}

func newMember(s *Source, i int, h ingest.Handler) (*member, error) {
	m := &member{s: s, h: h, log: s.log.With("member", i), assigned: map[string]map[int32]bool{}, sent: ingest.Offsets{},
		kick: make(chan struct{}, 1), marked: map[int32]time.Time{}}
	// No kgo.WithPools: recycling franz-go's records and decompression
	// buffers ran the flat pipeline at 0.42–0.48× of DuckDB's native
	// insert against 0.46–0.50× without, alternated on 2 cores.
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.brokers...),
		kgo.ConsumerGroup(s.cfg.group),
		kgo.ConsumeTopics(s.cfg.topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(s.cfg.resetOffset()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.AdjustFetchOffsetsFn(m.adjust),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
		kgo.WithLogger(kgoLogger{m.log}),
	}
	if s.cfg.fetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(s.cfg.fetchMaxBytes))
	}
	partBytes := s.cfg.fetchPartBytes
	if partBytes == 0 {
		partBytes = DefaultFetchPartitionBytes
	}
	opts = append(opts, kgo.FetchMaxPartitionBytes(partBytes))
	if s.cfg.sessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(s.cfg.sessionTimeout))
	}
	if id := s.cfg.instanceID; id != "" {
		if s.cfg.clients > 1 {
			id = fmt.Sprintf("%s-%d", id, i)
		}
		opts = append(opts, kgo.InstanceID(id))
	}
	cl, err := kgo.NewClient(append(opts, s.cfg.extra...)...)
	if err != nil {
		return nil, fmt.Errorf("create kafka client: %w", err)
	}
	m.cl = cl
	return m, nil
}

// run polls and delivers until ctx is done, then shuts the member down.
func (m *member) run(ctx context.Context) error {
	commits := make(chan struct{})
	go func() { defer close(commits); m.commitLoop(ctx) }()
	marks := make(chan struct{})
	go func() { defer close(marks); m.watermarkLoop(ctx) }()
	err := m.poll(ctx)
	<-commits
	<-marks
	m.shutdown()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// poll hands each poll's records to the pipeline. Rebalances wait between
// PollRecords and AllowRebalance, so the assignment cannot change while a
// poll is being delivered.
func (m *member) poll(ctx context.Context) error {
	for {
		if err := m.h.Ready(ctx); err != nil {
			return err
		}
		fs := m.cl.PollRecords(ctx, m.s.cfg.maxPollRecords)
		if fs.IsClientClosed() {
			return errors.New("kafka client closed")
		}
		m.mu.Lock()
		failed := m.failed
		m.mu.Unlock()
		if failed != nil {
			m.cl.AllowRebalance()
			return failed
		}
		if ctx.Err() != nil {
			m.cl.AllowRebalance()
			return ctx.Err()
		}
		fetchFailed := false
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				fetchFailed = true
				m.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
				m.h.ReportError(fmt.Errorf("fetch %s partition %d: %w", t, p, err))
			}
		})
		var chunks []ingest.Chunk
		marks := map[string]map[int32]int64{}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Err == nil && p.HighWatermark >= 0 {
				if marks[p.Topic] == nil {
					marks[p.Topic] = map[int32]int64{}
				}
				marks[p.Topic][p.Partition] = p.HighWatermark
			}
			if len(p.Records) == 0 {
				return
			}
			msgs := make([]ingest.Message, len(p.Records))
			for i, r := range p.Records {
				msgs[i] = ingest.Message{Offset: r.Offset, Timestamp: r.Timestamp, Value: r.Value}
			}
			chunks = append(chunks, ingest.Chunk{Topic: p.Topic, Partition: p.Partition, Messages: msgs})
		})
		m.noteWatermarks(marks)
		err := m.h.Deliver(ctx, chunks)
		m.cl.AllowRebalance()
		if err != nil {
			return err
		}
		if fetchFailed && len(chunks) == 0 {
			// Only errors: franz-go retries; do not spin on them.
			select {
			case <-time.After(errorBackoff):
			case <-ctx.Done():
			}
		}
	}
}

// shutdown has the pipeline commit what it holds of the member's
// partitions, commits those offsets to Kafka, and leaves the group.
func (m *member) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	m.mu.Lock()
	var parts []int32
	for p := range m.assigned[m.s.cfg.topic] {
		parts = append(parts, p)
	}
	m.mu.Unlock()
	if off, err := m.h.Release(ctx, m.s.cfg.topic, parts, true); err != nil {
		m.log.Warn("committing at shutdown failed; what was not committed is consumed again", "err", err)
		m.h.ReportError(fmt.Errorf("commit at shutdown: %w", err))
	} else {
		m.commit(ctx, off, nil)
	}
	m.cl.CloseAllowingRebalance()
}

// commitLoop copies DuckDB's committed offsets to Kafka periodically.
func (m *member) commitLoop(ctx context.Context) {
	t := time.NewTicker(m.s.cfg.commitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.commit(ctx, m.h.Committed(), nil)
		case <-m.kick:
			m.commit(ctx, m.h.Committed(), nil)
		case <-ctx.Done():
			return
		}
	}
}

// commit commits to Kafka the offsets of off for partitions this member
// owns (only those in only, when given) that changed since the last
// commit. Offsets of partitions owned elsewhere are never sent: they could
// rewind another member's progress.
func (m *member) commit(ctx context.Context, off ingest.Offsets, only map[string][]int32) {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	send := map[string]map[int32]kgo.EpochOffset{}
	m.mu.Lock()
	for t, ps := range m.assigned {
		for p := range ps {
			if only != nil && !contains(only[t], p) {
				continue
			}
			n, ok := off.Get(t, p)
			if prev, sent := m.sent.Get(t, p); !ok || (sent && prev >= n) {
				continue
			}
			if send[t] == nil {
				send[t] = map[int32]kgo.EpochOffset{}
			}
			send[t][p] = kgo.EpochOffset{Epoch: -1, Offset: n}
		}
	}
	m.mu.Unlock()
	if len(send) == 0 {
		return
	}
	var cerr error
	m.cl.CommitOffsetsSync(ctx, send, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
					cerr = fmt.Errorf("partition %d: %w", p.Partition, err)
				}
			}
		}
	})
	if cerr != nil {
		if ctx.Err() == nil {
			m.log.Warn("committing offsets to Kafka failed (DuckDB holds them; this only delays other consumers)", "err", cerr)
			m.h.ReportError(fmt.Errorf("commit offsets to Kafka: %w", cerr))
		}
		return
	}
	m.mu.Lock()
	for t, ps := range send {
		for p, eo := range ps {
			m.sent.Set(t, p, eo.Offset)
		}
	}
	m.mu.Unlock()
}

// adjust starts each newly assigned partition at the stored offset when
// that is further along than Kafka's committed one (or Kafka has none, or
// the stored one wins, as a lake's does). A stored position Kafka does not
// have yet (a crash came between the two commits) is committed to Kafka at
// once, so lag monitors see the truth; where Kafka is ahead, its offset
// counts as sent, so a smaller one is never committed over it.
func (m *member) adjust(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	kick := false
	defer func() {
		if kick {
			select {
			case m.kick <- struct{}{}:
			default:
			}
		}
	}()
	for t, ps := range offsets {
		for p, o := range ps {
			stored, ok := m.h.Stored(t, p)
			kafkaAt := o.EpochOffset().Offset
			switch {
			case !ok:
				m.log.Debug("partition has no stored offset", "topic", t, "partition", p, "kafka", kafkaAt)
			case kafkaAt < 0 || stored > kafkaAt || (stored != kafkaAt && m.h.StoredWins()):
				ps[p] = kgo.NewOffset().At(stored).WithEpoch(-1)
				kick = true
				m.log.Debug("resuming at DuckDB offset", "topic", t, "partition", p, "offset", stored, "kafka", kafkaAt)
			case kafkaAt > stored:
				m.log.Info("Kafka's committed offset is ahead of DuckDB's (another consumer ingested it); resuming there",
					"topic", t, "partition", p, "offset", kafkaAt, "duckdb", stored)
				m.mu.Lock()
				m.sent.Set(t, p, kafkaAt)
				m.mu.Unlock()
			}
		}
	}
	return offsets, nil
}

func (m *member) onAssigned(ctx context.Context, cl *kgo.Client, added map[string][]int32) {
	for t, ps := range added {
		if err := m.h.Assigned(ctx, t, ps); err != nil {
			m.log.Error("cannot take on assigned partitions", "topic", t, "partitions", ps, "err", err)
			m.h.ReportError(fmt.Errorf("take on partitions %v of %s: %w", ps, t, err))
			m.mu.Lock()
			if m.failed == nil {
				m.failed = fmt.Errorf("take on partitions %v of %s: %w", ps, t, err)
			}
			m.mu.Unlock()
			return
		}
	}
	m.mu.Lock()
	for t, ps := range added {
		if m.assigned[t] == nil {
			m.assigned[t] = map[int32]bool{}
		}
		for _, p := range ps {
			m.assigned[t][p] = true
		}
	}
	m.mu.Unlock()
	if len(added) > 0 {
		m.log.Info("partitions assigned", "partitions", added)
		if !m.h.StoredWins() {
			// The callback's client, not m.cl: the first assignment can
			// come before NewClient has returned.
			go m.warnSharedGroup(ctx, cl)
		}
	}
}

// warnSharedGroup warns when members outside this process share the group
// while positions live in this process's own database: a partition that
// moves to another process then restarts from Kafka's committed offset,
// which can lag what this process stored, so rows can be ingested twice.
func (m *member) warnSharedGroup(ctx context.Context, cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	groups, err := kadm.NewClient(cl).DescribeGroups(ctx, m.s.cfg.group)
	if err != nil {
		return
	}
	g, ok := groups[m.s.cfg.group]
	if !ok || len(g.Members) <= m.s.cfg.clients {
		return
	}
	m.log.Warn("other processes share this consumer group, but without --lake each keeps its offsets in its own database: "+
		"a partition that moves between processes can be ingested twice; use --lake for exactly once across processes",
		"group", m.s.cfg.group, "members", len(g.Members), "in_this_process", m.s.cfg.clients)
}

// onRevoked makes the pipeline commit everything delivered, commits the
// revoked partitions' offsets to Kafka, and only then lets them go.
func (m *member) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	m.giveUp(ctx, revoked, true)
}

// onLost flushes like onRevoked but does not commit: the partitions are
// already someone else's.
func (m *member) onLost(ctx context.Context, _ *kgo.Client, lost map[string][]int32) {
	m.giveUp(ctx, lost, false)
}

func (m *member) giveUp(ctx context.Context, parts map[string][]int32, commit bool) {
	if len(parts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	var err error
	for t, ps := range parts {
		off, rerr := m.h.Release(ctx, t, ps, commit)
		switch {
		case rerr != nil:
			err = rerr
			m.log.Warn("committing before giving up partitions failed", "partitions", ps, "err", rerr)
			m.h.ReportError(fmt.Errorf("commit before giving up partitions %v of %s: %w", ps, t, rerr))
		case commit:
			m.commit(ctx, off, parts)
		}
	}
	m.mu.Lock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(m.assigned[t], p)
			delete(m.sent[t], p)
			if t == m.s.cfg.topic {
				delete(m.marked, p)
			}
		}
	}
	m.mu.Unlock()
	m.log.Info("partitions given up", "partitions", parts, "committed_to_kafka", commit && err == nil)
}

// noteWatermarks hands the high watermarks a poll brought to the pipeline.
func (m *member) noteWatermarks(marks map[string]map[int32]int64) {
	if len(marks) == 0 {
		return
	}
	now := time.Now()
	m.mu.Lock()
	for p := range marks[m.s.cfg.topic] {
		m.marked[p] = now
	}
	m.mu.Unlock()
	for t, ps := range marks {
		m.h.Watermarks(t, ps)
	}
}

// watermarkLoop looks up, every watermarkRefresh, the high watermarks of
// the member's partitions that no fetch reported meanwhile: franz-go hands
// out only fetches that carry records, so a caught-up partition's, or a
// paused member's, would go stale while messages arrive.
func (m *member) watermarkLoop(ctx context.Context) {
	t := time.NewTicker(watermarkRefresh)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.refreshWatermarks(ctx)
		case <-ctx.Done():
			return
		}
	}
}

func (m *member) refreshWatermarks(ctx context.Context) {
	topic := m.s.cfg.topic
	now := time.Now()
	var stale []int32
	m.mu.Lock()
	for p := range m.assigned[topic] {
		if now.Sub(m.marked[p]) >= watermarkRefresh {
			stale = append(stale, p)
		}
	}
	m.mu.Unlock()
	if len(stale) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, watermarkRefresh)
	defer cancel()
	ends, err := kadm.NewClient(m.cl).ListEndOffsets(ctx, topic)
	if err != nil && ctx.Err() == nil {
		m.log.Debug("look up high watermarks", "topic", topic, "err", err)
	}
	marks := map[int32]int64{}
	for _, p := range stale {
		if o, ok := ends.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
			marks[p] = o.Offset
		}
	}
	if len(marks) > 0 {
		m.h.Watermarks(topic, marks)
	}
}

func contains(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}
