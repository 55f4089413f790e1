package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/mempool"
)

// The scaleout suite: one replica against several, each behind its own
// shaped link, fetching a multi-endpoint lake result.
//
// The bench writes num20 to a file:// lake (every namespace sees the same
// file system; the catalog is sqlite in the lake's directory). Each
// replica, `quiver serve --lake`, runs in a network namespace of its own,
// joined to this process's namespace by a veth pair whose two ends are
// shaped with tc tbf (each direction at Rate), on a /30 of its own:
// replica i is SUBNET.i.1, this namespace's end SUBNET.i.2. The replicas
// share a token key and a user, and each is started with --advertise its
// own address and --peers the others', so the endpoints of a split scan
// list every replica, rotated. The client, quiver's Go client in this
// process, is not behind a shared shaped link: each replica's link is its
// own, so the client can take Rate from each at once.
//
// The baseline is a replica started with no peers, in replica 0's
// namespace (on another port), so its endpoints list no location and the
// client fetches every one of them over its single link. The two are
// alternated.

// ScaleOutConfig configures the scaleout suite.
type ScaleOutConfig struct {
	// Bin is the quiver binary, run as the replicas.
	Bin  string
	Rows int64
	Reps int
	// Replicas is how many replicas serve the lake; 0 means 3.
	Replicas int
	// Rate, Burst and Latency shape each direction of each replica's
	// link (tc tbf).
	Rate, Burst, Latency string
	// Subnet is the first two octets of the replicas' /30s: replica i is
	// Subnet.i.1.
	Subnet string
	// Dir is where the lake and the replicas' databases are made (in a
	// subdirectory removed at the end); empty means the system's
	// temporary directory.
	Dir string
	// Files says how the lake's data files are written.
	Files LakeFiles
	// PartBytes is the replicas' --lake-part-mb in bytes; 0 keeps serve's
	// default.
	PartBytes int64
	// FetchParallel is the client's Config.FetchParallel; 0 keeps its
	// default, min(endpoints, 4).
	FetchParallel int
}

func (c *ScaleOutConfig) defaults() {
	if c.Rows <= 0 {
		c.Rows = 10_000_000
	}
	if c.Replicas <= 0 {
		c.Replicas = 3
	}
	if c.Rate == "" {
		c.Rate = "1gbit"
	}
	if c.Burst == "" {
		c.Burst = "1mb"
	}
	if c.Latency == "" {
		c.Latency = "10ms"
	}
	if c.Subnet == "" {
		c.Subnet = "10.201"
	}
	c.Files.defaults()
}

// scaleOutPort is the Flight port of every replica (each has a network
// namespace, so a port, of its own); the solo baseline listens on the
// next one, its HTTP ports are these plus 1000.
const scaleOutPort = 31337

// scaleOutReplica is one replica's place on the network.
type scaleOutReplica struct {
	ns, dev, hostDev string
	addr, hostAddr   string // its address and this namespace's, on its /30
	flight, http     string // HOST:PORT
}

// scaleOutNet lays out n replicas: namespace qvlink-PID-rI (removed by
// removeStaleLinks when this process is gone), devices qvlPIDrI in the
// namespace and qvlPIDhI here, addresses subnet.I.1 and subnet.I.2.
func scaleOutNet(pid, n int, subnet string) []scaleOutReplica {
	rs := make([]scaleOutReplica, n)
	for i := range rs {
		addr := fmt.Sprintf("%s.%d.1", subnet, i)
		rs[i] = scaleOutReplica{
			ns: fmt.Sprintf("%s%d-r%d", linkPrefix, pid, i), dev: fmt.Sprintf("qvl%dr%d", pid, i), hostDev: fmt.Sprintf("qvl%dh%d", pid, i),
			addr: addr, hostAddr: fmt.Sprintf("%s.%d.2", subnet, i),
			flight: fmt.Sprintf("%s:%d", addr, scaleOutPort), http: fmt.Sprintf("%s:%d", addr, scaleOutPort+1000),
		}
	}
	return rs
}

