package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quiverdata/quiver/internal/scrape"
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
	return scrape.Gathered(mfs).Value(name, labels)
}
