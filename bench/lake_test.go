package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/lake"
)

// TestLake_Tiny runs the lake suite small against a real object store
// (SeaweedFS) and checks the report's rows and that every lake run
// committed each message once. It asserts nothing about timing.
func TestLake_Tiny(t *testing.T) {
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
	}
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"bench"}})
	const messages = 20_000
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, runs, err := lakeSuite(ctx, LakeConfig{
		Messages: messages, Partitions: 4, RotateBytes: 256 << 10, Reps: 1,
		S3: lake.S3Config{Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true,
			AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey},
		Bucket: "bench", Store: "SeaweedFS",
	})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Logf("\n%s", out.String())

	if len(rep.Tables) != 2 {
		t.Fatalf("%d tables, want 2", len(rep.Tables))
	}
	main := rep.Tables[0]
	if len(main.Rows) != 2 || main.Rows[0][0] != lakeA || main.Rows[1][0] != lakeB {
		t.Fatalf("rows %q, want one %s and one %s row", main.Rows, lakeA, lakeB)
	}
	for _, row := range main.Rows {
		if len(row) != len(main.Columns) {
			t.Errorf("row %q has %d cells for %d columns", row, len(row), len(main.Columns))
		}
	}
	if !strings.Contains(main.Footer, "overlap") || !strings.Contains(main.Footer, "last lake commit") {
		t.Errorf("footer %q does not say whether the upload overlapped ingest", main.Footer)
	}
	if w := rep.Tables[1]; len(w.Rows) != 1 || len(w.Rows[0]) != len(w.Columns) {
		t.Errorf("lake output table %q: want one full row", w.Rows)
	}
	if len(rep.Results) != 2 || rep.Results[1].Rows != messages {
		t.Errorf("results %+v: want two, the lake run's with %d rows", rep.Results, messages)
	}
	if len(runs) != 1 {
		t.Fatalf("%d lake runs, want 1 (the warm-up left out)", len(runs))
	}
	for _, r := range runs {
		if r.lakeRows != messages {
			t.Errorf("the lake holds %d rows, want %d", r.lakeRows, messages)
		}
		if r.files < 1 || r.commits < 1 {
			t.Errorf("%d data files in %d commits, want at least one of each", r.files, r.commits)
		}
		// The stop's commit, the last, is left out of the rotated files.
		if r.rotatedFiles >= r.files || r.rotatedBytes >= r.fileBytes {
			t.Errorf("%d of %d files (%d of %d bytes) counted as rotated: the last commit's files must be left out",
				r.rotatedFiles, r.files, r.rotatedBytes, r.fileBytes)
		}
	}
}

func TestRotatedFiles(t *testing.T) {
	snap := func(seq int64, files, bytes string) table.Snapshot {
		return table.Snapshot{SequenceNumber: seq, Summary: &table.Summary{Properties: icebergapi.Properties{"added-data-files": files, "added-files-size": bytes}}}
	}
	for _, tc := range []struct {
		name         string
		snaps        []table.Snapshot
		files, bytes int64
	}{
		{"none", nil, 0, 0},
		{"only the stop's", []table.Snapshot{snap(1, "1", "10")}, 0, 0},
		{"in order", []table.Snapshot{snap(1, "2", "200"), snap(2, "1", "150"), snap(3, "1", "5")}, 3, 350},
		{"out of order", []table.Snapshot{snap(3, "1", "5"), snap(1, "2", "200"), snap(2, "1", "150")}, 3, 350},
		{"no summary", []table.Snapshot{{SequenceNumber: 1}, snap(2, "1", "150"), snap(3, "1", "5")}, 1, 150},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, bytes := rotatedFiles(tc.snaps)
			if files != tc.files || bytes != tc.bytes {
				t.Errorf("rotatedFiles = %d files, %d bytes; want %d, %d", files, bytes, tc.files, tc.bytes)
			}
		})
	}
}

func TestLakeBound(t *testing.T) {
	stat := func(ms, cpuMS int) report.Stat {
		return report.Stat{Samples: []report.Sample{{Dur: time.Duration(ms) * time.Millisecond, Rows: 1_000_000, CPU: time.Duration(cpuMS) * time.Millisecond}}}
	}
	pipe := stat(1000, 1200)
	run := func(ingestMS, tailMS, tailCPUMS int) lakeRun {
		return lakeRun{ingest: time.Duration(ingestMS) * time.Millisecond, tail: time.Duration(tailMS) * time.Millisecond,
			tailCPU: time.Duration(tailCPUMS) * time.Millisecond}
	}
	for _, tc := range []struct {
		name  string
		lake  report.Stat
		m     lakeRun
		store float64
		want  string
	}{
		{"cheap", stat(1020, 1300), run(1000, 20, 10), 0, "The lake cost little: 0.98×"},
		{"faster", stat(800, 1500), run(600, 200, 150), 0, "Faster than the pipeline alone: 1.25× its rate with 1.88 of 2 cores busy; it took 200 ms less than the pipeline alone: 600 ms until every batch was committed locally"},
		{"cpu", stat(2000, 3700), run(1500, 500, 500), 0.1, "Bound by the CPU: 1.95 of 2 cores busy (quiver with the broker 1.85, the object store 0.10)"},
		{"tail on one core", stat(2000, 2000), run(1000, 1000, 950), 0, "Bound by the final commit at the stop, serial work on about one core (0.95 cores busy in the tail)"},
		{"tail waiting", stat(2000, 1600), run(1000, 1000, 300), 0, "mostly waiting on the store and catalog (0.30 cores busy in the tail)"},
		{"machine busy", stat(2000, 1600), lakeRun{ingest: time.Second, tail: time.Second, tailCPU: 300 * time.Millisecond,
			machineCPU: 3900 * time.Millisecond, machineTailCPU: 1950 * time.Millisecond}, 0, "Bound by the CPU: 1.95 of 2 cores busy on the machine, other processes included (the lake run's own 0.80) at 0.50×"},
		{"tail short of cpu", stat(2000, 1600), lakeRun{ingest: time.Second, tail: time.Second, tailCPU: 300 * time.Millisecond,
			machineCPU: 3000 * time.Millisecond, machineTailCPU: 1950 * time.Millisecond}, 0, "short of CPU (quiver 0.30 cores in the tail, the machine 1.95 of 2"},
		{"slower ingest", stat(2000, 2000), run(1800, 200, 100), 0, "Bound by a slower ingest"},
		{"split", stat(2000, 2000), run(1800, 200, 100), 0, "of the 1000 ms it took beyond the pipeline alone, 800 ms were a slower ingest (1800 ms until every batch was committed locally, against 1000 ms) and 200 ms the tail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lakeBound(pipe, tc.lake, time.Second, tc.m, tc.store, 2)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("lakeBound = %q, want it to contain %q", got, tc.want)
			}
		})
	}
	m := lakeRun{commits: 4, commitsBefore: 3, tail: 300 * time.Millisecond}
	if got := lakeOverlap(m, 2*time.Second); !strings.HasPrefix(got, "Upload overlapped ingest: 3 of 4 lake commits") {
		t.Errorf("lakeOverlap = %q", got)
	}
	m.commitsBefore = 0
	if got := lakeOverlap(m, 2*time.Second); !strings.HasPrefix(got, "Upload did not overlap ingest") || !strings.Contains(got, "took 300 ms of the lake run's 2000 ms") {
		t.Errorf("lakeOverlap = %q", got)
	}
}
