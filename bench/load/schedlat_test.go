package load

import (
	"math"
	"testing"
	"time"
)

func TestSchedHistSince(t *testing.T) {
	buckets := []float64{0, 0.001, 0.010, 0.100, math.Inf(1)}
	a := schedHist{counts: []uint64{5, 5, 5, 5}, buckets: buckets}
	for _, tt := range []struct {
		name  string
		after []uint64
		q     float64
		want  time.Duration
	}{
		{"nothing new", []uint64{5, 5, 5, 5}, 0.5, 0},
		{"all under 1ms", []uint64{105, 5, 5, 5}, 0.99, time.Millisecond},
		{"median in the second bucket", []uint64{45, 65, 5, 5}, 0.5, 10 * time.Millisecond},
		{"p99 in the third", []uint64{55, 5, 55, 5}, 0.99, 100 * time.Millisecond},
		{"the open last bucket reports its lower bound", []uint64{5, 5, 5, 15}, 0.5, 100 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := schedHist{counts: tt.after, buckets: buckets}
			if got := b.since(a, tt.q); got != tt.want {
				t.Errorf("since(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
	if got := (schedHist{}).since(a, 0.5); got != 0 {
		t.Errorf("empty snapshot: got %v", got)
	}
	if got := readSched(); len(got.counts) == 0 || len(got.buckets) != len(got.counts)+1 {
		t.Errorf("readSched: %d counts, %d buckets", len(got.counts), len(got.buckets))
	}
}

// TestSchedHistMerge checks that run waits from several client processes
// add up bucket by bucket before their quantiles are taken, and that
// counts of another shape are refused.
func TestSchedHistMerge(t *testing.T) {
	buckets := []float64{0, 0.001, 0.010, 0.100, math.Inf(1)}
	zero := schedHist{counts: []uint64{7, 7, 7, 7}, buckets: buckets}
	sum := zero.delta(zero)
	if len(sum.counts) != 4 || sum.quantile(0.5) != 0 {
		t.Fatalf("empty delta %+v: want four zero counts", sum)
	}
	// One process all fast, one with a slow tail: merged, the p99 is the
	// slow one's bucket and the median the fast one's.
	for _, c := range [][]uint64{{99, 0, 0, 0}, {90, 0, 0, 10}} {
		if !sum.add(c) {
			t.Fatalf("add(%v) refused", c)
		}
	}
	if got, want := sum.quantile(0.5), time.Millisecond; got != want {
		t.Errorf("merged p50 %v, want %v", got, want)
	}
	if got, want := sum.quantile(0.99), 100*time.Millisecond; got != want {
		t.Errorf("merged p99 %v, want %v", got, want)
	}
	if sum.add([]uint64{1, 2}) {
		t.Error("counts of another shape were added")
	}
}
