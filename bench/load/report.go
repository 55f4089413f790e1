package load

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench/report"
)

// The load suite's targets, checked in the report's last table.
const (
	targetRSS          = 1 << 30 // server peak RSS
	targetP99Ratio     = 10.0    // small p99 under load over idle p99
	targetFetchRatio   = 0.8     // fetch rows/s at 300 clients over at 64
	targetAbortPercent = 10.0    // RSS and goroutines after aborted streams, over baseline
)

// suiteReport turns the outcome into tables.
func suiteReport(cfg Config, flags []string, out *outcome) *report.Report {
	r := &report.Report{Suite: "load", Reps: cfg.Rounds}
	var server string
	if len(flags) > 0 {
		server = " Server flags: " + strings.Join(flags, " ") + "."
	}
	start := "then each loops"
	if cfg.Warmup > 0 {
		start = fmt.Sprintf("then each starts at a random moment of a %v warm-up, not measured, and loops", cfg.Warmup)
	}
	nice := ""
	if cfg.ServerNice != 0 {
		nice = fmt.Sprintf(", at nice %d so that the clients, on the same cores, get one when they have work", cfg.ServerNice)
	}
	note := fmt.Sprintf("One quiver serve with auth on (users file, Argon2id)%s; clients log in %d at a time, %s "+
		"point lookup, aggregate over %s rows, %s-row fetch read to the end; %v measured; %.0f%% MySQL, the rest Flight SQL. "+
		"An operation counts in the figures when it ends in the measured window; errors count whenever they happen. "+
		"Peak RSS is sampled every 100 ms from the first login to the last connection closed.%s",
		nice, cfg.LoginParallel, start, report.FmtRows(cfg.AggRows), report.FmtRows(cfg.FetchRows), cfg.Duration, 100*cfg.MySQLShare, server)
	if cfg.WriteShare > 0 {
		note += fmt.Sprintf(" %.0f%% of the clients also INSERT a row after each read.", 100*cfg.WriteShare)
	}
	waiters := "the bench process's goroutines"
	if cfg.ClientProcs > 1 {
		note += fmt.Sprintf(" A loaded level's clients run in %d processes of their own (quiver-bench load-clients), each with its share of both protocols, "+
			"as clients on machines of their own share no Go scheduler; the idle clients run in the bench's.", cfg.ClientProcs)
		waiters = "the client processes' goroutines"
	}
	lv := byLevel(out.levels)
	idle := byLevel(out.idle)

	tp := &report.Table{
		Title: "Load: throughput per level",
		Note:  note,
		Columns: []string{"clients", "Flight", "MySQL", "login s", "point/s", "aggregate/s", "fetch/s", "fetch rows/s",
			"rejected", "errors", "RSS logged in MB", "peak RSS MB"},
	}
	lat := &report.Table{
		Title: "Load: small-query latency (point + aggregate) against idle, same run",
		Note: fmt.Sprintf("Idle: one client, small queries only, for %v before each level (Flight and MySQL in the load's proportion). "+
			"Small queries still running when a window ends count with the time they had taken (cut short). "+
			"Run wait: how long %s waited to run, once runnable, over the loaded window (Go's /sched/latencies); "+
			"a small query's reply waits in that queue, several times per query, behind the other clients' decoding.", cfg.Idle, waiters),
		Columns: []string{"clients", "small queries", "cut short", "small p50 ms", "small p99 ms", "idle p50 ms", "idle p99 ms", "p99 / idle p99",
			"run wait p50 ms", "run wait p99 ms"},
	}
	byProto := &report.Table{
		Title: "Load: small-query latency by protocol, against the same protocol idle",
		Note: "The same windows' small queries, split by the clients' protocol. A MySQL client's 1M-row fetch takes several times " +
			"the CPU of a Flight client's, on the server (rows as text) and in the bench's own process (parsing them), which the small queries of every client share.",
		Columns: []string{"clients", "Flight p50 ms", "Flight p99 ms", "idle Flight p99 ms", "Flight p99 / idle", "MySQL p50 ms", "MySQL p99 ms", "idle MySQL p99 ms", "MySQL p99 / idle"},
	}
	fetches := &report.Table{
		Title: "Load: fetch time by protocol",
		Note: fmt.Sprintf("How long each client's %d-row fetch took, from the request to its last row read, in the same windows; "+
			"fetches still running when a window ends count with the time they had taken (cut short), killed ones not at all.", cfg.FetchRows),
		Columns: []string{"clients", "Flight fetches", "Flight p50 s", "Flight p99 s", "MySQL fetches", "MySQL p50 s", "MySQL p99 s", "cut short"},
	}
	probes := &report.Table{
		Title: "Load: point lookups from a process of its own (quiver-bench probe), against the same probe idle",
		Note: "One Flight SQL client, one point lookup at a time, in a process beside the bench's: it shares the cores with the load " +
			"but not the bench's Go runtime, whose scheduler runs the load's clients' decoding ahead of a small query's reply.",
		Columns: []string{"clients", "probe queries", "failed", "probe p50 ms", "probe p99 ms", "idle p50 ms", "idle p99 ms", "p99 / idle p99"},
	}
	cores := &report.Table{
		Title: "Load: where the machine's cores went over each loaded window",
		Note: "CPU-seconds per second of the measured window, from /proc/stat and each process's /proc/PID/stat: the server, the bench's own clients, " +
			"the probe process, every other process on the machine, and time the hypervisor gave these virtual CPUs to other machines while they had work (stolen). " +
			"Stolen time or other processes take cores from both the load and its measurement, so a ratio from such a window says less about quiver. " +
			"The last column is the stolen share of the idle window before the level, whose p99 the ratios divide by.",
		Columns: []string{"clients", "CPUs", "server", "bench clients", "probe", "other processes", "stolen", "unused", "stolen while idle"},
	}
	var probeFoot []string
	for i, n := range cfg.Clients {
		ws, is := lv[i], idle[i]
		first := ws[0]
		var rejected, other int
		var peak, connected int64
		for _, w := range ws {
			rejected += w.rejected
			other += w.other
			peak = max(peak, w.peakRSS)
			connected = max(connected, w.rssConnected)
		}
		rate := func(k opKind) []float64 { return mapF(ws, func(w *windowResult) float64 { return w.rate(w.ops[k]) }) }
		rows := mapF(ws, func(w *windowResult) float64 { return w.rate(w.fetchRows) })
		tp.Rows = append(tp.Rows, []string{fmt.Sprint(n), fmt.Sprint(first.flight), fmt.Sprint(first.mysql),
			fmt.Sprintf("%.1f", report.Median(mapF(ws, func(w *windowResult) float64 { return w.ramp.Seconds() }))),
			fmtMedRate(rate(opPoint)), fmtMedRate(rate(opAgg)), fmtMedRate(rate(opFetch)), fmtMedRate(rows),
			fmt.Sprint(rejected), fmt.Sprint(other), fmt.Sprint(connected >> 20), fmt.Sprint(peak >> 20)})
		tp.Bars = append(tp.Bars, report.Bar{Group: fmt.Sprintf("%d clients", n), Series: "fetch", Value: report.Median(rows) / 1e6, Unit: "M rows/s fetched (all clients)"})

		p50 := mapF(ws, func(w *windowResult) float64 { return msF(w.p50) })
		p99 := mapF(ws, func(w *windowResult) float64 { return msF(w.p99) })
		ip50 := mapF(is, func(w *windowResult) float64 { return msF(w.p50) })
		ip99 := mapF(is, func(w *windowResult) float64 { return msF(w.p99) })
		ratio := make([]float64, len(ws))
		for j := range ws {
			ratio[j] = safeDiv(p99[j], ip99[j])
		}
		var smallN, cut int
		for _, w := range ws {
			smallN += len(w.small)
			cut += w.cutShort
		}
		s50 := mapF(ws, func(w *windowResult) float64 { return msF(w.sched50) })
		s99 := mapF(ws, func(w *windowResult) float64 { return msF(w.sched99) })
		lat.Rows = append(lat.Rows, []string{fmt.Sprint(n), fmt.Sprint(smallN), fmt.Sprint(cut), fmtMedMS(p50), fmtMedMS(p99), fmtMedMS(ip50), fmtMedMS(ip99), fmtMedX(ratio),
			fmtMedMS(s50), fmtMedMS(s99)})
		row := []string{fmt.Sprint(n)}
		for _, proto := range []string{protoFlight, protoMySQL} {
			pick := func(w *windowResult, p99 bool) float64 {
				l := w.byProto[proto]
				switch {
				case l == nil || len(l.d) == 0:
					return 0
				case p99:
					return msF(l.p99)
				}
				return msF(l.p50)
			}
			lp50 := mapF(ws, func(w *windowResult) float64 { return pick(w, false) })
			lp99 := mapF(ws, func(w *windowResult) float64 { return pick(w, true) })
			ilp99 := mapF(is, func(w *windowResult) float64 { return pick(w, true) })
			x := make([]float64, len(ws))
			for j := range ws {
				x[j] = safeDiv(lp99[j], ilp99[j])
			}
			if report.Median(lp99) == 0 {
				row = append(row, "-", "-", "-", "-")
				continue
			}
			row = append(row, fmtMedMS(lp50), fmtMedMS(lp99), fmtMedMS(ilp99), fmtMedX(x))
		}
		byProto.Rows = append(byProto.Rows, row)
		if row := coresRow(n, ws, is); row != nil {
			cores.Rows = append(cores.Rows, row)
		}
		row = []string{fmt.Sprint(n)}
		cutF := 0
		for _, w := range ws {
			cutF += w.fetchCut
		}
		for _, proto := range []string{protoFlight, protoMySQL} {
			count := 0
			for _, w := range ws {
				if l := w.fetchByProto[proto]; l != nil {
					count += len(l.d)
				}
			}
			if count == 0 {
				row = append(row, "0", "-", "-")
				continue
			}
			sec := func(p99 bool) []float64 {
				return mapF(ws, func(w *windowResult) float64 {
					l := w.fetchByProto[proto]
					switch {
					case l == nil:
						return 0
					case p99:
						return l.p99.Seconds()
					}
					return l.p50.Seconds()
				})
			}
			row = append(row, fmt.Sprint(count), fmtMedMS(sec(false)), fmtMedMS(sec(true)))
		}
		fetches.Rows = append(fetches.Rows, append(row, fmt.Sprint(cutF)))
		if pr, ok := probeFigures(ws, is); ok {
			probes.Rows = append(probes.Rows, append([]string{fmt.Sprint(n)}, pr.cells()...))
			if pr.first != "" {
				probeFoot = append(probeFoot, fmt.Sprintf("%d clients, first probe failure: %s", n, pr.first))
			}
		}
		group := fmt.Sprintf("%d clients", n)
		lat.Bars = append(lat.Bars,
			report.Bar{Group: group, Series: "p99 under load", Value: report.Median(p99), Unit: "ms (small-query p99)"},
			report.Bar{Group: group, Series: "idle p99", Value: report.Median(ip99), Unit: "ms (small-query p99)"})

		cas := fmt.Sprintf("%d clients", n)
		r.Add("load", cas, report.Stat{Name: "fetch", Samples: mapS(ws, func(w *windowResult) report.Sample {
			return report.Sample{Dur: w.dur, Rows: w.fetchRows, Bytes: w.fetchB}
		})})
		r.Add("load", cas, report.Stat{Name: "small p50", Samples: mapS(ws, func(w *windowResult) report.Sample { return report.Sample{Dur: w.p50} })})
		r.Add("load", cas, report.Stat{Name: "small p99", Samples: mapS(ws, func(w *windowResult) report.Sample { return report.Sample{Dur: w.p99} })})
		r.Add("load", cas, report.Stat{Name: "idle p99", Samples: mapS(is, func(w *windowResult) report.Sample { return report.Sample{Dur: w.p99} })})
		r.Add("load", cas, report.Stat{Name: "run wait p99", Samples: mapS(ws, func(w *windowResult) report.Sample { return report.Sample{Dur: w.sched99} })})
	}
	var foot []string
	if x, ok := fetchRatio(cfg.Clients, lv, 300, 64); ok {
		foot = append(foot, fmt.Sprintf("Fetch rows/s at 300 clients over at 64: %s (target ≥ %.1f×).", report.FmtX(x), targetFetchRatio))
	}
	clientsRSS := "the bench process's own peak RSS (its clients)"
	if out.clientRSS > 0 {
		clientsRSS = "the largest peak RSS of the bench process and its client processes"
	}
	foot = append(foot, fmt.Sprintf("Server VmHWM at the end: %d MB (every level, idle windows included); %s: %d MB.",
		out.hwm>>20, clientsRSS, out.benchRSS>>20))
	if s := errorSummary(out.levels); s != "" {
		foot = append(foot, "Errors by class: "+s)
	}
	tp.Footer = strings.Join(foot, "\n")
	r.Tables = append(r.Tables, tp, lat, byProto, fetches)
	if len(cores.Rows) > 0 {
		r.Tables = append(r.Tables, cores)
	}
	if len(probes.Rows) > 0 {
		probes.Footer = strings.Join(probeFoot, "\n")
		r.Tables = append(r.Tables, probes)
	}
	if t := chaosTable(cfg, lv, out.writes); t != nil {
		r.Tables = append(r.Tables, t)
	}
	if out.abort != nil {
		r.Tables = append(r.Tables, abortTable(cfg, out.abort))
	}
	r.Tables = append(r.Tables, targetsTable(cfg, lv, idle, out))
	return r
}

