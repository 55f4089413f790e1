package report

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{3}, 3},
		{"odd, unsorted", []float64{5, 1, 3}, 3},
		{"even: the mean of the middle two", []float64{4, 1, 2, 3}, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			if got := Median(in); got != tc.want {
				t.Errorf("Median(%v): got %v, want %v", tc.in, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("Median reordered its input: %v, was %v", in, tc.in)
				}
			}
		})
	}
	if got, want := Median([]time.Duration{3 * time.Second, time.Second}), 2*time.Second; got != want {
		t.Errorf("Median of durations: got %v, want %v", got, want)
	}
}

func TestStat_Figures(t *testing.T) {
	s := Stat{Name: "a", Samples: []Sample{
		{Dur: 300 * time.Millisecond, Bytes: 3e6, Rows: 3000},
		{Dur: 100 * time.Millisecond, Bytes: 3e6, Rows: 3000},
		{Dur: 200 * time.Millisecond, Bytes: 3e6, Rows: 3000},
	}}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"Median", s.Median(), 200 * time.Millisecond},
		{"Min", s.Min(), 100 * time.Millisecond},
		{"Max", s.Max(), 300 * time.Millisecond},
		{"MBps", s.MBps(), 15.0},
		{"RowsPerSec", s.RowsPerSec(), 15000.0},
		{"Spread", s.Spread(), 100.0},
		{"FmtMS", FmtMS(s), "200 ±100%"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestFmtRows(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{10_000_000, "10M"}, {500_000, "500k"}, {1234, "1234"}, {1_500_000, "1500k"}} {
		if got := FmtRows(tc.n); got != tc.want {
			t.Errorf("FmtRows(%d): got %q, want %q", tc.n, got, tc.want)
		}
	}
}
