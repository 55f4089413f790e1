package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

const page = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 42
# HELP quiver_lake_files_total Files read.
# TYPE quiver_lake_files_total counter
quiver_lake_files_total{table="a"} 3
quiver_lake_files_total{table="b"} 4
# TYPE quiver_up untyped
quiver_up 1
# TYPE quiver_wait_seconds histogram
quiver_wait_seconds_bucket{le="+Inf"} 2
quiver_wait_seconds_sum 3
quiver_wait_seconds_count 2
`

func TestFamilies_Value(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(page)) }))
	t.Cleanup(srv.Close)
	f, err := Page(context.Background(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
		wantOK bool
	}{
		{"gauge", "go_goroutines", nil, 42, true},
		{"every series of a counter", "quiver_lake_files_total", nil, 7, true},
		{"one series", "quiver_lake_files_total", map[string]string{"table": "b"}, 4, true},
		{"no such series", "quiver_lake_files_total", map[string]string{"table": "c"}, 0, false},
		{"untyped", "quiver_up", nil, 1, true},
		{"absent", "go_threads", nil, 0, false},
		{"a histogram has no one value", "quiver_wait_seconds", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := f.Value(tc.metric, tc.labels)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("Value(%s, %v): got %v, %v; want %v, %v", tc.metric, tc.labels, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestFamilies_Sums(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(page)) }))
	t.Cleanup(srv.Close)
	f, err := Page(context.Background(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	got := f.Sums()
	want := map[string]float64{"go_goroutines": 42, "quiver_lake_files_total": 7, "quiver_up": 1}
	if len(got) != len(want) {
		t.Errorf("Sums: got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Sums()[%s]: got %v, want %v", k, got[k], v)
		}
	}
}

func TestPage_Errors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }},
		{"not an exposition", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("go_goroutines forty-two\n")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			if f, err := Page(context.Background(), srv.URL+"/metrics"); err == nil {
				t.Errorf("Page: got %v and no error, want an error", f)
			}
		})
	}
	if f, err := Page(context.Background(), "http://127.0.0.1:1/metrics"); err == nil {
		t.Errorf("Page of a closed port: got %v and no error, want an error", f)
	}
}

func TestGathered(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quiver_test_total"}, []string{"kind"})
	reg.MustRegister(c)
	c.WithLabelValues("x").Add(2)
	c.WithLabelValues("y").Add(5)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := Gathered(mfs).Value("quiver_test_total", map[string]string{"kind": "y"}); got != 5 || !ok {
		t.Errorf("Value: got %v, %v; want 5, true", got, ok)
	}
}