// coresRow is a level's cores table row: the median over its rounds of
// each share, or nil when no window's counters could be read.
func coresRow(clients int, ws, idle []*windowResult) []string {
	var loaded, quiet []cpuShare
	for _, w := range ws {
		if w.cpuOK {
			loaded = append(loaded, w.cpu)
		}
	}
	for _, w := range idle {
		if w.cpuOK {
			quiet = append(quiet, w.cpu)
		}
	}
	if len(loaded) == 0 {
		return nil
	}
	med := func(cs []cpuShare, f func(cpuShare) float64) float64 {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = f(c)
		}
		return report.Median(v)
	}
	m := cpuShare{serverKnown: true, probeMeasured: true}
	for _, c := range loaded {
		m.serverKnown = m.serverKnown && c.serverKnown
		m.probeMeasured = m.probeMeasured && c.probeMeasured
	}
	m.cores = med(loaded, func(c cpuShare) float64 { return c.cores })
	m.server = med(loaded, func(c cpuShare) float64 { return c.server })
	m.bench = med(loaded, func(c cpuShare) float64 { return c.bench })
	m.probe = med(loaded, func(c cpuShare) float64 { return c.probe })
	m.other = med(loaded, func(c cpuShare) float64 { return c.other })
	m.steal = med(loaded, func(c cpuShare) float64 { return c.steal })
	m.unused = med(loaded, func(c cpuShare) float64 { return c.unused })
	idleSteal := "-"
	if len(quiet) > 0 {
		idleSteal = fmt.Sprintf("%.2f", med(quiet, func(c cpuShare) float64 { return c.steal }))
	}
	row := append([]string{fmt.Sprint(clients), fmt.Sprintf("%.1f", m.cores)}, m.cells()...)
	return append(row, idleSteal)
}

