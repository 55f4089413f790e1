package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/testutil"
)

// liveEnv is one TestPipeline_Live case's cluster, pipeline, and what was
// produced so far.
type liveEnv struct {
	t       *testing.T
	addrs   []string
	parts   int32
	dir     string
	cfg     ingest.Config
	p       *ingest.Pipeline
	start   time.Time
	msgs    int64
	bad     int64
	bytes   int64
	perPart []int64            // messages produced per partition
	earlier int64              // messages consumed by an earlier run
	metrics map[string]float64 // counters before the run
}

// produce writes n flat messages, every badEvery-th (when > 0) one that
// fails to decode, and counts them.
func (e *liveEnv) produce(n, badEvery int) {
	md := e.cfg.Message
	values := flatValues(e.t, md, int(e.msgs), int(e.msgs)+n)
	for i := range values {
		if badEvery > 0 && i%badEvery == 0 {
			values[i] = []byte{0xff}
			e.bad++
		}
		e.bytes += int64(len(values[i]))
		e.perPart[int32(i)%e.parts]++
	}
	e.msgs += int64(n)
	produce(e.t, e.addrs, e.parts, values, time.Now())
}

// caughtUp reports whether st counts every message produced and every
// partition is assigned with no lag.
func (e *liveEnv) caughtUp(st ingest.LiveStatus) bool {
	if st.MessagesTotal != e.msgs || len(st.Partitions) != int(e.parts) {
		return false
	}
	for _, lp := range st.Partitions {
		if lp.Lag == nil || *lp.Lag != 0 {
			return false
		}
	}
	return true
}

// checkCaughtUp checks the counts and each partition's position.
func (e *liveEnv) checkCaughtUp(t *testing.T, st ingest.LiveStatus) {
	t.Helper()
	if st.Topic != testTopic || st.Table != "events" {
		t.Errorf("topic %q, table %q: want %q, events", st.Topic, st.Table, testTopic)
	}
	if st.MessagesTotal != e.msgs || st.RowsTotal != e.msgs-e.bad || st.BytesTotal != e.bytes {
		t.Errorf("messages %d, rows %d, bytes %d: want %d, %d, %d", st.MessagesTotal, st.RowsTotal, st.BytesTotal, e.msgs, e.msgs-e.bad, e.bytes)
	}
	for i, lp := range st.Partitions {
		want := e.perPart[i]
		if lp.Partition != int32(i) || lp.NextOffset == nil || *lp.NextOffset != want || lp.HighWatermark == nil || *lp.HighWatermark != want {
			t.Errorf("partition %d: got %s, want next offset and high watermark %d", i, asJSON(lp), want)
		}
		waitGauge(t, "quiver_ingest_consumer_lag", i, 0)
		waitGauge(t, "quiver_ingest_high_watermark", i, float64(want))
	}
	if st.Disk.FreeBytes == nil || *st.Disk.FreeBytes <= 0 {
		t.Errorf("disk free bytes: got %v, want a measurement", st.Disk.FreeBytes)
	}
}

// liveStep does something to a running pipeline (nil: nothing), waits
// until its snapshot satisfies until, then checks it.
type liveStep struct {
	name  string
	do    func(e *liveEnv)
	until func(e *liveEnv, st ingest.LiveStatus) bool
	check func(t *testing.T, e *liveEnv, st ingest.LiveStatus)
}

