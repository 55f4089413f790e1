// Package osfacts is quiver's one reader of what Linux says about the
// machine and its processes: how much memory there is and may be used
// (the machine's, or its cgroup's limit when lower), how much is
// available, a process's resident memory and CPU time, and the whole
// machine's CPU time. /proc is read through prometheus/procfs; the cgroup
// limit, which procfs does not read, is read here and only here.
//
// Where a fact cannot be read (another OS, a hidden /proc) the functions
// return an error, and callers decide whether to go on without it.
package osfacts

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// reader reads facts from a /proc and a cgroup mount point; tests point
// it at a made-up tree.
type reader struct {
	proc   procfs.FS
	cgroup string // where cgroupfs is mounted: /sys/fs/cgroup
}

var system = sync.OnceValues(func() (reader, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return reader{}, fmt.Errorf("open /proc: %w", err)
	}
	return reader{proc: fs, cgroup: "/sys/fs/cgroup"}, nil
})

// memoryLimit is read once: the machine's memory does not change while a
// process runs, and a cgroup limit changed under a running server would
// not resize the budget it already split.
var memoryLimit = sync.OnceValues(func() (int64, error) {
	r, err := system()
	if err != nil {
		return 0, err
	}
	return r.memoryLimit(os.Getpid())
})

// MemoryLimit is the memory this process may use, in bytes: the machine's
// MemTotal, or the limit of its cgroup (or of an ancestor) when that is
// lower. It is read on the first call and remembered.
func MemoryLimit() (int64, error) { return memoryLimit() }

// MemAvailable is the machine's MemAvailable in bytes: what new work can
// take without swapping.
func MemAvailable() (int64, error) {
	r, err := system()
	if err != nil {
		return 0, err
	}
	return r.memAvailable()
}

// Memory is a process's resident memory.
type Memory struct {
	// RSS is its resident set now (VmRSS), in bytes.
	RSS int64
	// Peak is the largest its resident set has been (VmHWM), in bytes.
	Peak int64
}

// ProcessMemory reads the resident memory of process pid.
func ProcessMemory(pid int) (Memory, error) {
	r, err := system()
	if err != nil {
		return Memory{}, err
	}
	return r.processMemory(pid)
}

// ProcessCPU is the CPU time, user and system, that process pid has used,
// all threads, in USER_HZ ticks (10 ms).
func ProcessCPU(pid int) (time.Duration, error) {
	r, err := system()
	if err != nil {
		return 0, err
	}
	return r.processCPU(pid)
}

// MachineCPU is the whole machine's CPU time since boot, summed over its
// CPUs (/proc/stat's first line).
type MachineCPU struct {
	// Busy is user, nice, system, irq and softirq time (guest time is
	// inside user).
	Busy time.Duration
	// Steal is time the hypervisor gave the virtual CPUs to other
	// machines while they had work.
	Steal time.Duration
	// Total adds idle and I/O wait to Busy and Steal.
	Total time.Duration
}

// ReadMachineCPU reads the machine's CPU time.
func ReadMachineCPU() (MachineCPU, error) {
	r, err := system()
	if err != nil {
		return MachineCPU{}, err
	}
	return r.machineCPU()
}

// SelfCPU is the CPU time this process has used, all threads (Go's,
// DuckDB's and any in-process broker's), to the microsecond; 0 when the
// kernel will not say.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// SelfPeakRSS is this process's peak resident set in bytes (Linux reports
// ru_maxrss in KiB); 0 when the kernel will not say.
func SelfPeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) << 10
}

func (r reader) memoryLimit(pid int) (int64, error) {
	mi, err := r.proc.Meminfo()
	if err != nil {
		return 0, fmt.Errorf("read the machine's memory: %w", err)
	}
	if mi.MemTotalBytes == nil {
		return 0, errors.New("read the machine's memory: no MemTotal in /proc/meminfo")
	}
	total := int64(*mi.MemTotalBytes)
	if lim, ok := r.cgroupLimit(pid); ok && lim < total {
		total = lim
	}
	return total, nil
}

// cgroupLimit is the lowest memory limit set on process pid's cgroup or
// any ancestor of it that is visible under r.cgroup: memory.max in the
// unified (v2) hierarchy, else memory.limit_in_bytes in v1's memory
// controller. ok is false when there is none.
func (r reader) cgroupLimit(pid int) (limit int64, ok bool) {
	p, err := r.proc.Proc(pid)
	if err != nil {
		return 0, false
	}
	groups, err := p.Cgroups()
	if err != nil {
		return 0, false
	}
	for _, g := range groups {
		if g.HierarchyID == 0 {
			if limit, ok = lowestLimit(r.cgroup, g.Path, "memory.max"); ok {
				return limit, true
			}
		}
	}
	for _, g := range groups {
		for _, c := range g.Controllers {
			if c == "memory" {
				return lowestLimit(filepath.Join(r.cgroup, "memory"), g.Path, "memory.limit_in_bytes")
			}
		}
	}
	return 0, false
}

// lowestLimit reads file in dir/path and in each of its parents up to
// dir, and returns the lowest number found. "max", and v1's "no limit"
// (a number near 2^63), are no limit. A container that sees its own
// cgroup at the mount's root finds the limit there.
func lowestLimit(dir, path, file string) (limit int64, ok bool) {
	path = filepath.Clean("/" + path)
	for {
		if n, found := readLimit(filepath.Join(dir, path, file)); found && (!ok || n < limit) {
			limit, ok = n, true
		}
		if path == "/" {
			return limit, ok
		}
		path = filepath.Dir(path)
	}
}

func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= math.MaxInt64/2 {
		return 0, false
	}
	return n, true
}

func (r reader) memAvailable() (int64, error) {
	mi, err := r.proc.Meminfo()
	if err != nil {
		return 0, fmt.Errorf("read available memory: %w", err)
	}
	if mi.MemAvailableBytes == nil {
		return 0, errors.New("read available memory: no MemAvailable in /proc/meminfo")
	}
	return int64(*mi.MemAvailableBytes), nil
}

func (r reader) processMemory(pid int) (Memory, error) {
	p, err := r.proc.Proc(pid)
	if err != nil {
		return Memory{}, fmt.Errorf("read process %d's memory: %w", pid, err)
	}
	st, err := p.NewStatus()
	if err != nil {
		return Memory{}, fmt.Errorf("read process %d's memory: %w", pid, err)
	}
	return Memory{RSS: int64(st.VmRSS), Peak: int64(st.VmHWM)}, nil
}

func (r reader) processCPU(pid int) (time.Duration, error) {
	p, err := r.proc.Proc(pid)
	if err != nil {
		return 0, fmt.Errorf("read process %d's CPU time: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("read process %d's CPU time: %w", pid, err)
	}
	return seconds(st.CPUTime()), nil
}

func (r reader) machineCPU() (MachineCPU, error) {
	st, err := r.proc.Stat()
	if err != nil {
		return MachineCPU{}, fmt.Errorf("read the machine's CPU time: %w", err)
	}
	c := st.CPUTotal
	m := MachineCPU{
		Busy:  seconds(c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ),
		Steal: seconds(c.Steal),
	}
	m.Total = m.Busy + m.Steal + seconds(c.Idle+c.Iowait)
	return m, nil
}

// seconds turns procfs's float seconds into a Duration, rounded to the
// nanosecond so that whole ticks stay whole.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
