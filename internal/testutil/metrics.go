package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric sums the series of the named counter or gauge in this process's
// default Prometheus registry whose labels include every name and value
// of labels (nil matches every series). ok is false when none matches.
func Metric(t testing.TB, name string, labels map[string]string) (v float64, ok bool) {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if want, in := labels[l.GetName()]; in && want == l.GetValue() {
					matched++
				}
			}
			if matched < len(labels) {
				continue
			}
			ok = true
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return v, ok
}
