package load

import (
	"fmt"
	"time"

	"github.com/quiverdata/quiver/internal/osfacts"
)

// cpuSnap is one moment's CPU counters: the machine's, the server's (by
// its pid, so that a restart shows) and the bench process's own.
type cpuSnap struct {
	at           time.Time
	machine      osfacts.MachineCPU
	serverPID    int
	server, self time.Duration
	ok           bool
}

func takeCPU(serverPID int) cpuSnap {
	s := cpuSnap{at: time.Now(), serverPID: serverPID, self: osfacts.SelfCPU()}
	var errMachine, errServer error
	s.machine, errMachine = osfacts.ReadMachineCPU()
	s.server, errServer = osfacts.ProcessCPU(serverPID)
	s.ok = errMachine == nil && errServer == nil
	return s
}

// cpuShare is where the machine's cores went over a window, in cores
// (CPU-seconds per second of the window). The server's share is unknown
// (serverKnown false) when it restarted in the window, and other then
// holds it too.
type cpuShare struct {
	cores                      float64 // the machine's CPUs, from its counters
	server, bench, probe       float64
	other, steal, unused       float64
	serverKnown, probeMeasured bool
}

// share is what happened between a and b (a taken first); probe is what
// the probe process measured in the window, nil if none ran. ok is false
// when either snapshot is incomplete.
func (b cpuSnap) share(a cpuSnap, probe *probeResult) (cpuShare, bool) {
	wall := b.at.Sub(a.at).Seconds()
	if !a.ok || !b.ok || wall <= 0 || b.machine.Total < a.machine.Total {
		return cpuShare{}, false
	}
	per := func(d time.Duration) float64 { return d.Seconds() / wall }
	c := cpuShare{
		cores:         per(b.machine.Total - a.machine.Total),
		bench:         per(b.self - a.self),
		steal:         per(b.machine.Steal - a.machine.Steal),
		serverKnown:   a.serverPID == b.serverPID && b.server >= a.server,
		probeMeasured: probe != nil,
	}
	busy := per(b.machine.Busy - a.machine.Busy)
	if c.serverKnown {
		c.server = per(b.server - a.server)
	}
	if probe != nil {
		c.probe = per(probe.cpu)
	}
	c.other = max(busy-c.server-c.bench-c.probe, 0)
	c.unused = max(c.cores-busy-c.steal, 0)
	return c, true
}

// cells are a cpuShare's report cells: server, bench, probe, other,
// stolen, unused.
func (c cpuShare) cells() []string {
	f := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	srv, probe := f(c.server), f(c.probe)
	if !c.serverKnown {
		srv = "restarted"
	}
	if !c.probeMeasured {
		probe = "-"
	}
	return []string{srv, f(c.bench), probe, f(c.other), f(c.steal), f(c.unused)}
}
