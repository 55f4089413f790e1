// Package report holds what every benchmark suite shares: timed samples
// and their statistics, alternated contenders, the tables a suite prints,
// its JSON, and its plot. Every figure is a ratio of things measured in
// the same run: the contenders are alternated (A B A B …), and each one's
// median and spread are reported.
package report

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Sample is one timed run.
type Sample struct {
	Dur   time.Duration
	Bytes int64 // payload bytes moved
	Rows  int64
	// CPU is the process's CPU time over Dur; 0 when not measured.
	CPU time.Duration
}

// Stat summarises the samples of one contender.
type Stat struct {
	Name    string
	Samples []Sample
}

// Median is the median duration.
func (s Stat) Median() time.Duration { return s.pick(0.5) }

// Min is the fastest run.
func (s Stat) Min() time.Duration { return s.pick(0) }

// Max is the slowest run.
func (s Stat) Max() time.Duration { return s.pick(1) }

func (s Stat) pick(q float64) time.Duration {
	if len(s.Samples) == 0 {
		return 0
	}
	d := make([]time.Duration, len(s.Samples))
	for i, x := range s.Samples {
		d[i] = x.Dur
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if q == 0.5 && len(d)%2 == 0 {
		return (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return d[int(q*float64(len(d)-1)+0.5)]
}

// Cores is the median over the runs of CPU time over wall time: how many
// cores were busy on average, or 0 when CPU time was not measured.
func (s Stat) Cores() float64 {
	var c []float64
	for _, x := range s.Samples {
		if x.CPU > 0 && x.Dur > 0 {
			c = append(c, x.CPU.Seconds()/x.Dur.Seconds())
		}
	}
	return Median(c)
}

// Bytes is the payload of one run.
func (s Stat) Bytes() int64 {
	if len(s.Samples) == 0 {
		return 0
	}
	return s.Samples[0].Bytes
}

// Rows is the row count of one run.
func (s Stat) Rows() int64 {
	if len(s.Samples) == 0 {
		return 0
	}
	return s.Samples[0].Rows
}

// MBps is the median throughput in MB/s (10^6 bytes).
func (s Stat) MBps() float64 {
	m := s.Median().Seconds()
	if m == 0 {
		return 0
	}
	return float64(s.Bytes()) / 1e6 / m
}

// RowsPerSec is the median rate in rows per second.
func (s Stat) RowsPerSec() float64 {
	m := s.Median().Seconds()
	if m == 0 {
		return 0
	}
	return float64(s.Rows()) / m
}

// Spread is the min–max range as a percentage of the median.
func (s Stat) Spread() float64 {
	m := s.Median()
	if m == 0 {
		return 0
	}
	return 100 * float64(s.Max()-s.Min()) / float64(m)
}

// Contender is one thing to time.
type Contender struct {
	Name string
	Run  func() (Sample, error)
}

// Alternate runs a warm-up of each contender, then reps rounds of all of
// them in turn, and returns their stats in the order given.
func Alternate(reps int, cs ...Contender) ([]Stat, error) {
	if reps < 1 {
		reps = 1
	}
	stats := make([]Stat, len(cs))
	for i, c := range cs {
		stats[i].Name = c.Name
		if _, err := c.Run(); err != nil {
			return nil, fmt.Errorf("%s (warm-up): %w", c.Name, err)
		}
	}
	for r := 0; r < reps; r++ {
		for i, c := range cs {
			s, err := c.Run()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			stats[i].Samples = append(stats[i].Samples, s)
		}
	}
	return stats, nil
}

// Ratio is a / b of the medians' rates (b's time over a's time): how many
// times faster a is than b.
func Ratio(a, b Stat) float64 {
	if a.Median() == 0 {
		return 0
	}
	return float64(b.Median()) / float64(a.Median())
}

// Timed runs fn and returns its duration with the given payload.
func Timed(fn func() (bytes, rows int64, err error)) (Sample, error) {
	start := time.Now()
	b, r, err := fn()
	return Sample{Dur: time.Since(start), Bytes: b, Rows: r}, err
}

// Median is the middle value of v, or the mean of the two middle ones
// when there is an even number; 0 when v is empty. v is left as it is.
func Median[T int64 | float64 | time.Duration](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}
