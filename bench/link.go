package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/mempool"
)

// The link suite: DoGet over a bandwidth-limited link, compressed against
// uncompressed. Two network namespaces joined by a veth pair, each end
// shaped with a tbf qdisc, the server (`quiver serve`) in one and the
// client (`quiver-bench link-client`, a subprocess) in the other. The
// addresses are a /30 that exists only inside those namespaces, so no
// traffic leaves them; both namespaces are deleted on every exit path
// (deleting a namespace deletes its veth end, and with it the pair).
// Then the same fetches on loopback, where compression should not pay.

// ErrLinkUnavailable says the shaped link cannot be built here: not root,
// no iproute2, or no network namespaces. The suite is skipped.
var ErrLinkUnavailable = errors.New("shaped link unavailable")

// LinkConfig configures the link suite.
type LinkConfig struct {
	// Bin is the quiver binary, run as the server.
	Bin string
	// BenchBin is the quiver-bench binary, run as the client
	// (quiver-bench link-client) and the raw TCP source beside it.
	BenchBin  string
	Workloads []workload.Workload // num20, str20
	Rows      int64
	// Compressions are what the client asks for: none, lz4, zstd, auto.
	Compressions []string
	// Rate, Burst and Latency shape each direction (tc tbf).
	Rate, Burst, Latency string
	// Subnet is the first three octets of the /30 the namespaces use.
	Subnet string
	// Loopback also runs the fetches on loopback; LinkOnly skips it.
	SkipLoopback bool
	SkipLink     bool
	Reps         int
	Dir          string
}

func (c *LinkConfig) defaults() {
	if len(c.Workloads) == 0 {
		c.Workloads = []workload.Workload{workload.Workloads["num20"], workload.Workloads["str20"]}
	}
	if c.Rows <= 0 {
		c.Rows = 1_000_000
	}
	if len(c.Compressions) == 0 {
		c.Compressions = []string{"none", "lz4", "zstd", "auto"}
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
		c.Subnet = "10.200.0"
	}
}

