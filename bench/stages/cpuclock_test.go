package stages

import (
	"testing"
	"time"
)

func TestCPUClock_Between(t *testing.T) {
	t0 := time.Unix(100, 0)
	c := &cpuClock{smp: []cpuSample{
		{at: t0, cpu: 10 * time.Millisecond},
		{at: t0.Add(10 * time.Millisecond), cpu: 30 * time.Millisecond},
		{at: t0.Add(20 * time.Millisecond), cpu: 30 * time.Millisecond},
		{at: t0.Add(30 * time.Millisecond), cpu: 50 * time.Millisecond},
	}}
	for _, tc := range []struct {
		name   string
		t0, t1 time.Duration
		want   time.Duration
	}{
		{"on samples", 0, 30 * time.Millisecond, 40 * time.Millisecond},
		{"interpolated ends", 5 * time.Millisecond, 25 * time.Millisecond, 20 * time.Millisecond},
		{"idle stretch", 10 * time.Millisecond, 20 * time.Millisecond, 0},
		{"before the first sample", -time.Millisecond, 10 * time.Millisecond, 0},
		{"after the last sample", 0, 31 * time.Millisecond, 0},
		{"reversed", 20 * time.Millisecond, 10 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.between(t0.Add(tc.t0), t0.Add(tc.t1)); got != tc.want {
				t.Fatalf("between = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCPUClock_Measures checks the clock against a busy loop: a window in
// which a goroutine spun for 100 ms of CPU shows at least a quarter of
// it, and a sleeping window far less.
func TestCPUClock_Measures(t *testing.T) {
	c := startCPUClock()
	start := time.Now()
	// Spin until the process has used 100 ms of CPU, not for 100 ms of
	// wall time: on a loaded machine a spin of 100 ms may get a fifth
	// of a core. The deadline bounds the wait if the CPU time never
	// moves.
	cpu0 := processCPU()
	for processCPU()-cpu0 < 100*time.Millisecond && time.Since(start) < 20*time.Second {
	}
	busyEnd := time.Now()
	time.Sleep(100 * time.Millisecond)
	idleEnd := time.Now()
	time.Sleep(2 * cpuSampleEvery)
	c.Stop()
	busy := c.between(start, busyEnd)
	idle := c.between(busyEnd, idleEnd)
	if busy < 25*time.Millisecond {
		t.Errorf("a spin of 100 ms of CPU measured %v", busy)
	}
	if idle >= busy/2 {
		t.Errorf("a 100 ms sleep measured %v of CPU, the spin %v", idle, busy)
	}
	c.Stop() // a second Stop is harmless
}