// TestPipeline_Live runs pipelines against Kafka (kfake) and checks what
// Live reports as they consume, rotate, fail and recover.
func TestPipeline_Live(t *testing.T) {
	cases := []struct {
		name   string
		parts  int32
		config func(e *liveEnv)
		before func(e *liveEnv) // before the pipeline runs
		steps  []liveStep
	}{{
		name:  "counts and lag",
		parts: 3,
		steps: []liveStep{{
			name:  "first wave",
			do:    func(e *liveEnv) { e.produce(5000, 0) },
			until: (*liveEnv).caughtUp,
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) {
				e.checkCaughtUp(t, st)
				if st.LastError != nil || st.Disk.Paused || st.SegmentsSealed != 0 || st.BacklogSegments != 0 || st.LakeCommits != 0 {
					t.Errorf("got %s: want no error, no pause, no segments", asJSON(st))
				}
			},
		}, {
			name:  "second wave",
			do:    func(e *liveEnv) { e.produce(3001, 0) },
			until: (*liveEnv).caughtUp,
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) { e.checkCaughtUp(t, st) },
		}},
	}, {
		name:  "dead letters",
		parts: 2,
		steps: []liveStep{{
			name:  "consume",
			do:    func(e *liveEnv) { e.produce(4000, 10) },
			until: (*liveEnv).caughtUp,
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) {
				e.checkCaughtUp(t, st)
				if st.LastError != nil {
					t.Errorf("a dead letter is no pipeline error: got %s", asJSON(st.LastError))
				}
			},
		}},
	}, {
		name:  "rotation",
		parts: 2,
		config: func(e *liveEnv) {
			e.cfg.ExportDir = filepath.Join(e.dir, "export")
			e.cfg.Rotate = segment.Policy{MaxAge: 300 * time.Millisecond}
		},
		steps: []liveStep{{
			name: "rotate and export",
			do:   func(e *liveEnv) { e.produce(3000, 0) },
			until: func(e *liveEnv, st ingest.LiveStatus) bool {
				return st.MessagesTotal == e.msgs && st.SegmentsSealed >= 1 && st.SegmentsExported == st.SegmentsSealed && st.BacklogSegments == 0
			},
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) {
				e.counterMatches(t, "quiver_ingest_segments_sealed_total", func(st ingest.LiveStatus) int64 { return st.SegmentsSealed })
				e.counterMatches(t, "quiver_ingest_segments_exported_total", func(st ingest.LiveStatus) int64 { return st.SegmentsExported })
				if st.LastError != nil {
					t.Errorf("last error: got %s, want none", asJSON(st.LastError))
				}
			},
		}, {
			name: "rotate again",
			do:   func(e *liveEnv) { e.produce(1000, 0) },
			until: func(e *liveEnv, st ingest.LiveStatus) bool {
				return st.MessagesTotal == e.msgs && st.SegmentsSealed >= 2 && st.SegmentsExported == st.SegmentsSealed
			},
		}},
	}, {
		// The export directory's staging area is made a file, so exports
		// fail (and are retried) until it is a directory again.
		name:  "export failure",
		parts: 2,
		config: func(e *liveEnv) {
			e.cfg.ExportDir = filepath.Join(e.dir, "export")
			e.cfg.Rotate = segment.Policy{MaxAge: 300 * time.Millisecond}
		},
		steps: []liveStep{{
			name: "assigned",
			until: func(e *liveEnv, st ingest.LiveStatus) bool {
				return len(st.Partitions) == int(e.parts)
			},
		}, {
			name: "exports fail",
			do: func(e *liveEnv) {
				staging := filepath.Join(e.cfg.ExportDir, "_staging")
				if err := os.RemoveAll(staging); err != nil {
					e.t.Fatal(err)
				}
				if err := os.WriteFile(staging, []byte("in the way"), 0o644); err != nil {
					e.t.Fatal(err)
				}
				e.produce(2000, 0)
			},
			until: func(e *liveEnv, st ingest.LiveStatus) bool {
				return st.LastError != nil && st.MessagesTotal == e.msgs
			},
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) {
				le := st.LastError
				if !strings.Contains(le.Message, "export failed") || !strings.Contains(le.Message, "export segment") {
					t.Errorf("last error message %q: want the failed export", le.Message)
				}
				if le.Time.Before(e.start) || le.Time.After(time.Now()) {
					t.Errorf("last error time %s: not during the run (started %s)", le.Time, e.start)
				}
				if st.SegmentsSealed < 1 || st.SegmentsExported != 0 || st.BacklogSegments < 1 {
					t.Errorf("got %s: want a sealed segment waiting", asJSON(st))
				}
				if got := metricValue(t, "quiver_ingest_errors_total") - e.metrics["quiver_ingest_errors_total"]; got < 1 {
					t.Errorf("quiver_ingest_errors_total rose by %v, want at least 1", got)
				}
			},
		}, {
			name: "exports recover",
			do: func(e *liveEnv) {
				if err := os.Remove(filepath.Join(e.cfg.ExportDir, "_staging")); err != nil {
					e.t.Fatal(err)
				}
			},
			until: func(e *liveEnv, st ingest.LiveStatus) bool {
				return st.BacklogSegments == 0 && st.SegmentsExported >= 1 && st.SegmentsExported == st.SegmentsSealed
			},
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) {
				if st.LastError == nil || !strings.Contains(st.LastError.Message, "export failed") {
					t.Errorf("last error: got %s, want the export failure still (it is the last one)", asJSON(st.LastError))
				}
			},
		}},
	}, {
		name:  "lake",
		parts: 2,
		config: func(e *liveEnv) {
			e.cfg = lakeConfig(e.t, e.cfg, openTestLake(e.t, filepath.Join(e.dir, "lake")), "live")
		},
		steps: []liveStep{{
			name: "commit",
			do:   func(e *liveEnv) { e.produce(3000, 0) },
			until: func(e *liveEnv, st ingest.LiveStatus) bool {
				return e.caughtUp(st) && st.LakeCommits >= 1 && st.SegmentsExported >= 1
			},
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) {
				e.checkCaughtUp(t, st)
				if st.LastError != nil {
					t.Errorf("last error: got %s, want none", asJSON(st.LastError))
				}
			},
		}},
	}, {
		// A restarted pipeline paused by its disk guard consumes nothing:
		// the lag is what arrived while it was down.
		name:  "paused with lag",
		parts: 2,
		before: func(e *liveEnv) {
			e.produce(2000, 0)
			first := e.cfg
			first.IdleExit = 1500 * time.Millisecond
			runUntilIdle(e.t, first, newSource(e.t, e.addrs, "live-paused-first"))
			e.earlier = e.msgs
			e.produce(1000, 0)
			e.cfg.DiskCeiling = 1 // any file is over it
		},
		steps: []liveStep{{
			name: "lag",
			until: func(e *liveEnv, st ingest.LiveStatus) bool {
				if len(st.Partitions) != int(e.parts) {
					return false
				}
				for _, lp := range st.Partitions {
					if lp.Lag == nil || *lp.Lag != 500 {
						return false
					}
				}
				return true
			},
			check: func(t *testing.T, e *liveEnv, st ingest.LiveStatus) {
				if !st.Disk.Paused || st.MessagesTotal != 0 {
					t.Errorf("got %s: want paused with nothing consumed", asJSON(st))
				}
				for i, lp := range st.Partitions {
					if *lp.NextOffset != 1000 || *lp.HighWatermark != 1500 {
						t.Errorf("partition %d: got %s, want next offset 1000, high watermark 1500", i, asJSON(lp))
					}
					waitGauge(t, "quiver_ingest_consumer_lag", i, 500)
				}
			},
		}},
	}}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &liveEnv{t: t, addrs: startCluster(t, tc.parts), parts: tc.parts, dir: t.TempDir(), perPart: make([]int64, tc.parts),
				metrics: map[string]float64{}}
			e.cfg = testConfig(t, compile(t, "Flat"), e.dir)
			e.cfg.IdleExit = 0
			if tc.config != nil {
				tc.config(e)
			}
			if tc.before != nil {
				tc.before(e)
			}
			p, err := ingest.New(e.cfg)
			if err != nil {
				t.Fatal(err)
			}
			e.p = p
			checkLiveJSON(t, p.Live())
			if st := p.Live(); st.MessagesTotal != 0 || len(st.Partitions) != 0 || st.LastError != nil {
				t.Errorf("before Run: got %s", asJSON(st))
			}
			for _, m := range []string{"quiver_ingest_segments_sealed_total", "quiver_ingest_segments_exported_total", "quiver_ingest_errors_total"} {
				e.metrics[m] = metricValue(t, m)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			e.start = time.Now()
			done := make(chan error, 1)
			go func() {
				_, err := p.Run(ctx, newSource(t, e.addrs, "live"))
				done <- err
			}()
			// Poll Live from another goroutine all along, as the console
			// does, for the race detector.
			pollDone := make(chan struct{})
			go func() {
				defer close(pollDone)
				for ctx.Err() == nil {
					_ = p.Live()
					time.Sleep(5 * time.Millisecond)
				}
			}()
			for _, s := range tc.steps {
				if s.do != nil {
					s.do(e)
				}
				st := waitLive(t, p, done, s.name, func(st ingest.LiveStatus) bool { return s.until(e, st) })
				checkLiveJSON(t, st)
				if s.check != nil {
					s.check(t, e, st)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("run: %v", err)
			}
			<-pollDone
			// After a clean stop every partition is given up.
			want := e.msgs - e.earlier
			if e.cfg.DiskCeiling > 0 {
				want = 0
			}
			if st := p.Live(); len(st.Partitions) != 0 || st.MessagesTotal != want {
				t.Errorf("after Run: got %s, want no partition and %d messages", asJSON(st), want)
			}
		})
	}
}

