package bench

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