// byLevel regroups rounds[round][level] as [level][round].
func byLevel(rounds [][]*windowResult) [][]*windowResult {
	if len(rounds) == 0 {
		return nil
	}
	out := make([][]*windowResult, len(rounds[0]))
	for _, round := range rounds {
		for i, w := range round {
			out[i] = append(out[i], w)
		}
	}
	return out
}

// fetchRatio is the median fetch rate at clients a over at clients b,
// when both levels ran.
func fetchRatio(levels []int, lv [][]*windowResult, a, b int) (float64, bool) {
	ia, ib := slices.Index(levels, a), slices.Index(levels, b)
	if ia < 0 || ib < 0 {
		return 0, false
	}
	ra := report.Median(mapF(lv[ia], func(w *windowResult) float64 { return w.rate(w.fetchRows) }))
	rb := report.Median(mapF(lv[ib], func(w *windowResult) float64 { return w.rate(w.fetchRows) }))
	return safeDiv(ra, rb), true
}

// errorSummary lists the error classes over every level, with an example
// message of each.
func errorSummary(rounds [][]*windowResult) string {
	counts := map[string]int{}
	examples := map[string]string{}
	for _, round := range rounds {
		for _, w := range round {
			for k, v := range w.classes {
				counts[k] += v
				if examples[k] == "" {
					examples[k] = w.examples[k]
				}
			}
		}
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d (%q)", k, counts[k], examples[k]))
	}
	return strings.Join(parts, "; ")
}

