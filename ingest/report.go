package ingest

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Report is the pipeline's account of a run, in the shape of the Quacfka
// report it reproduces: configuration first, then counts and rates since
// the start. Rates are per wall-clock second of the run.
type Report struct {
	NumCPU            int
	OS                string
	KafkaClients      int
	KafkaQueueCap     int // messages accepted but not yet decoded
	ProcessorRoutines int // decoders
	ArrowQueueCap     int // decoded batches waiting for an inserter
	DuckDBThresholdMB int64
	DuckDBConnections int // inserters
	NormalizerFields  int

	Start, End  time.Time
	Records     int64 // main rows committed
	NormRecords int64 // normalized rows committed
	DeadLetters int64
	Bytes       int64 // payload bytes committed
	Duration    time.Duration

	RecordsPerSecond   float64
	TotalRowsPerSecond float64
	TransferRate       float64 // bytes per second

	DuckDBFiles     int   // files rotated out
	DuckDBFilesMB   int64 // their total size
	FileAvgDuration time.Duration

	// FirstDelivery and LastCommit bound the busy part of the run: the
	// first message delivered and the last batch committed (zero until
	// then). Rates over them leave out joining the consumer group and
	// waiting for IdleExit, as a benchmark wants.
	FirstDelivery, LastCommit time.Time
}

// finish fills the duration and rates from the counts.
func (r *Report) finish(end time.Time) {
	r.End = end
	r.Duration = end.Sub(r.Start)
	if s := r.Duration.Seconds(); s > 0 {
		r.RecordsPerSecond = float64(r.Records) / s
		r.TotalRowsPerSecond = float64(r.Records+r.NormRecords) / s
		r.TransferRate = float64(r.Bytes) / s
	}
}

// Attrs returns the report as slog key-value pairs, named as in the text.
func (r Report) Attrs() []any {
	return []any{
		"records", r.Records,
		"norm_records", r.NormRecords,
		"dead_letters", r.DeadLetters,
		"data_transferred_MB", round2(float64(r.Bytes) / 1e6),
		"duration", r.Duration.Round(time.Millisecond).String(),
		"records_per_second", round2(r.RecordsPerSecond),
		"total_rows_per_second", round2(r.TotalRowsPerSecond),
		"transfer_rate_MBps", round2(r.TransferRate / 1e6),
		"duckdb_files", r.DuckDBFiles,
		"duckdb_files_MB", r.DuckDBFilesMB,
		"file_avg_duration", r.FileAvgDuration.Round(time.Millisecond).String(),
	}
}

// WriteText writes the report as aligned "key: value" lines, as the
// Quacfka report prints them.
func (r Report) WriteText(w io.Writer) error {
	lines := [][2]string{
		{"num_cpu", fmt.Sprint(r.NumCPU)},
		{"runtime_os", r.OS},
		{"kafka_clients", fmt.Sprint(r.KafkaClients)},
		{"kafka_queue_cap", fmt.Sprint(r.KafkaQueueCap)},
		{"processor_routines", fmt.Sprint(r.ProcessorRoutines)},
		{"arrow_queue_cap", fmt.Sprint(r.ArrowQueueCap)},
		{"duckdb_threshold_mb", fmt.Sprint(r.DuckDBThresholdMB)},
		{"duckdb_connections", fmt.Sprint(r.DuckDBConnections)},
		{"normalizer_fields", fmt.Sprint(r.NormalizerFields)},
		{"start_time", r.Start.UTC().Format(time.RFC3339)},
		{"end_time", r.End.UTC().Format(time.RFC3339)},
		{"records", FormatUnderscored(float64(r.Records))},
		{"norm_records", FormatUnderscored(float64(r.NormRecords))},
		{"dead_letters", FormatUnderscored(float64(r.DeadLetters))},
		{"data_transferred", humanBytes(r.Bytes)},
		{"duration", r.Duration.Round(time.Millisecond).String()},
		{"records_per_second", FormatUnderscored(r.RecordsPerSecond)},
		{"total_rows_per_second", FormatUnderscored(r.TotalRowsPerSecond)},
		{"transfer_rate", fmt.Sprintf("%.2f MB/second", r.TransferRate/1e6)},
		{"duckdb_files", fmt.Sprint(r.DuckDBFiles)},
		{"duckdb_files_MB", fmt.Sprint(r.DuckDBFilesMB)},
		{"file_avg_duration", r.FileAvgDuration.Round(time.Millisecond).String()},
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%-23s %s\n", l[0]+":", l[1])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatUnderscored formats v with two decimals and _ between thousands,
// as in 123_686_901.00, the way the Quacfka report prints its counts and
// rates.
func FormatUnderscored(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte('_')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String() + "." + frac
	}
	return b.String() + "." + frac
}

// humanBytes formats a byte count in decimal units, as in 146.53 GB.
func humanBytes(n int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	v := float64(n)
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return fmt.Sprintf("%.2f %s", v, units[i])
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
