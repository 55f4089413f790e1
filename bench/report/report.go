package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Table is one printed result table.
type Table struct {
	Title   string     `json:"title"`
	Note    string     `json:"note,omitempty"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Footer is printed under the rows.
	Footer string `json:"footer,omitempty"`
	// Bars are the values a plot draws: one group per row label, one bar
	// per series.
	Bars []Bar `json:"bars,omitempty"`
	// Lines are series over time a plot draws, one panel per series
	// (their units differ), when the table has no bars.
	Lines []Line `json:"lines,omitempty"`
}

// Line is one plotted series: Y against X seconds.
type Line struct {
	Name string    `json:"name"`
	Unit string    `json:"unit"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
}

// Bar is one plotted value.
type Bar struct {
	Group  string  `json:"group"`
	Series string  `json:"series"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

// Report is what a suite produces.
type Report struct {
	Suite   string    `json:"suite"`
	When    time.Time `json:"when"`
	Machine string    `json:"machine"`
	Reps    int       `json:"reps"`
	Tables  []*Table  `json:"tables"`
	// Results are the raw medians and spreads, for machines.
	Results []Result `json:"results"`
}

// Result is one contender's measurement.
type Result struct {
	Table     string  `json:"table"`
	Case      string  `json:"case"`
	Contender string  `json:"contender"`
	MedianMS  float64 `json:"median_ms"`
	MinMS     float64 `json:"min_ms"`
	MaxMS     float64 `json:"max_ms"`
	MBps      float64 `json:"mb_per_s,omitempty"`
	RowsPerS  float64 `json:"rows_per_s,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"`
	Rows      int64   `json:"rows,omitempty"`
	// Cores is the median CPU time over wall time, where it was measured.
	Cores float64 `json:"cores,omitempty"`
}

// Add records a stat under table and case.
func (r *Report) Add(table, cas string, s Stat) {
	r.Results = append(r.Results, Result{
		Table: table, Case: cas, Contender: s.Name,
		MedianMS: Millis(s.Median()), MinMS: Millis(s.Min()), MaxMS: Millis(s.Max()),
		MBps: s.MBps(), RowsPerS: s.RowsPerSec(), Bytes: s.Bytes(), Rows: s.Rows(), Cores: s.Cores(),
	})
}

// Print writes the report's tables as aligned text.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "quiver-bench %s — %s, %d alternated runs per figure (median; ± is the min–max spread)\n", r.Suite, r.Machine, r.Reps)
	for _, t := range r.Tables {
		fmt.Fprintf(w, "\n%s\n", t.Title)
		if t.Note != "" {
			fmt.Fprintf(w, "%s\n", t.Note)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(t.Columns, "\t")+"\t")
		for _, row := range t.Rows {
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		tw.Flush()
		if t.Footer != "" {
			fmt.Fprintf(w, "%s\n", t.Footer)
		}
	}
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
