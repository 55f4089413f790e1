// Package scrape reads Prometheus metrics the one way quiver's harnesses
// and tests do: a process's /metrics page over HTTP, parsed by
// prometheus/common's expfmt, or the families a registry gathers; and a
// sample's value out of either, by name and labels.
package scrape

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed exposition, by metric name.
type Families map[string]*dto.MetricFamily

// Page fetches the text exposition at url (http://HOST:PORT/metrics) and
// parses it.
func Page(ctx context.Context, url string) (Families, error) {
	return PageAs(ctx, url, "", "")
}

// PageAs is Page logged in as user with Basic credentials, as a quiver
// server with users asks on its HTTP port; no user sends none.
func PageAs(ctx context.Context, url, user, password string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read metrics: %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %s: %w", url, err)
	}
	return fams, nil
}

// Gathered indexes what a registry gathered by name.
func Gathered(mfs []*dto.MetricFamily) Families {
	f := make(Families, len(mfs))
	for _, mf := range mfs {
		f[mf.GetName()] = mf
	}
	return f
}

// Value sums the samples of the counter, gauge or untyped metric name
// whose labels include every name and value of labels (nil matches every
// sample). ok is false when no sample matches, and for a histogram or
// summary, which have no single value to sum.
func (f Families) Value(name string, labels map[string]string) (v float64, ok bool) {
	mf := f[name]
	if mf == nil {
		return 0, false
	}
	switch mf.GetType() {
	case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
	default:
		return 0, false
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
		v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return v, ok
}

// Sums is each counter, gauge and untyped family's samples summed, by
// name; for an unlabelled metric that is its value.
func (f Families) Sums() map[string]float64 {
	out := make(map[string]float64, len(f))
	for name := range f {
		if v, ok := f.Value(name, nil); ok {
			out[name] = v
		}
	}
	return out
}