// waitLive polls p.Live until cond holds, failing the test if the run
// ends or a minute passes first.
func waitLive(t *testing.T, p *ingest.Pipeline, done <-chan error, step string, cond func(ingest.LiveStatus) bool) ingest.LiveStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := p.Live()
		if cond(st) {
			return st
		}
		select {
		case err := <-done:
			t.Fatalf("%s: the run ended (%v) before Live showed it; last: %s", step, err, asJSON(st))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: Live never showed it; last: %s", step, asJSON(st))
		}
	}
}

// checkLiveJSON checks the snapshot's JSON has exactly the fields of the
// console's contract (the "ingest" object of GET /api/live).
func checkLiveJSON(t *testing.T, st ingest.LiveStatus) {
	t.Helper()
	checkLiveJSONText(t, []byte(asJSON(st)))
}

func checkLiveJSONText(t *testing.T, text []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(text, &m); err != nil {
		t.Fatal(err)
	}
	keysOf := func(v any) []string {
		obj, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v is not a JSON object", v)
		}
		var out []string
		for k := range obj {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	want := []string{"backlog_segments", "bytes_total", "disk", "lake_commits", "last_error", "messages_total", "partitions",
		"rows_total", "segments_exported", "segments_sealed", "table", "topic"}
	if got := keysOf(m); !slices.Equal(got, want) {
		t.Errorf("JSON fields %v, want %v", got, want)
	}
	if got := keysOf(m["disk"]); !slices.Equal(got, []string{"free_bytes", "paused"}) {
		t.Errorf("disk fields %v", got)
	}
	parts, ok := m["partitions"].([]any)
	if !ok {
		t.Fatalf("partitions: %v is not a JSON array", m["partitions"])
	}
	for _, p := range parts {
		if got := keysOf(p); !slices.Equal(got, []string{"high_watermark", "lag", "next_offset", "partition"}) {
			t.Errorf("partition fields %v", got)
		}
	}
	if le := m["last_error"]; le != nil {
		if got := keysOf(le); !slices.Equal(got, []string{"message", "time"}) {
			t.Errorf("last_error fields %v", got)
		}
		if _, err := time.Parse(time.RFC3339, le.(map[string]any)["time"].(string)); err != nil {
			t.Errorf("last_error time: %v", err)
		}
	}
}

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// gaugeValue reads a gauge of the test topic's partition from the default
// Prometheus registry (-1 when it has no such series).
func gaugeValue(t *testing.T, name, partition string) float64 {
	v, ok := testutil.Metric(t, name, map[string]string{"topic": testTopic, "partition": partition})
	if !ok {
		return -1
	}
	return v
}

// waitGauge waits until a gauge of a test topic's partition shows want:
// the gauges follow Live's state a moment later.
func waitGauge(t *testing.T, name string, partition int, want float64) {
	t.Helper()
	var got float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = gaugeValue(t, name, fmt.Sprint(partition)); got == want {
			return
		}
	}
	t.Errorf("%s{partition=%d} = %v, want %v", name, partition, got, want)
}

