package load

import (
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/osfacts"
)

func TestCPUShare(t *testing.T) {
	t0 := time.Unix(1000, 0)
	snap := func(at time.Duration, pid int, busy, steal, total, server, self time.Duration) cpuSnap {
		return cpuSnap{at: t0.Add(at), serverPID: pid, ok: true,
			machine: osfacts.MachineCPU{Busy: busy, Steal: steal, Total: total}, server: server, self: self}
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