func chaosTable(cfg Config, lv [][]*windowResult, wc *writeCheck) *report.Table {
	ch := cfg.Chaos
	if ch.KillEvery == 0 && ch.SlowReaders == 0 && ch.RestartAt == 0 && wc == nil {
		return nil
	}
	var note []string
	if ch.KillEvery > 0 {
		note = append(note, fmt.Sprintf("a client killed mid-fetch every %v", ch.KillEvery))
	}
	if ch.SlowReaders > 0 {
		note = append(note, fmt.Sprintf("%d slow readers at %d KB/s", ch.SlowReaders, ch.SlowRate>>10))
	}
	if ch.RestartAt > 0 {
		note = append(note, fmt.Sprintf("a restart (SIGTERM, --drain %v) %v into each level", ch.Drain, ch.RestartAt))
	}
	if len(note) == 0 {
		note = append(note, "no chaos")
	}
	t := &report.Table{
		Title:   "Load: chaos and writes",
		Note:    "Chaos: " + strings.Join(note, "; ") + ".",
		Columns: []string{"clients", "kills", "restarts", "down s", "errors during restart", "not reconnected", "writes acked"},
	}
	for i, n := range cfg.Clients {
		var kills, restarts, during, notRe, acked int
		var down time.Duration
		for _, w := range lv[i] {
			kills += w.kills
			restarts += len(w.restarts)
			for _, s := range w.restarts {
				down += s.ready.Sub(s.term)
			}
			during += w.duringRestart
			notRe += w.notReconnected
			acked += len(w.acked)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(n), fmt.Sprint(kills), fmt.Sprint(restarts), fmt.Sprintf("%.1f", down.Seconds()),
			fmt.Sprint(during), fmt.Sprint(notRe), fmt.Sprint(acked)})
	}
	if wc != nil {
		t.Footer = fmt.Sprintf("Writes: %d acknowledged, %d ids in the table, %d lost, %d duplicated, %d applied but not acknowledged.",
			wc.acked, wc.present, len(wc.lost), len(wc.dups), wc.unacked)
	}
	return t
}

