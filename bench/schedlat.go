package bench

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedMetric is how long goroutines of this process waited, runnable,
// before they ran. The load's clients share one process, so a small
// query's reply waits in that queue behind every other client's
// decoding; a window reports the wait beside its latencies.
const schedMetric = "/sched/latencies:seconds"

// schedHist is a snapshot of this process's schedMetric histogram.
type schedHist struct {
	counts  []uint64
	buckets []float64 // len(counts)+1 boundaries, in seconds
}

func readSched() schedHist {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return schedHist{}
	}
	h := s[0].Value.Float64Histogram()
	return schedHist{counts: append([]uint64(nil), h.Counts...), buckets: h.Buckets}
}

// since returns the q-quantile of the waits recorded between a and b (a
// taken first), as the upper bound of its bucket; 0 when none were.
func (b schedHist) since(a schedHist, q float64) time.Duration {
	if len(b.counts) == 0 || len(a.counts) != len(b.counts) {
		return 0
	}
	var total uint64
	for i := range b.counts {
		total += b.counts[i] - a.counts[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var acc uint64
	for i := range b.counts {
		acc += b.counts[i] - a.counts[i]
		if acc >= max(want, 1) {
			hi := b.buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = b.buckets[i]
			}
			return time.Duration(hi * float64(time.Second))
		}
	}
	return 0
}