// Link runs the link suite.
func Link(ctx context.Context, cfg LinkConfig) (*report.Report, error) {
	cfg.defaults()
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "quiver-link-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	db := filepath.Join(dir, "link.duckdb")
	if err := generateLinkDB(ctx, db, cfg.Workloads, cfg.Rows); err != nil {
		return nil, err
	}
	r := &report.Report{Suite: "link", Reps: cfg.Reps}
	if !cfg.SkipLink {
		if err := linkPhase(ctx, cfg, db, r); err != nil {
			return nil, err
		}
	}
	if !cfg.SkipLoopback {
		if err := loopbackPhase(ctx, cfg, db, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// generateLinkDB writes the workloads' tables to a database file.
func generateLinkDB(ctx context.Context, path string, ws []workload.Workload, rows int64) error {
	db, err := engine.Open(ctx, engine.Options{Path: path})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	for _, t := range tablesOf(ws) {
		if _, err := c.Exec(ctx, workload.CreateSQL(t, rows)); err != nil {
			return fmt.Errorf("generate %s: %w", t, err)
		}
	}
	return nil
}

// netLink is the pair of namespaces and the shaped veth between them.
type netLink struct {
	srvNS, cliNS     string
	srvDev, cliDev   string
	srvAddr, cliAddr string
	created          []string // namespaces to delete
}

// linkPrefix names every namespace this suite creates: qvlink-PID-s/c.
const linkPrefix = "qvlink-"

// setupLink builds the shaped link, or says why it cannot.
func setupLink(ctx context.Context, cfg LinkConfig) (*netLink, error) {
	if err := netnsAvailable("or skip with --skip-link"); err != nil {
		return nil, err
	}
	removeStaleLinks(ctx)
	pid := os.Getpid()
	l := &netLink{
		srvNS: fmt.Sprintf("%s%d-s", linkPrefix, pid), cliNS: fmt.Sprintf("%s%d-c", linkPrefix, pid),
		srvDev: fmt.Sprintf("qvl%ds", pid), cliDev: fmt.Sprintf("qvl%dc", pid),
		srvAddr: cfg.Subnet + ".1", cliAddr: cfg.Subnet + ".2",
	}
	for _, ns := range []string{l.srvNS, l.cliNS} {
		if err := ipCmd(ctx, "netns", "add", ns); err != nil {
			l.teardown()
			return nil, fmt.Errorf("%w: network namespaces: %v", ErrLinkUnavailable, err)
		}
		l.created = append(l.created, ns)
	}
	steps := shapedVethSteps(vethEnd{l.srvNS, l.srvDev, l.srvAddr + "/30"}, vethEnd{l.cliNS, l.cliDev, l.cliAddr + "/30"},
		tbfShape{cfg.Rate, cfg.Burst, cfg.Latency})
	steps = append(steps,
		[]string{"ip", "-n", l.srvNS, "link", "set", "lo", "up"},
		[]string{"ip", "-n", l.cliNS, "link", "set", "lo", "up"})
	for _, s := range steps {
		if err := runCmd(ctx, s[0], s[1:]...); err != nil {
			l.teardown()
			// A veth that cannot be made or shaped means this kernel or
			// sandbox lacks the support, not that quiver is broken.
			return nil, fmt.Errorf("%w: %v", ErrLinkUnavailable, err)
		}
	}
	return l, nil
}

// teardown deletes the namespaces (and with them the veth pair). It runs
// with a fresh context: it must work after the suite's was canceled.
func (l *netLink) teardown() {
	deleteNamespaces(l.created)
	l.created = nil
}

// netnsAvailable says why network namespaces and tc cannot be used here
// (not root, no iproute2), wrapping ErrLinkUnavailable; hint says how to
// do without them.
func netnsAvailable(hint string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root to create network namespaces (run as root, %s)", ErrLinkUnavailable, hint)
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s not found: install iproute2 (apt-get install -y iproute2)", ErrLinkUnavailable, tool)
		}
	}
	return nil
}

// deleteNamespaces deletes the network namespaces names (and with them
// their veth ends and the pairs), best effort. It runs with a fresh
// context: it must work after a suite's was canceled.
func deleteNamespaces(names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range names {
		ipCmd(ctx, "netns", "del", ns)
	}
}

// vethEnd is one end of a veth pair: its namespace ("" for this
// process's own), device name, and address with its prefix length.
type vethEnd struct{ ns, dev, addr string }

// tbfShape is the tc tbf qdisc that shapes each end's egress.
type tbfShape struct{ rate, burst, latency string }

// shapedVethSteps returns the commands that create the veth pair a–b,
// move each end into its namespace, address it, bring it up and shape
// its egress, so each direction of the pair runs at shape's rate. The
// namespaces must exist.
func shapedVethSteps(a, b vethEnd, shape tbfShape) [][]string {
	in := func(tool, ns string, args ...string) []string {
		if ns == "" {
			return append([]string{tool}, args...)
		}
		return append([]string{tool, "-n", ns}, args...)
	}
	steps := [][]string{{"ip", "link", "add", a.dev, "type", "veth", "peer", "name", b.dev}}
	for _, e := range []vethEnd{a, b} {
		if e.ns != "" {
			steps = append(steps, []string{"ip", "link", "set", e.dev, "netns", e.ns})
		}
	}
	for _, e := range []vethEnd{a, b} {
		steps = append(steps,
			in("ip", e.ns, "addr", "add", e.addr, "dev", e.dev),
			in("ip", e.ns, "link", "set", e.dev, "up"),
			in("tc", e.ns, "qdisc", "add", "dev", e.dev, "root", "tbf", "rate", shape.rate, "burst", shape.burst, "latency", shape.latency))
	}
	return steps
}

// removeStaleLinks deletes namespaces an earlier run of this suite left
// behind when it was killed (its process no longer exists).
func removeStaleLinks(ctx context.Context) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, linkPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			ipCmd(ctx, "netns", "del", name)
		}
	}
}

func ipCmd(ctx context.Context, args ...string) error { return runCmd(ctx, "ip", args...) }