// peersOf lists the Flight addresses of every replica but i.
func peersOf(rs []scaleOutReplica, i int) string {
	var out []string
	for j, r := range rs {
		if j != i {
			out = append(out, r.flight)
		}
	}
	return strings.Join(out, ",")
}

// checkSubnet refuses a --subnet that is not two octets.
func checkSubnet(s string) error {
	parts := strings.Split(s, ".")
	if len(parts) != 2 {
		return fmt.Errorf("subnet %q: give the first two octets, like 10.201", s)
	}
	for _, p := range parts {
		if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 255 {
			return fmt.Errorf("subnet %q: give the first two octets, like 10.201", s)
		}
	}
	return nil
}

// ScaleOut runs the scaleout suite. It returns an error wrapping
// ErrLinkUnavailable, before writing any data, where network namespaces
// cannot be made.
func ScaleOut(ctx context.Context, cfg ScaleOutConfig) (*report.Report, error) {
	cfg.defaults()
	if err := checkSubnet(cfg.Subnet); err != nil {
		return nil, err
	}
	if cfg.Replicas > 250 {
		return nil, fmt.Errorf("%d replicas: at most 250", cfg.Replicas)
	}
	if _, err := cfg.Files.copyOptions(); err != nil {
		return nil, err
	}
	if err := netnsAvailable("or run bench lakeread for the lake scan on loopback"); err != nil {
		return nil, err
	}
	removeStaleLinks(ctx)

	work, err := os.MkdirTemp(cfg.Dir, "quiver-scaleout-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if work, err = filepath.Abs(work); err != nil {
		return nil, err
	}
	lakeDir := filepath.Join(work, "lake")
	stage := filepath.Join(work, "stage.duckdb")
	spec := lakeTableSpec{name: "num20", from: "SELECT * FROM num"}
	written, err := buildLake(ctx, stage, lakeDir, []workload.Workload{workload.Workloads["num20"]}, cfg.Rows, []lakeTableSpec{spec}, cfg.Files)
	if err != nil {
		return nil, err
	}
	os.Remove(stage) // the replicas read the lake only
	os.Remove(stage + ".wal")

	rs := scaleOutNet(os.Getpid(), cfg.Replicas, cfg.Subnet)
	var created []string
	defer func() { deleteNamespaces(created) }()
	shape := tbfShape{cfg.Rate, cfg.Burst, cfg.Latency}
	for _, r := range rs {
		if err := ipCmd(ctx, "netns", "add", r.ns); err != nil {
			return nil, fmt.Errorf("%w: network namespaces: %v", ErrLinkUnavailable, err)
		}
		created = append(created, r.ns)
		steps := append(shapedVethSteps(vethEnd{r.ns, r.dev, r.addr + "/30"}, vethEnd{"", r.hostDev, r.hostAddr + "/30"}, shape),
			[]string{"ip", "-n", r.ns, "link", "set", "lo", "up"})
		for _, s := range steps {
			if err := runCmd(ctx, s[0], s[1:]...); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrLinkUnavailable, err)
			}
		}
	}

	pw, key := randomPassword(), randomHex(32)
	common := []string{"--mysql", "", "--log-level", "warn", "--lake", "file://" + lakeDir,
		"--user", "bench", "--password", pw, "--token-key", key}
	if cfg.PartBytes > 0 {
		common = append(common, "--lake-part-mb", strconv.FormatInt(max(cfg.PartBytes>>20, 1), 10))
	}
	var pids []int
	for i, r := range rs {
		args := append([]string{"serve", "--db", filepath.Join(work, fmt.Sprintf("replica%d.duckdb", i)),
			"--flight", r.flight, "--http", r.http, "--advertise", r.flight, "--peers", peersOf(rs, i)}, common...)
		p, err := startNS(ctx, r.ns, "http", cfg.Bin, args...)
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		defer p.Stop()
		pids = append(pids, p.cmd.Process.Pid)
	}
	soloFlight := fmt.Sprintf("%s:%d", rs[0].addr, scaleOutPort+1)
	solo, err := startNS(ctx, rs[0].ns, "http", cfg.Bin, append([]string{"serve", "--db", filepath.Join(work, "solo.duckdb"),
		"--flight", soloFlight, "--http", fmt.Sprintf("%s:%d", rs[0].addr, scaleOutPort+1001)}, common...)...)
	if err != nil {
		return nil, fmt.Errorf("solo replica: %w", err)
	}
	defer solo.Stop()
	pids = append(pids, solo.cmd.Process.Pid)

	dial := func(addr string) (*client.Client, error) {
		return client.Dial(ctx, client.Config{Addr: addr, User: "bench", Password: pw, Allocator: mempool.New(), FetchParallel: cfg.FetchParallel})
	}
	all, err := dial(rs[0].flight)
	if err != nil {
		return nil, err
	}
	defer all.Close()
	one, err := dial(soloFlight)
	if err != nil {
		return nil, err
	}
	defer one.Close()

	q := "SELECT * FROM lake.quiver." + spec.name
	epsAll, locsAll, err := probeEndpoints(ctx, all, q)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", q, err)
	}
	epsOne, locsOne, err := probeEndpoints(ctx, one, q)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", q, err)
	}

	// Each replica's share of the result bytes over the runs from all of
	// them, from their /metrics.
	sent := make([]float64, len(rs))
	replicaBytes := func() ([]float64, error) {
		out := make([]float64, len(rs))
		for i, r := range rs {
			m, err := scrapeMetrics(ctx, r.http, "bench", pw, "quiver_flight_result_bytes_total")
			if err != nil {
				return nil, fmt.Errorf("replica %d: %w", i, err)
			}
			out[i] = m["quiver_flight_result_bytes_total"]
		}
		return out, nil
	}
	var machine []time.Duration
	stats, err := report.Alternate(cfg.Reps,
		report.Contender{Name: "1 replica", Run: func() (report.Sample, error) { return timedQuery(ctx, one, q, cfg.Rows, pids) }},
		report.Contender{Name: fmt.Sprintf("%d replicas", len(rs)), Run: func() (report.Sample, error) {
			before, err := replicaBytes()
			if err != nil {
				return report.Sample{}, err
			}
			m0 := machineBusy()
			s, err := timedQuery(ctx, all, q, cfg.Rows, pids)
			if err != nil {
				return report.Sample{}, err
			}
			machine = append(machine, machineBusy()-m0)
			after, err := replicaBytes()
			if err != nil {
				return report.Sample{}, err
			}
			for i := range sent {
				sent[i] += after[i] - before[i]
			}
			return s, nil
		}},
	)
	if err != nil {
		return nil, err
	}
	r := &report.Report{Suite: "scaleout", Reps: cfg.Reps}
	cas := "num20/" + report.FmtRows(cfg.Rows)
	for _, s := range stats {
		r.Add("scaleout", cas, s)
	}
	wr := written[spec.name]
	r.Tables = append(r.Tables, scaleOutTable(cfg, stats, []int{epsOne, epsAll}, [][]string{locsOne, locsAll}, sent, report.Median(machine[1:]), wr))
	return r, nil
}

