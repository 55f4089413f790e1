package stages

import (
	"sort"
	"sync"
	"syscall"
	"time"
)

// cpuSampleEvery is how often a cpuClock reads the process's CPU time.
const cpuSampleEvery = 5 * time.Millisecond

// processCPU is the CPU time (user and system) this process has used, all
// threads included: Go's, DuckDB's and the in-process broker's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuSample is the process's CPU time at one moment.
type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// cpuClock records the process's CPU time every cpuSampleEvery, so that
// the CPU used in a window known only afterwards (the pipeline's first
// delivery to its last commit) can be read back.
type cpuClock struct {
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
	mu      sync.Mutex
	smp     []cpuSample
}

func startCPUClock() *cpuClock {
	c := &cpuClock{stop: make(chan struct{}), done: make(chan struct{})}
	c.read()
	go func() {
		defer close(c.done)
		tk := time.NewTicker(cpuSampleEvery)
		defer tk.Stop()
		for {
			select {
			case <-c.stop:
				c.read()
				return
			case <-tk.C:
				c.read()
			}
		}
	}()
	return c
}

func (c *cpuClock) read() {
	s := cpuSample{at: time.Now(), cpu: processCPU()}
	c.mu.Lock()
	c.smp = append(c.smp, s)
	c.mu.Unlock()
}

// Stop ends the sampling, once however often it is called; between
// works after it.
func (c *cpuClock) Stop() {
	c.stopped.Do(func() { close(c.stop) })
	<-c.done
}

// between returns the CPU time used from t0 to t1, interpolated between
// the samples around each end, or 0 when the window is outside them.
func (c *cpuClock) between(t0, t1 time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, okA := c.at(t0)
	b, okB := c.at(t1)
	if !okA || !okB || b < a {
		return 0
	}
	return b - a
}

// at interpolates the CPU time at t; the caller holds mu.
func (c *cpuClock) at(t time.Time) (time.Duration, bool) {
	i := sort.Search(len(c.smp), func(i int) bool { return !c.smp[i].at.Before(t) })
	switch {
	case i == len(c.smp):
		return 0, false
	case c.smp[i].at.Equal(t):
		return c.smp[i].cpu, true
	case i == 0:
		return 0, false
	}
	lo, hi := c.smp[i-1], c.smp[i]
	f := float64(t.Sub(lo.at)) / float64(hi.at.Sub(lo.at))
	return lo.cpu + time.Duration(f*float64(hi.cpu-lo.cpu)), true
}