func runCmd(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nsProc is a child process, run inside a namespace when ns is set, that
// announces "quiver: <what> listening on ADDR" on stderr.
type nsProc struct {
	cmd  *exec.Cmd
	Addr string
	log  strings.Builder
}

// startNS starts bin with args (in namespace ns unless empty) and waits
// for its "quiver: <what> listening on" line.
func startNS(ctx context.Context, ns, what, bin string, args ...string) (*nsProc, error) {
	name, argv := bin, args
	if ns != "" {
		name, argv = "ip", append([]string{"netns", "exec", ns, bin}, args...)
	}
	p := &nsProc{cmd: exec.Command(name, argv...)}
	// If this process dies without stopping it (kill -9), the child is
	// told too: a server left running would keep its namespace alive.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		prefix := "quiver: " + what + " listening on "
		for sc.Scan() {
			line := sc.Text()
			p.log.WriteString(line + "\n")
			if addr, ok := strings.CutPrefix(line, prefix); ok {
				p.Addr = addr
				ready <- nil
				io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- fmt.Errorf("%s exited before it was ready:\n%s", what, p.log.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			p.cmd.Wait()
			return nil, err
		}
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	case <-time.After(2 * time.Minute):
		p.Stop()
		return nil, fmt.Errorf("%s not ready after 2 minutes:\n%s", what, p.log.String())
	}
	return p, nil
}

// Stop terminates the process and waits for it. (`ip netns exec` execs
// the command, so the signal reaches quiver itself.)
func (p *nsProc) Stop() {
	if p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// LinkFetch is what `quiver-bench link-client` prints: one timed fetch.
type LinkFetch struct {
	Millis float64 `json:"ms"`
	Rows   int64   `json:"rows"`
	Bytes  int64   `json:"bytes"` // Arrow buffer bytes received (uncompressed)
}

// linkFetchPrefix marks the JSON line in link-client's output.
const linkFetchPrefix = "LINKFETCH "

// RunLinkFetch connects with cfg, warms the connection up and times one
// fetch of query, discarding the batches. cfg.Compression is the codec
// asked for.
func RunLinkFetch(ctx context.Context, cfg client.Config, query string) (LinkFetch, error) {
	// As in the fetch suite: the client keeps nothing of a batch it has
	// released, so batches of every workload may come from recycled
	// memory.
	cfg.Allocator = mempool.New()
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return LinkFetch{}, err
	}
	defer c.Close()
	if res, err := c.Query(ctx, "SELECT 1"); err != nil {
		return LinkFetch{}, err
	} else {
		drainReader(res)
		res.Release()
	}
	start := time.Now()
	res, err := c.Query(ctx, query)
	if err != nil {
		return LinkFetch{}, err
	}
	defer res.Release()
	bytes, rows, err := drainReader(res)
	if err != nil {
		return LinkFetch{}, err
	}
	return LinkFetch{Millis: float64(time.Since(start).Microseconds()) / 1000, Rows: rows, Bytes: bytes}, nil
}

// PrintLinkFetch writes f as the line the suite parses.
func PrintLinkFetch(w io.Writer, f LinkFetch) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", linkFetchPrefix, b)
	return err
}

// ServeTCPSource listens on addr, announces it on stderr as "quiver: tcp
// listening on ADDR", and writes each connection the number of bytes it
// asks for (the raw-socket ceiling of the link), until ctx ends.
func ServeTCPSource(ctx context.Context, addr string, announce io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	fmt.Fprintf(announce, "quiver: tcp listening on %s\n", ln.Addr())
	go func() { <-ctx.Done(); ln.Close() }()
	buf := make([]byte, 1<<20)
	rand.Read(buf) // incompressible, like a link that does not compress
	err = acceptCounted(ln, func(c net.Conn, n int64) { writeRepeated(c, buf, n) })
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// RecvTCP times receiving n bytes from a ServeTCPSource at addr.
func RecvTCP(addr string, n int64) (LinkFetch, error) {
	start := time.Now()
	got, _, err := runTCP(addr, n)
	if err != nil {
		return LinkFetch{}, err
	}
	return LinkFetch{Millis: float64(time.Since(start).Microseconds()) / 1000, Bytes: got}, nil
}

// clientRun runs `quiver-bench link-client` (in ns unless empty) and
// returns the fetch it prints.
func clientRun(ctx context.Context, ns, bin string, args ...string) (report.Sample, error) {
	name, argv := bin, append([]string{"link-client"}, args...)
	if ns != "" {
		name, argv = "ip", append([]string{"netns", "exec", ns, bin}, argv...)
	}
	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return report.Sample{}, fmt.Errorf("link client: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if js, ok := strings.CutPrefix(line, linkFetchPrefix); ok {
			var f LinkFetch
			if err := json.Unmarshal([]byte(js), &f); err != nil {
				return report.Sample{}, fmt.Errorf("link client output: %w", err)
			}
			return report.Sample{Dur: time.Duration(f.Millis * float64(time.Millisecond)), Bytes: f.Bytes, Rows: f.Rows}, nil
		}
	}
	return report.Sample{}, fmt.Errorf("link client printed no result: %s", strings.TrimSpace(string(out)))
}

func randomPassword() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// linkPhase builds the link, runs the server in one namespace and the
// fetches from the other, and tears everything down.
func linkPhase(ctx context.Context, cfg LinkConfig, db string, r *report.Report) (err error) {
	l, err := setupLink(ctx, cfg)
	if err != nil {
		return err
	}
	defer l.teardown()
	pw := randomPassword()
	srv, err := startNS(ctx, l.srvNS, "flight", cfg.Bin, "serve", "--db", db, "--flight", l.srvAddr+":0",
		"--mysql", "", "--http", "", "--log-level", "warn", "--user", "bench", "--password", pw)
	if err != nil {
		return err
	}
	defer srv.Stop()
	tcp, err := startNS(ctx, l.srvNS, "tcp", cfg.BenchBin, "link-client", "--tcp-serve", l.srvAddr+":0")
	if err != nil {
		return err
	}
	defer tcp.Stop()
	title := fmt.Sprintf("DoGet over a shaped link: veth between two network namespaces, tc tbf rate %s burst %s latency %s", cfg.Rate, cfg.Burst, cfg.Latency)
	return fetchTable(ctx, cfg, r, "link", title, l.cliNS, srv.Addr, tcp.Addr, pw)
}

// loopbackPhase runs the same fetches against a server on 127.0.0.1.
func loopbackPhase(ctx context.Context, cfg LinkConfig, db string, r *report.Report) error {
	pw := randomPassword()
	srv, err := startNS(ctx, "", "flight", cfg.Bin, "serve", "--db", db, "--flight", "127.0.0.1:0",
		"--mysql", "", "--http", "", "--log-level", "warn", "--user", "bench", "--password", pw)
	if err != nil {
		return err
	}
	defer srv.Stop()
	tcp, err := startNS(ctx, "", "tcp", cfg.BenchBin, "link-client", "--tcp-serve", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer tcp.Stop()
	return fetchTable(ctx, cfg, r, "loopback", "DoGet on loopback (same machine, no shaping)", "", srv.Addr, tcp.Addr, pw)
}

// fetchTable times each workload with each compression, alternated, plus
// raw TCP moving the uncompressed byte count, and adds a table.
func fetchTable(ctx context.Context, cfg LinkConfig, r *report.Report, name, title, ns, flightAddr, tcpAddr, pw string) error {
	t := &report.Table{
		Title:   title,
		Note:    fmt.Sprintf("quiver's Go client (a subprocess%s) asks for each compression with the x-quiver-compression header; ms is the median fetch, MB/s counts uncompressed Arrow bytes; raw TCP moves the same bytes, incompressible.", map[bool]string{true: " in the other namespace", false: ""}[ns != ""]),
		Columns: []string{"workload", "rows", "compression", "ms", "MB/s", "vs none", "vs best fixed"},
	}
	for _, w := range cfg.Workloads {
		q := w.Query(cfg.Rows)
		var cs []report.Contender
		for _, comp := range cfg.Compressions {
			cs = append(cs, report.Contender{Name: comp, Run: func() (report.Sample, error) {
				return clientRun(ctx, ns, cfg.BenchBin, "--server", flightAddr, "--user", "bench", "--password", pw,
					"--compression", comp, "--query", q)
			}})
		}
		// The uncompressed byte count, for raw TCP, from a first fetch.
		first, err := cs[0].Run()
		if err != nil {
			return err
		}
		cs = append(cs, report.Contender{Name: "raw TCP", Run: func() (report.Sample, error) {
			return clientRun(ctx, ns, cfg.BenchBin, "--tcp-recv", tcpAddr, "--bytes", strconv.FormatInt(first.Bytes, 10))
		}})
		stats, err := report.Alternate(cfg.Reps, cs...)
		if err != nil {
			return err
		}
		cas := fmt.Sprintf("%s/%s", w.Name, report.FmtRows(cfg.Rows))
		var none, best *report.Stat
		for i := range stats[:len(stats)-1] {
			s := &stats[i]
			if s.Name == "none" {
				none = s
			}
			if s.Name != "auto" && (best == nil || s.Median() < best.Median()) {
				best = s
			}
		}
		for i, s := range stats {
			r.Add(name, cas, s)
			row := []string{w.Name, report.FmtRows(cfg.Rows), s.Name, report.FmtMS(s), report.FmtMBps(s), "", ""}
			if none != nil && i < len(stats)-1 {
				row[5] = report.FmtX(report.Ratio(s, *none))
			}
			if best != nil && i < len(stats)-1 {
				row[6] = report.FmtX(report.Ratio(s, *best))
			}
			t.Rows = append(t.Rows, row)
			t.Bars = append(t.Bars, report.Bar{Group: name + " " + cas, Series: s.Name, Value: s.Median().Seconds() * 1000, Unit: "ms (lower is better)"})
		}
	}
	r.Tables = append(r.Tables, t)
	return nil
}
