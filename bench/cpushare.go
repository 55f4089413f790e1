package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tick is Linux's USER_HZ, the unit of /proc/stat and /proc/PID/stat
// times: 100 a second on every architecture Go supports.
const tick = 10 * time.Millisecond

// machineTimes is the whole machine's CPU time from /proc/stat's first
// line: busy is user, nice, system, irq and softirq (guest time is inside
// user); steal is time the hypervisor gave the virtual CPUs to other
// machines while they had work; total adds idle and I/O wait.
type machineTimes struct{ busy, steal, total time.Duration }

// readMachine reads /proc/stat; ok is false where there is none.
func readMachine() (machineTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTimes{}, false
	}
	return parseMachine(b)
}

func parseMachine(b []byte) (m machineTimes, ok bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return m, false
	}
	// user nice system idle iowait irq softirq steal
	var v [8]time.Duration
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return m, false
		}
		v[i] = time.Duration(n) * tick
		m.total += v[i]
	}
	m.busy = v[0] + v[1] + v[2] + v[5] + v[6]
	m.steal = v[7]
	return m, true
}

// processCPU is the CPU time this process has used, all threads: Go's,
// DuckDB's and the in-process broker's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the CPU time the whole machine's CPUs were not idle, or
// taken by the hypervisor, from /proc/stat; 0 when unreadable.
func machineCPU() time.Duration {
	m, _ := readMachine()
	return m.busy + m.steal
}

// pidCPU is the CPU time (user and system) of process pid from /proc, or
// 0 when pid is 0 or unreadable (there is no /proc/0).
func pidCPU(pid int) time.Duration {
	d, _ := procCPU(pid)
	return d
}

// procCPU is pidCPU that tells an unreadable process apart.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseProcCPU(b)
}

// parseProcCPU reads utime and stime from a /proc/PID/stat: fields 14
// and 15, counted after the command name, which is in parentheses and may
// hold spaces and parentheses itself.
func parseProcCPU(b []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so utime and stime are f[11] and f[12].
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || u < 0 || s < 0 {
		return 0, false
	}
	return time.Duration(u+s) * tick, true
}

// cpuSnap is one moment's CPU counters: the machine's, the server's (by
// its pid, so that a restart shows) and the bench process's own.
type cpuSnap struct {
	at           time.Time
	machine      machineTimes
	serverPID    int
	server, self time.Duration
	ok           bool
}

func takeCPU(serverPID int) cpuSnap {
	s := cpuSnap{at: time.Now(), serverPID: serverPID, self: processCPU()}
	var machineOK, serverOK bool
	s.machine, machineOK = readMachine()
	s.server, serverOK = procCPU(serverPID)
	s.ok = machineOK && serverOK
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
	if !a.ok || !b.ok || wall <= 0 || b.machine.total < a.machine.total {
		return cpuShare{}, false
	}
	per := func(d time.Duration) float64 { return d.Seconds() / wall }
	c := cpuShare{
		cores:         per(b.machine.total - a.machine.total),
		bench:         per(b.self - a.self),
		steal:         per(b.machine.steal - a.machine.steal),
		serverKnown:   a.serverPID == b.serverPID && b.server >= a.server,
		probeMeasured: probe != nil,
	}
	busy := per(b.machine.busy - a.machine.busy)
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