// scaleOutTable builds the suite's table from the two contenders' stats
// (one replica first), their endpoints and the first endpoint's
// locations, the result bytes each replica sent over the runs from all of
// them, and the machine's busy CPU time over the median such run.
func scaleOutTable(cfg ScaleOutConfig, stats []report.Stat, eps []int, locs [][]string, sent []float64, machineBusy time.Duration, wr lakeWritten) *report.Table {
	t := &report.Table{
		Title: fmt.Sprintf("Scale-out: a %s-row num20 lake table fetched from 1 replica and from %d, each behind its own veth, tc tbf rate %s burst %s latency %s",
			report.FmtRows(cfg.Rows), cfg.Replicas, cfg.Rate, cfg.Burst, cfg.Latency),
		Note: "quiver's Go client in the root namespace; each replica in a namespace of its own, all serving one file:// lake; " +
			"the one-replica baseline has no peers, so its endpoints list no other location. cores is the CPU time of every replica and the client over the fetch's time.",
		Columns: []string{"replicas", "endpoints", "locations", "ms", "MB/s", "rows/s", "cores", "vs 1 replica"},
	}
	base := stats[0]
	for i, s := range stats {
		t.Rows = append(t.Rows, []string{s.Name, strconv.Itoa(eps[i]), strconv.Itoa(len(locs[i])), report.FmtMS(s), report.FmtMBps(s),
			report.FmtRate(s.RowsPerSec()), fmt.Sprintf("%.2f", s.Cores()), report.FmtX(report.Ratio(s, base))})
		t.Bars = append(t.Bars, report.Bar{Group: "num20 " + report.FmtRows(cfg.Rows), Series: s.Name, Value: s.MBps(), Unit: "MB/s"})
	}
	t.Footer = scaleOutFooter(cfg, stats, eps, sent, machineBusy, wr)
	return t
}

