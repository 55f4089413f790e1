package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/quiverdata/quiver/auth"
)

type sample struct {
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
	// Count is a histogram's or summary's count of observations, whose
	// sum Value is.
	Count *uint64 `json:"count,omitempty"`
}

type liveQuery struct {
	ID       string  `json:"id"`
	Endpoint string  `json:"endpoint"`
	User     string  `json:"user"`
	SQL      string  `json:"sql"`
	Lane     string  `json:"lane"`
	State    string  `json:"state"`
	Seconds  float64 `json:"seconds"`
}

type admission struct {
	Running    int `json:"running"`
	Open       int `json:"open"`
	Queued     int `json:"queued"`
	MaxRunning int `json:"max_running"`
	MaxOpen    int `json:"max_open"`
}

type liveSnapshot struct {
	Kind      string              `json:"kind"`
	Time      int64               `json:"time"`
	Metrics   map[string][]sample `json:"metrics"`
	Queries   []liveQuery         `json:"queries"`
	Admission *admission          `json:"admission"`
	Ingest    any                 `json:"ingest,omitempty"`
	Pipelines any                 `json:"pipelines,omitempty"`
}

// liveMetrics are the metrics /api/live passes on besides quiver's own.
var liveMetrics = map[string]bool{
	"process_resident_memory_bytes": true,
	"go_memstats_heap_inuse_bytes":  true,
	"go_goroutines":                 true,
	"process_cpu_seconds_total":     true,
}

// maxSQLShown bounds the SQL text of a listed query.
const maxSQLShown = 2000

// handleLive answers one snapshot of what the process is doing: its
// metrics (the page turns counters into rates), the statements running
// and queued, and, for quiver ingest, its ingest view. A non-admin sees
// only their own statements' text.
func (c *Console) handleLive(w http.ResponseWriter, r *http.Request, u auth.User) {
	snap := liveSnapshot{Kind: c.opts.Kind, Time: time.Now().UnixMilli(), Metrics: map[string][]sample{}, Queries: []liveQuery{}}
	fams, err := c.opts.Gatherer.Gather()
	if err != nil && len(fams) == 0 {
		writeError(w, http.StatusInternalServerError, "internal", "gather metrics: "+err.Error())
		return
	}
	for _, f := range fams {
		name := f.GetName()
		if !strings.HasPrefix(name, "quiver_") && !liveMetrics[name] {
			continue
		}
		out := make([]sample, 0, len(f.GetMetric()))
		for _, m := range f.GetMetric() {
			out = append(out, sampleOf(m))
		}
		snap.Metrics[name] = out
	}
	if a := c.opts.Admission; a != nil {
		st, cfg := a.Stats(), a.Config()
		snap.Admission = &admission{Running: st.Running[0] + st.Running[1], Open: st.Open[0] + st.Open[1], Queued: st.Queued,
			MaxRunning: cfg.Running, MaxOpen: cfg.Open}
		now := time.Now()
		for _, q := range a.Queries() {
			sql := q.SQL
			if !u.Role.IsAdmin() && q.User != u.Name {
				sql = ""
			}
			if len(sql) > maxSQLShown {
				sql = sql[:maxSQLShown] + "…"
			}
			snap.Queries = append(snap.Queries, liveQuery{ID: strconv.FormatUint(q.ID, 10), Endpoint: q.Endpoint, User: q.User,
				SQL: sql, Lane: q.Lane.String(), State: q.State.String(), Seconds: now.Sub(q.Since).Seconds()})
		}
	}
	if c.opts.Live != nil {
		snap.Ingest = c.opts.Live()
	}
	if c.opts.Pipelines != nil && u.Role.IsAdmin() {
		// Offsets, lag and errors of the server's own pipelines are
		// operator facts, like other users' SQL.
		snap.Pipelines = c.opts.Pipelines()
	}
	writeJSON(w, http.StatusOK, snap)
}

func sampleOf(m *dto.Metric) sample {
	s := sample{}
	if len(m.GetLabel()) > 0 {
		s.Labels = make(map[string]string, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			s.Labels[l.GetName()] = l.GetValue()
		}
	}
	switch {
	case m.Counter != nil:
		s.Value = m.Counter.GetValue()
	case m.Gauge != nil:
		s.Value = m.Gauge.GetValue()
	case m.Untyped != nil:
		s.Value = m.Untyped.GetValue()
	case m.Histogram != nil:
		n := m.Histogram.GetSampleCount()
		s.Value, s.Count = m.Histogram.GetSampleSum(), &n
	case m.Summary != nil:
		n := m.Summary.GetSampleCount()
		s.Value, s.Count = m.Summary.GetSampleSum(), &n
	}
	return s
}
