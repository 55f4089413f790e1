package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Opt configures a Source.
type Opt func(*cfg)

// cfg is what the options set; New validates it.
type cfg struct {
	brokers        []string
	topic          string
	group          string
	clients        int
	instanceID     string
	start          string
	maxPollRecords int
	fetchMaxBytes  int32
	fetchPartBytes int32
	commitInterval time.Duration
	sessionTimeout time.Duration
	log            *slog.Logger
	extra          []kgo.Opt
}

// Brokers sets the seed brokers, HOST:PORT each. Required.
func Brokers(addrs ...string) Opt {
	return func(c *cfg) {
		for _, a := range addrs {
			for _, s := range strings.Split(a, ",") {
				if s = strings.TrimSpace(s); s != "" {
					c.brokers = append(c.brokers, s)
				}
			}
		}
	}
}

// Topic sets the topic to consume. Required.
func Topic(t string) Opt { return func(c *cfg) { c.topic = t } }

// Group sets the consumer group. Required.
func Group(g string) Opt { return func(c *cfg) { c.group = g } }

// Clients sets how many group members this process runs (1). They share
// the pipeline and its database, so partitions moving among them never
// repeat or skip a message.
func Clients(n int) Opt { return func(c *cfg) { c.clients = n } }

// InstanceID turns on static membership: a member that restarts within the
// session timeout gets its partitions back without a rebalance. With
// several clients, each gets the id with "-<n>" appended.
func InstanceID(id string) Opt { return func(c *cfg) { c.instanceID = id } }

// StartOffset says where a partition with no stored or committed offset
// starts: "earliest" (the default) or "latest".
func StartOffset(s string) Opt { return func(c *cfg) { c.start = s } }

// MaxPollRecords caps the records one poll hands to the pipeline (10,000).
func MaxPollRecords(n int) Opt { return func(c *cfg) { c.maxPollRecords = n } }

// FetchMaxBytes caps one fetch response (franz-go's default when 0). With
// MaxPollRecords and the pipeline's queue it bounds buffered memory.
func FetchMaxBytes(n int32) Opt { return func(c *cfg) { c.fetchMaxBytes = n } }

// DefaultFetchPartitionBytes is what one fetch may bring of one
// partition unless FetchMaxPartitionBytes says otherwise: 1 MiB, as
// Kafka's own clients. Larger fetches cost the broker and the client a
// little less per message, and memory: on the 2-core build machine the
// flat pipeline ran at 0.46-0.52x of DuckDB's native insert with 4 and 16
// MiB against 0.45-0.47x with 1 MiB, within the machine's run-to-run noise
// (`quiver-bench kafka --fetch-partition-mb N`), while draining a
// 2M-message backlog peaked at a 222 MB Go heap with 1 MiB, 360 MB with 4
// MiB and 717 MB with 16 MiB (TestLong_IngestMemoryBounded): a buffered
// fetch of small messages takes several times its wire size once decoded
// into records. A fetch response stays within FetchMaxBytes whatever
// this is.
const DefaultFetchPartitionBytes = 1 << 20

// FetchMaxPartitionBytes caps what one fetch brings of one partition
// (DefaultFetchPartitionBytes when 0); a batch larger than it still comes
// whole.
func FetchMaxPartitionBytes(n int32) Opt { return func(c *cfg) { c.fetchPartBytes = n } }

// CommitInterval is how often DuckDB's committed offsets are copied to
// Kafka (1s).
func CommitInterval(d time.Duration) Opt { return func(c *cfg) { c.commitInterval = d } }

// SessionTimeout is how long the group waits for a silent member before
// moving its partitions (franz-go's 45s when 0).
func SessionTimeout(d time.Duration) Opt { return func(c *cfg) { c.sessionTimeout = d } }

// Logger sets the logger; nil means slog.Default().
func Logger(l *slog.Logger) Opt { return func(c *cfg) { c.log = l } }

// ClientOpts adds franz-go options (TLS, SASL, timeouts) to every client.
func ClientOpts(opts ...kgo.Opt) Opt { return func(c *cfg) { c.extra = append(c.extra, opts...) } }

// validate fills defaults and checks the configuration.
func (c *cfg) validate() error {
	if c.clients == 0 {
		c.clients = 1
	}
	if c.start == "" {
		c.start = "earliest"
	}
	if c.maxPollRecords <= 0 {
		c.maxPollRecords = 10_000
	}
	if c.commitInterval <= 0 {
		c.commitInterval = time.Second
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	switch {
	case len(c.brokers) == 0:
		return errors.New("no brokers given")
	case c.topic == "":
		return errors.New("no topic given")
	case c.group == "":
		return errors.New("no consumer group given")
	case c.clients < 0 || c.clients > 256:
		return fmt.Errorf("clients must be 1..256, got %d", c.clients)
	case c.start != "earliest" && c.start != "latest":
		return fmt.Errorf("start offset must be earliest or latest, got %q", c.start)
	case c.sessionTimeout < 0:
		return errors.New("session timeout cannot be negative")
	case c.fetchMaxBytes < 0:
		return errors.New("fetch max bytes cannot be negative")
	case c.fetchPartBytes < 0:
		return errors.New("fetch max partition bytes cannot be negative")
	}
	for _, b := range c.brokers {
		if i := strings.LastIndexByte(b, ':'); i <= 0 || i == len(b)-1 {
			return fmt.Errorf("broker %q is not HOST:PORT", b)
		}
	}
	return nil
}

// resetOffset is where a partition without a position starts.
func (c *cfg) resetOffset() kgo.Offset {
	if c.start == "latest" {
		return kgo.NewOffset().AtEnd()
	}
	return kgo.NewOffset().AtStart()
}
