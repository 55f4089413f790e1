package report

import (
	"fmt"
	"time"
)

// Millis is d in milliseconds, to the microsecond.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// FmtMS is a cell of s's median in milliseconds and its spread: "812 ±3%".
func FmtMS(s Stat) string {
	return fmt.Sprintf("%.0f ±%.0f%%", Millis(s.Median()), s.Spread())
}

// FmtMBps is a cell of s's median throughput in MB/s.
func FmtMBps(s Stat) string { return fmt.Sprintf("%.0f", s.MBps()) }

// FmtRate is a cell of a rate per second: 1.23M, 456k or 789.
func FmtRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// FmtX is a cell of a ratio: "1.87×".
func FmtX(v float64) string { return fmt.Sprintf("%.2f×", v) }

// FmtRows is a row count as the suites' flags take it: 10M, 500k or 1234.
func FmtRows(n int64) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return fmt.Sprint(n)
}
