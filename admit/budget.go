package admit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/quiverdata/quiver/internal/osfacts"
)

// PerResult is the Go memory an open result may hold: the batch being
// converted, the two queued behind it, and the one gRPC or the MySQL
// writer is sending, at 64K rows each, with room for wide rows.
const PerResult = 16 << 20

// Budget is a server-wide memory budget split among its users.
type Budget struct {
	// Total is the whole budget, in bytes.
	Total int64
	// DuckDB is DuckDB's memory_limit: its buffer manager, hash tables,
	// sorts and caches.
	DuckDB int64
	// Go is the Go runtime's soft memory limit: result and ingest batches,
	// gRPC and MySQL buffers, everything else of quiver's own.
	Go int64
	// Open is how many results may be open at once: what the Go share
	// holds at PerResult each, keeping a third of it for connections,
	// ingest and the rest.
	Open int
	// Held is what clients may keep on the server between statements,
	// all of them together (Holds): bound parameters, prepared
	// statements, transactions, held results. It is a sixth of the Go
	// share, half of what open results leave.
	Held int64
}

// SplitBudget divides total bytes: 40% to DuckDB, 50% to Go, and 10%
// headroom for what neither counts (thread stacks, DuckDB's own
// allocations outside its buffer manager, the binary).
func SplitBudget(total int64) Budget {
	b := Budget{Total: total, DuckDB: total * 4 / 10, Go: total / 2}
	b.Open = max(8, int(b.Go*2/3/PerResult))
	b.Held = b.Go / 6
	return b
}

func (b Budget) String() string {
	return fmt.Sprintf("%s (DuckDB %s, Go %s, %d open results, %s held between statements)",
		FormatBytes(b.Total), FormatBytes(b.DuckDB), FormatBytes(b.Go), b.Open, FormatBytes(b.Held))
}

// DefaultBudget is half of the memory this process may use: the
// machine's, or its cgroup's limit when lower.
func DefaultBudget() (int64, error) {
	total, err := osfacts.MemoryLimit()
	if err != nil {
		return 0, err
	}
	return total / 2, nil
}

// ParseBytes reads a size as DuckDB's memory_limit does: 512MB or 1.5GB
// in powers of 1000, 2GiB in powers of 1024, or a number of bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := float64(1)
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*mult < 1<<20 {
		return 0, fmt.Errorf("size %q: want at least 1MiB, as a number with a unit (512MB, 2GB, 1GiB)", s)
	}
	return int64(v * mult), nil
}

// FormatBytes writes n in MiB, as DuckDB reads it back.
func FormatBytes(n int64) string {
	return strconv.FormatInt(n>>20, 10) + "MiB"
}
