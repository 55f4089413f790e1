package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/mempool"
)

// ProbeConfig is one small-query probe: a Flight SQL client that runs one
// query after another and times each, as a user's dashboard would next to
// whatever else the server is doing.
type ProbeConfig struct {
	// Addr is the server's Flight address; User and Password log in
	// (no User: no login).
	Addr, User, Password string
	// SQL is the query; each %d in it takes a new pseudo-random id below
	// IDs (IDs 0: the query as given).
	SQL string
	IDs int64
	// Duration is how long it runs, once logged in; Until, when set, is
	// when it stops instead.
	Duration time.Duration
	Until    time.Time
}

// probeTable names the probe's results in its report.
const probeTable = "probe"

// firstFailure starts the footer that names a probe's first failure.
const firstFailure = "First failure: "

// Probe runs a probe and reports its latency: p50, p99 and max, and how
// many queries failed.
func Probe(ctx context.Context, cfg ProbeConfig) (*report.Report, error) {
	lat, failed, first, err := probe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r := &report.Report{Suite: "probe", Reps: 1}
	t := &report.Table{
		Title:   "Probe: one Flight SQL client, one query at a time",
		Note:    fmt.Sprintf("%s against %s.", cfg.SQL, cfg.Addr),
		Columns: []string{"queries", "failed", "p50 ms", "p99 ms", "max ms"},
	}
	t.Rows = append(t.Rows, []string{fmt.Sprint(len(lat.d)), fmt.Sprint(failed),
		fmt.Sprintf("%.1f", msF(lat.p50)), fmt.Sprintf("%.1f", msF(lat.p99)), fmt.Sprintf("%.1f", msF(lat.max()))})
	if first != nil {
		t.Footer = firstFailure + firstLine(first.Error())
	}
	r.Tables = append(r.Tables, t)
	for _, q := range []struct {
		name string
		d    time.Duration
	}{{"p50", lat.p50}, {"p99", lat.p99}, {"max", lat.max()}} {
		r.Add(probeTable, "latency", report.Stat{Name: q.name, Samples: []report.Sample{{Dur: q.d, Rows: int64(len(lat.d))}}})
	}
	r.Add(probeTable, "failed", report.Stat{Name: "failed", Samples: []report.Sample{{Rows: int64(failed)}}})
	return r, nil
}

func (l *latencies) max() time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	return l.d[len(l.d)-1]
}

// probe runs cfg's queries: the latencies of those that succeeded, how
// many failed, and the first failure.
func probe(ctx context.Context, cfg ProbeConfig) (*latencies, int, error, error) {
	t := target{flight: cfg.Addr, user: cfg.User, password: cfg.Password, mem: mempool.New()}
	c, err := t.dial(ctx, protoFlight, nil)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("log in to %s: %w", cfg.Addr, err)
	}
	defer c.close()
	until := cfg.Until
	if until.IsZero() {
		until = time.Now().Add(cfg.Duration)
	}
	// The probe ends by cancellation, as a load window does, not by a
	// deadline: once a deadline passes, gRPC fails every call at once
	// with DeadlineExceeded, and on a busy machine the context's own
	// timer can fire much later. A probe that waited for it spun through
	// hundreds of failed calls in a millisecond.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	end := time.AfterFunc(time.Until(until), cancel)
	defer end.Stop()
	lat := &latencies{}
	var failed int
	var first error
	for ctx.Err() == nil {
		sql := cfg.SQL
		if cfg.IDs > 0 && strings.Contains(sql, "%d") {
			sql = fmt.Sprintf(sql, rand.Int64N(cfg.IDs))
		}
		start := time.Now()
		err := c.query(ctx, sql, func(int64, int64) {})
		took := time.Since(start)
		switch {
		case ctx.Err() != nil:
			// The end cut it short: counted with the time it took, a
			// lower bound, as the load's clients count theirs.
			lat.d = append(lat.d, took)
		case err != nil:
			failed++
			if first == nil {
				first = err
			}
		default:
			lat.d = append(lat.d, took)
		}
	}
	lat.sort()
	return lat, failed, first, nil
}

// probeProc is a probe running as a process of its own (quiver-bench
// probe), so that its client shares no Go runtime with the load's
// clients: what it sees is what any other client on the machine would.
type probeProc struct {
	cmd  *exec.Cmd
	out  string
	logs strings.Builder
}

// startProbe starts a probe process against the load's server until
// until, running point lookups as the load's clients do.
func (l *suite) startProbe(ctx context.Context, until time.Time) (*probeProc, error) {
	out, err := os.CreateTemp(l.cfg.Dir, "probe-*.json")
	if err != nil {
		return nil, err
	}
	out.Close()
	p := &probeProc{out: out.Name()}
	p.cmd = exec.CommandContext(ctx, l.cfg.BenchBin, "probe", "--reps", "1", "--json", p.out,
		"--flight", l.target.flight, "--user", l.target.user,
		"--sql", l.q.pointTemplate(), "--ids", fmt.Sprint(l.q.rows),
		"--until", until.UTC().Format(time.RFC3339Nano))
	// The password goes by the environment, never the command line.
	p.cmd.Env = append(os.Environ(), "QUIVER_PASSWORD="+l.target.password)
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the probe: %w", err)
	}
	return p, nil
}

// probeResult is what a probe process measured.
type probeResult struct {
	p50, p99 time.Duration
	queries  int64
	failed   int64
	// first is the probe's first failure, if any failed.
	first string
	// cpu is the probe process's user and system time.
	cpu time.Duration
}

// wait waits for the probe to finish and reads what it measured.
func (p *probeProc) wait() (*probeResult, error) {
	defer os.Remove(p.out)
	if err := p.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("probe: %w\n%s", err, p.logs.String())
	}
	b, err := os.ReadFile(p.out)
	if err != nil {
		return nil, fmt.Errorf("probe results: %w", err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("probe results %s: %w", filepath.Base(p.out), err)
	}
	res := &probeResult{cpu: p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()}
	for _, t := range rep.Tables {
		if f, ok := strings.CutPrefix(t.Footer, firstFailure); ok {
			res.first = f
		}
	}
	var seen int
	for _, r := range rep.Results {
		if r.Table != probeTable {
			continue
		}
		d := time.Duration(r.MedianMS * float64(time.Millisecond))
		switch r.Contender {
		case "p50":
			res.p50, res.queries = d, r.Rows
			seen++
		case "p99":
			res.p99 = d
			seen++
		case "failed":
			res.failed = r.Rows
		}
	}
	if seen != 2 {
		return nil, errors.New("probe results: no p50 and p99 in its report")
	}
	return res, nil
}