// scaleOutFooter says what the figure is, how the bytes spread over the
// replicas, and what bound the fetch from all of them.
func scaleOutFooter(cfg ScaleOutConfig, stats []report.Stat, eps []int, sent []float64, machineBusy time.Duration, wr lakeWritten) string {
	one, all := stats[0], stats[len(stats)-1]
	var lines []string
	lines = append(lines, fmt.Sprintf("%d replicas ran at %.2f× one (target 2.5×); the lake holds %d data files of %s mean (%s), %d endpoints.",
		cfg.Replicas, report.Ratio(all, one), wr.files, fmtMB(wr.meanBytes()), cfg.Files, eps[len(eps)-1]))
	var total float64
	for _, b := range sent {
		total += b
	}
	if total > 0 {
		shares := make([]string, len(sent))
		for i, b := range sent {
			shares[i] = fmt.Sprintf("%.0f%%", 100*b/total)
		}
		lines = append(lines, "report.Result bytes sent by each replica over the runs from all of them: "+strings.Join(shares, ", ")+".")
	}
	if eps[len(eps)-1] < 2 {
		lines = append(lines, "The scan was not split: with one endpoint every replica but the first idles (is the multi-endpoint server change in this binary? see --part-mb).")
	}
	if total > 0 && len(sent) > 1 {
		var top float64
		for _, b := range sent {
			top = max(top, b/total)
		}
		lines = append(lines, fmt.Sprintf("With the largest share at %.0f%%, a fetch bound by the links could run at most %.2f× one replica.", 100*top, 1/top))
	}
	ncpu := runtime.NumCPU()
	cpuS := func(s report.Stat) float64 { return s.Cores() * s.Median().Seconds() }
	moved := fmt.Sprintf("moving %.0f MB/s (%.0f MB/s a link; one replica alone %.0f MB/s); a fetch cost %.1f CPU-s from all, %.1f from one",
		all.MBps(), all.MBps()/float64(cfg.Replicas), one.MBps(), cpuS(all), cpuS(one))
	machine := cores(machineBusy, all.Median())
	switch {
	case all.Cores() >= 0.85*float64(ncpu):
		lines = append(lines, fmt.Sprintf("Bound by the CPU: quiver's processes kept %.2f of %d cores busy %s.", all.Cores(), ncpu, moved))
	case machine >= 0.9*float64(ncpu):
		lines = append(lines, fmt.Sprintf("Short of CPU: the machine's %d cores were busy (%.2f, other processes included) and quiver's processes got %.2f of them, %s.", ncpu, machine, all.Cores(), moved))
	default:
		lines = append(lines, fmt.Sprintf("quiver's processes kept %.2f of %d cores busy (the machine %.2f), %s.", all.Cores(), ncpu, machine, moved))
	}
	return strings.Join(lines, "\n")
}