func abortTable(cfg Config, a *abortResult) *report.Table {
	t := &report.Table{
		Title: fmt.Sprintf("Aborted streams: %d DoGets of %s rows per round, read to their first batch and cancelled",
			cfg.AbortStreams, report.FmtRows(cfg.AbortRows)),
		Note: fmt.Sprintf("%d at a time over as many Flight connections, which stay open for every reading; each reading after %v, "+
			"and once goroutines are back within 10%% of the baseline (at most %v more).", a.parallel, cfg.Settle, 2*cfg.Settle),
		Columns: []string{"step", "streams", "first batches", "rejected", "errors", "RSS MB", "vs baseline", "goroutines", "vs baseline", "read after s"},
	}
	steps := append([]abortSample{a.base}, a.rounds...)
	if a.late != nil {
		steps = append(steps, *a.late)
	}
	for _, s := range steps {
		t.Rows = append(t.Rows, []string{s.step, fmt.Sprint(s.streams), fmt.Sprint(s.firstBatch), fmt.Sprint(s.rejected), fmt.Sprint(s.other),
			fmt.Sprint(s.rss >> 20), fmtPctOver(pctOver(float64(s.rss), float64(a.base.rss))),
			fmt.Sprint(s.goroutines), fmtPctOver(pctOver(float64(s.goroutines), float64(a.base.goroutines))),
			fmt.Sprintf("%.1f", s.settled.Seconds())})
		t.Bars = append(t.Bars, report.Bar{Group: s.step, Series: "server RSS", Value: float64(s.rss >> 20), Unit: "MB"})
	}
	var ex []string
	for _, s := range a.rounds {
		for k, v := range s.classes {
			ex = append(ex, fmt.Sprintf("%s: %s ×%d (%q)", s.step, k, v, s.examples[k]))
		}
	}
	sort.Strings(ex)
	ex = append(ex, fmt.Sprintf("Server VmHWM at the end of the step: %d MB. The levels then run on a fresh server process.", a.hwm>>20))
	t.Footer = strings.Join(ex, "\n")
	return t
}