// counterMatches checks that a counter rose since the run started by what
// Live counts: read between two equal snapshots, as a rotation may come
// at any moment.
func (e *liveEnv) counterMatches(t *testing.T, name string, count func(ingest.LiveStatus) int64) {
	t.Helper()
	var got float64
	var want int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		want = count(e.p.Live())
		got = metricValue(t, name) - e.metrics[name]
		if count(e.p.Live()) == want && got == float64(want) {
			return
		}
	}
	t.Errorf("%s rose by %v, Live counts %d", name, got, want)
}

// TestIngestCLI_Console runs quiver ingest with --http and follows its
// ingest view through the console's /api/live, as the page does.
func TestIngestCLI_Console(t *testing.T) {
	const n, parts = 4000, 2
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	produce(t, addrs, parts, flatValues(t, md, 0, n), time.Now())
	dir := t.TempDir()
	p := startIngestHTTP(t, bin, ingestArgs(addrs, "console", filepath.Join(dir, "c.duckdb"), "", "--idle-exit", "3s", "--batch-rows", "1000"))
	base := strings.TrimSuffix(p.Metrics, "/metrics")

	type snapshot struct {
		Kind   string             `json:"kind"`
		Ingest *ingest.LiveStatus `json:"ingest"`
	}
	var snap snapshot
	var raw struct {
		Ingest json.RawMessage `json:"ingest"`
	}
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(base + "/api/live")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		snap = snapshot{}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &snap) != nil {
			continue
		}
		if st := snap.Ingest; st != nil && st.MessagesTotal == n && len(st.Partitions) == parts &&
			st.Partitions[0].Lag != nil && *st.Partitions[0].Lag == 0 && st.Partitions[1].Lag != nil && *st.Partitions[1].Lag == 0 {
			break
		}
	}
	if snap.Kind != "ingest" || snap.Ingest == nil || snap.Ingest.MessagesTotal != n || snap.Ingest.Topic != testTopic {
		t.Errorf("/api/live never showed the %d messages consumed: %s", n, body)
	} else if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Error(err)
	} else {
		checkLiveJSONText(t, raw.Ingest)
		t.Logf("ingest view: %s", raw.Ingest)
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /: %s, %s; want the page", resp.Status, resp.Header.Get("Content-Type"))
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("quiver ingest: %v\n%s", err, p.Stderr())
	}
}
