package bench

import (
	"testing"
	"time"
)

func TestParseMachine(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want machineTimes
		ok   bool
	}{
		{"ten fields", "cpu  300 50 100 1000 20 5 5 40 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n",
			machineTimes{busy: 4600 * time.Millisecond, steal: 400 * time.Millisecond, total: 15200 * time.Millisecond}, true},
		{"old kernel, eight counters", "cpu 1 1 1 1 1 1 1 1\n",
			machineTimes{busy: 50 * time.Millisecond, steal: 10 * time.Millisecond, total: 80 * time.Millisecond}, true},
		{"too few", "cpu 1 2 3 4\n", machineTimes{}, false},
		{"per-CPU line first", "cpu0 1 2 3 4 5 6 7 8 9 10\n", machineTimes{}, false},
		{"not a number", "cpu 1 2 x 4 5 6 7 8 9 10\n", machineTimes{}, false},
		{"negative", "cpu 1 2 -3 4 5 6 7 8 9 10\n", machineTimes{}, false},
		{"empty", "", machineTimes{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseMachine([]byte(tc.in))
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("parseMachine(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseProcCPU(t *testing.T) {
	// A command name with spaces and a parenthesis, as a process may
	// name itself.
	stat := "4242 (quiver (x) serve) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 30 10 12 0 100 100000 100 1844 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	for _, tc := range []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"stat", stat, 3250 * time.Millisecond, true},
		{"no name", "4242 S 1 2", 0, false},
		{"cut short", "4242 (q) S 1 4242 4242 0 -1 4194560 1000 0 0 0", 0, false},
		{"bad utime", "4242 (q) S 1 4242 4242 0 -1 4194560 1000 0 0 0 x 75 0", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseProcCPU([]byte(tc.in))
			if ok != tc.ok || got != tc.want {
				t.Fatalf("parseProcCPU = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCPUShare(t *testing.T) {
	t0 := time.Unix(1000, 0)
	snap := func(at time.Duration, pid int, busy, steal, total, server, self time.Duration) cpuSnap {
		return cpuSnap{at: t0.Add(at), serverPID: pid, ok: true,
			machine: machineTimes{busy: busy, steal: steal, total: total}, server: server, self: self}
	}
	s := time.Second
	a := snap(0, 7, 10*s, 1*s, 40*s, 3*s, 2*s)
	for _, tc := range []struct {
		name     string
		b        cpuSnap
		probe    time.Duration
		probeRan bool
		want     cpuShare
		ok       bool
	}{
		// 10 s on two CPUs: 14 s busy (server 8, bench 4, probe 1, the
		// rest other), 2 s stolen, 4 s unused.
		{"two CPUs", snap(10*s, 7, 24*s, 3*s, 60*s, 11*s, 6*s), 1 * s, true,
			cpuShare{cores: 2, server: 0.8, bench: 0.4, probe: 0.1, other: 0.1, steal: 0.2, unused: 0.4, serverKnown: true, probeMeasured: true}, true},
		{"restarted: the server's time is not known", snap(10*s, 8, 24*s, 3*s, 60*s, 1*s, 6*s), 0, false,
			cpuShare{cores: 2, bench: 0.4, other: 1.0, steal: 0.2, unused: 0.4}, true},
		{"counters went back", snap(10*s, 7, 24*s, 3*s, 30*s, 11*s, 6*s), 0, false, cpuShare{}, false},
		{"no time passed", snap(0, 7, 24*s, 3*s, 60*s, 11*s, 6*s), 0, false, cpuShare{}, false},
		{"unreadable", cpuSnap{at: t0.Add(10 * s)}, 0, false, cpuShare{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var probe *probeResult
			if tc.probeRan {
				probe = &probeResult{cpu: tc.probe}
			}
			got, ok := tc.b.share(a, probe)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			const eps = 1e-9
			near := func(x, y float64) bool { return x-y < eps && y-x < eps }
			if !near(got.cores, tc.want.cores) || !near(got.server, tc.want.server) || !near(got.bench, tc.want.bench) ||
				!near(got.probe, tc.want.probe) || !near(got.other, tc.want.other) || !near(got.steal, tc.want.steal) ||
				!near(got.unused, tc.want.unused) || got.serverKnown != tc.want.serverKnown || got.probeMeasured != tc.want.probeMeasured {
				t.Fatalf("share = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseCPU(f *testing.F) {
	f.Add([]byte("cpu  300 50 100 1000 20 5 5 40 7 0\n"))
	f.Add([]byte("1 (a) b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, ok := parseMachine(b); ok && (m.busy+m.steal > m.total || m.busy < 0) {
			t.Fatalf("parseMachine(%q) = %+v: busy and steal exceed the total", b, m)
		}
		if d, ok := parseProcCPU(b); !ok && d != 0 {
			t.Fatalf("parseProcCPU(%q) = %v but not ok", b, d)
		}
	})
}
