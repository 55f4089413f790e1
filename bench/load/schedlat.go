package load

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
	return b.delta(a).quantile(q)
}

// delta is what was recorded between a and b (a taken first); empty when
// either could not be read.
func (b schedHist) delta(a schedHist) schedHist {
	if len(b.counts) == 0 || len(a.counts) != len(b.counts) {
		return schedHist{}
	}
	d := schedHist{counts: make([]uint64, len(b.counts)), buckets: b.buckets}
	for i := range b.counts {
		d.counts[i] = b.counts[i] - a.counts[i]
	}
	return d
}

// add adds counts, recorded against h's buckets, to h.
func (h *schedHist) add(counts []uint64) bool {
	if len(counts) != len(h.counts) {
		return false
	}
	for i, n := range counts {
		h.counts[i] += n
	}
	return true
}

// quantile is the q-quantile of the waits in h, as the upper bound of its
// bucket; 0 when none were recorded.
func (h schedHist) quantile(q float64) time.Duration {
	var total uint64
	for _, n := range h.counts {
		total += n
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var acc uint64
	for i, n := range h.counts {
		acc += n
		if acc >= max(want, 1) {
			hi := h.buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = h.buckets[i]
			}
			return time.Duration(hi * float64(time.Second))
		}
	}
	return 0
}
