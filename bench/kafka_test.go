package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/bench/report"
)

func TestKafkaBound(t *testing.T) {
	stat := func(ms, cpuMS int) report.Stat {
		return report.Stat{Samples: []report.Sample{{Dur: time.Duration(ms) * time.Millisecond, Rows: 1_000_000, CPU: time.Duration(cpuMS) * time.Millisecond}}}
	}
	consume := stat(200, 300)
	for _, tc := range []struct {
		name      string
		pipeline  report.Stat
		inProcess bool
		want      string
	}{
		{"broker", stat(240, 400), true, "Bound by the broker: the pipeline ran at 0.83×"},
		{"cpu with the broker in process", stat(700, 1330), true, "Bound by the CPU: the pipeline kept 1.90 of 2 cores busy (broker included) at 0.29×"},
		{"cpu of quiver alone", stat(700, 1330), false, "Bound by quiver's CPU: the pipeline kept 1.90 of 2 cores busy at 0.29×"},
		{"neither", stat(700, 700), true, "Neither the broker nor the CPU bound it: 1.00 of 2 cores busy, 0.29×"},
		{"unmeasured", stat(700, 0), true, "its CPU time was not measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kafkaBound(tc.pipeline, consume, 2, tc.inProcess)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("kafkaBound = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