// targetsTable checks the targets at the largest level.
func targetsTable(cfg Config, lv, idle [][]*windowResult, out *outcome) *report.Table {
	t := &report.Table{Title: "Targets", Columns: []string{"target", "measured", "met"}}
	add := func(target, measured string, met bool) {
		t.Rows = append(t.Rows, []string{target, measured, yesNo(met)})
	}
	top := 0
	for i, n := range cfg.Clients {
		if n > cfg.Clients[top] {
			top = i
		}
	}
	n := cfg.Clients[top]
	var rejected, other int
	var peak int64
	for _, round := range out.levels {
		for _, w := range round {
			other += w.other
			peak = max(peak, w.peakRSS)
		}
	}
	for _, w := range lv[top] {
		rejected += w.rejected
	}
	add("errors other than RESOURCE_EXHAUSTED (every level)", fmt.Sprint(other), other == 0)
	t.Rows = append(t.Rows, []string{fmt.Sprintf("RESOURCE_EXHAUSTED at %d clients (reported)", n), fmt.Sprint(rejected), ""})
	add("server peak RSS < 1 GB (loaded windows)", fmt.Sprintf("%d MB", peak>>20), peak < targetRSS)
	p99 := report.Median(mapF(lv[top], func(w *windowResult) float64 { return msF(w.p99) }))
	ip99 := report.Median(mapF(idle[top], func(w *windowResult) float64 { return msF(w.p99) }))
	x := safeDiv(p99, ip99)
	add(fmt.Sprintf("small p99 ≤ %.0f× idle p99 at %d clients", targetP99Ratio, n), fmt.Sprintf("%s (%.1f / %.1f ms)", report.FmtX(x), p99, ip99), x > 0 && x <= targetP99Ratio)
	if pr, ok := probeFigures(lv[top], idle[top]); ok {
		add(fmt.Sprintf("probe p99 ≤ %.0f× idle probe p99 at %d clients", targetP99Ratio, n),
			fmt.Sprintf("%s (%.1f / %.1f ms)", report.FmtX(pr.ratio()), report.Median(pr.p99), report.Median(pr.ip99)), pr.ratio() > 0 && pr.ratio() <= targetP99Ratio)
	}
	if x, ok := fetchRatio(cfg.Clients, lv, 300, 64); ok {
		add(fmt.Sprintf("fetch rows/s at 300 ≥ %.1f× at 64", targetFetchRatio), report.FmtX(x), x >= targetFetchRatio)
	}
	if a := out.abort; a != nil && len(a.rounds) > 0 {
		last := a.rounds[len(a.rounds)-1]
		rp := pctOver(float64(last.rss), float64(a.base.rss))
		gp := pctOver(float64(last.goroutines), float64(a.base.goroutines))
		add(fmt.Sprintf("RSS within %.0f%% of baseline after %d aborted streams", targetAbortPercent, cfg.AbortStreams*len(a.rounds)),
			fmtPctOver(rp), rp <= targetAbortPercent)
		add(fmt.Sprintf("goroutines within %.0f%% of baseline after %d aborted streams", targetAbortPercent, cfg.AbortStreams*len(a.rounds)),
			fmtPctOver(gp), gp <= targetAbortPercent)
	}
	if wc := out.writes; wc != nil {
		add("no acknowledged write lost or duplicated", fmt.Sprintf("%d lost, %d duplicated of %d", len(wc.lost), len(wc.dups), wc.acked),
			len(wc.lost) == 0 && len(wc.dups) == 0)
	}
	return t
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func mapF(ws []*windowResult, f func(*windowResult) float64) []float64 {
	out := make([]float64, len(ws))
	for i, w := range ws {
		out[i] = f(w)
	}
	return out
}

func mapS(ws []*windowResult, f func(*windowResult) report.Sample) []report.Sample {
	out := make([]report.Sample, len(ws))
	for i, w := range ws {
		out[i] = f(w)
	}
	return out
}

func msF(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func pctOver(v, base float64) float64 { return 100 * safeDiv(v-base, base) }

func fmtPctOver(p float64) string { return fmt.Sprintf("%+.0f%%", p) }

// spreadF is the min–max range of vs as a percentage of their median.
func spreadF(vs []float64) float64 {
	if len(vs) < 2 {
		return 0
	}
	return 100 * safeDiv(slices.Max(vs)-slices.Min(vs), report.Median(vs))
}

// withSpread appends the spread over rounds to a median, when there was
// more than one round.
func withSpread(s string, vs []float64) string {
	if len(vs) < 2 {
		return s
	}
	return fmt.Sprintf("%s ±%.0f%%", s, spreadF(vs))
}

func fmtMedRate(vs []float64) string {
	m := report.Median(vs)
	s := report.FmtRate(m)
	if m < 10 {
		s = fmt.Sprintf("%.2f", m)
	}
	return withSpread(s, vs)
}

func fmtMedMS(vs []float64) string {
	m := report.Median(vs)
	s := fmt.Sprintf("%.0f", m)
	if m < 10 {
		s = fmt.Sprintf("%.2f", m)
	} else if m < 100 {
		s = fmt.Sprintf("%.1f", m)
	}
	return withSpread(s, vs)
}

func fmtMedX(vs []float64) string { return withSpread(report.FmtX(report.Median(vs)), vs) }

// probeLevel is a level's probe figures, one per round.
type probeLevel struct {
	queries, failed      int64
	p50, p99, ip50, ip99 []float64 // ms
	// first is the first failure any of its probes saw.
	first string
}

// probeFigures gathers a level's probe figures; ok is false when a window
// ran no probe.
func probeFigures(ws, is []*windowResult) (probeLevel, bool) {
	var pl probeLevel
	for j, w := range ws {
		if w.probe == nil || j >= len(is) || is[j].probe == nil {
			return pl, false
		}
		pl.queries += w.probe.queries
		pl.failed += w.probe.failed
		for _, p := range []*probeResult{is[j].probe, w.probe} {
			if pl.first == "" && p.first != "" {
				pl.first = p.first
			}
		}
		pl.p50 = append(pl.p50, msF(w.probe.p50))
		pl.p99 = append(pl.p99, msF(w.probe.p99))
		pl.ip50 = append(pl.ip50, msF(is[j].probe.p50))
		pl.ip99 = append(pl.ip99, msF(is[j].probe.p99))
	}
	return pl, len(ws) > 0
}

// ratios are each round's p99 over its idle p99.
func (pl probeLevel) ratios() []float64 {
	x := make([]float64, len(pl.p99))
	for j := range x {
		x[j] = safeDiv(pl.p99[j], pl.ip99[j])
	}
	return x
}

func (pl probeLevel) ratio() float64 { return report.Median(pl.ratios()) }

func (pl probeLevel) cells() []string {
	return []string{fmt.Sprint(pl.queries), fmt.Sprint(pl.failed), fmtMedMS(pl.p50), fmtMedMS(pl.p99), fmtMedMS(pl.ip50), fmtMedMS(pl.ip99), fmtMedX(pl.ratios())}
}
