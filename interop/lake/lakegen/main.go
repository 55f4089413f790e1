// Command lakegen makes a real Iceberg lake for the interop suites: it starts
// an in-process Kafka (kfake) on 127.0.0.1, produces messages whose id is
// their sequence number 0..N-1, and runs `quiver ingest --lake file://DIR`
// as several processes of one consumer group until they go idle and exit.
// It exits non-zero when any of them failed.
//
//	go run ./interop/lake/lakegen -quiver bin/quiver -dir DIR -logs LOGDIR
//
// The table is NAMESPACE.events in the SQLite catalog DIR/catalog.db
// (catalog name quiver); its Kafka offsets are recorded under GROUP and
// the topic events.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/ingest/protoarrow"
)

const topic = "events"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "lakegen: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		quiver     = flag.String("quiver", "bin/quiver", "the quiver binary")
		protoFile  = flag.String("proto", "interop/lake/events.proto", ".proto file of the messages")
		message    = flag.String("message", "quiver.interop.Event", "message type")
		dir        = flag.String("dir", "", "lake directory (required; made if missing, must be empty)")
		logs       = flag.String("logs", "", "directory for the ingest processes' logs and live databases (default: DIR/../lakegen)")
		n          = flag.Int("messages", 20000, "messages to produce")
		partitions = flag.Int("partitions", 4, "Kafka partitions")
		procs      = flag.Int("procs", 2, "ingest processes in the consumer group, run at the same time")
		group      = flag.String("group", "interop", "consumer group")
		namespace  = flag.String("namespace", "quiver", "Iceberg namespace")
		partBy     = flag.String("partition-by", "day(_timestamp)", "the table's Iceberg partitioning (--partition-by of quiver ingest)")
		timeout    = flag.Duration("timeout", 3*time.Minute, "give up after this long")
	)
	flag.Parse()
	if *dir == "" || *n <= 0 || *partitions <= 0 || *procs <= 0 {
		flag.Usage()
		return errors.New("-dir is required; -messages, -partitions and -procs must be positive")
	}
	lakeDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := emptyDir(lakeDir); err != nil {
		return err
	}
	logDir := *logs
	if logDir == "" {
		logDir = filepath.Join(filepath.Dir(lakeDir), "lakegen")
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	md, err := protoarrow.Compile(ctx, *protoFile, nil, *message)
	if err != nil {
		return err
	}
	values := make([][]byte, *n)
	for i := range values {
		if values[i], err = value(md, i); err != nil {
			return err
		}
	}

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(*partitions), topic))
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	start := time.Now()

	// Half the messages wait in Kafka before the processes start; the rest
	// arrive in waves while they run, so the table gets several commits
	// from each process.
	half := *n / 2
	if err := produce(ctx, brokers, int32(*partitions), values, 0, half); err != nil {
		return err
	}
	args := func(i int) []string {
		return []string{"ingest",
			"--brokers", brokers, "--topic", topic, "--group", *group,
			"--proto", *protoFile, "--message", *message,
			"--db", filepath.Join(logDir, fmt.Sprintf("live%d.duckdb", i)), "--table", "events",
			"--lake", "file://" + filepath.ToSlash(lakeDir), "--namespace", *namespace,
			"--partition-by", *partBy,
			"--batch-rows", "2000", "--flush-interval", "200ms", "--rotate-age", "1s",
			"--idle-exit", "3s", "--session-timeout", "6s", "--min-free-mb", "0",
			"--report-interval", "0", "--log-level", "info",
		}
	}
	errs := make([]error, *procs)
	var wg sync.WaitGroup
	for i := range *procs {
		logPath := filepath.Join(logDir, fmt.Sprintf("ingest-%d.log", i))
		logFile, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer logFile.Close()
		cmd := exec.CommandContext(ctx, *quiver, args(i)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", *quiver, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errs[i] = fmt.Errorf("ingest process %d: %w (log: %s)", i, err, logPath)
			}
		}()
	}
	const waves = 4
	for w := range waves {
		time.Sleep(700 * time.Millisecond)
		from, to := half+w*(*n-half)/waves, half+(w+1)*(*n-half)/waves
		if err := produce(ctx, brokers, int32(*partitions), values, from, to); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("ingest did not finish within %s", *timeout)
	}
	fmt.Printf("lakegen: %d messages over %d partitions ingested by %d processes into %s.events at %s in %.1fs\n",
		*n, *partitions, *procs, *namespace, lakeDir, time.Since(start).Seconds())
	for i := range *procs {
		fmt.Printf("lakegen: ingest process %d: %s\n", i, finished(filepath.Join(logDir, fmt.Sprintf("ingest-%d.log", i))))
	}
	return nil
}

// finished returns the records and rotated files of the "ingest finished"
// line of an ingest log.
func finished(logPath string) string {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return err.Error()
	}
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, `msg="ingest finished"`) {
			continue
		}
		var out []string
		for f := range strings.FieldsSeq(line) {
			if strings.HasPrefix(f, "records=") || strings.HasPrefix(f, "duckdb_files=") {
				out = append(out, f)
			}
		}
		return strings.Join(out, " ")
	}
	return "no 'ingest finished' line"
}

// emptyDir makes dir, or checks that it is empty.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	return nil
}

// base is the first message's Kafka timestamp: the messages, one second
// apart, cross midnight, so a table partitioned by day gets two partitions.
var base = time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)

// value is message i: id i, every other field derived from i.
func value(md protoreflect.MessageDescriptor, i int) ([]byte, error) {
	m := dynamicpb.NewMessage(md)
	f := md.Fields()
	m.Set(f.ByName("id"), protoreflect.ValueOfInt64(int64(i)))
	m.Set(f.ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("name-%d", i)))
	m.Set(f.ByName("price"), protoreflect.ValueOfFloat64(float64(i)*0.5))
	m.Set(f.ByName("ok"), protoreflect.ValueOfBool(i%2 == 0))
	m.Set(f.ByName("qty"), protoreflect.ValueOfInt32(int32(i%1000)))
	m.Set(f.ByName("color"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(i%3)))
	ts := dynamicpb.NewMessage(f.ByName("at").Message())
	ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(base.Unix()+int64(i)))
	m.Set(f.ByName("at"), protoreflect.ValueOfMessage(ts))
	if i%5 == 0 {
		m.Set(f.ByName("blob"), protoreflect.ValueOfBytes([]byte{byte(i), 1, 2}))
	}
	return proto.Marshal(m)
}

// produce writes values[from:to] to the topic, value i to partition
// i % partitions with the timestamp base + i seconds.
func produce(ctx context.Context, brokers string, partitions int32, values [][]byte, from, to int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	var (
		mu    sync.Mutex
		first error
	)
	for i := from; i < to; i++ {
		r := &kgo.Record{Value: values[i], Partition: int32(i) % partitions, Timestamp: base.Add(time.Duration(i) * time.Second)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmp(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return fmt.Errorf("produce: %w", first)
	}
	return nil
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
