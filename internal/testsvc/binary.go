package testsvc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builtBinary is a command of this repository, built at most once per
// test process.
type builtBinary struct {
	pkg, name, env string // ./cmd/<name>, and the variable that names a prebuilt one
	once           sync.Once
	path           string
	err            error
}

var (
	quiverBin = &builtBinary{pkg: "./cmd/quiver", name: "quiver", env: "QUIVER_BIN"}
	benchBin  = &builtBinary{pkg: "./cmd/quiver-bench", name: "quiver-bench", env: "QUIVER_BENCH_BIN"}
)

// QuiverBinary builds cmd/quiver once per test binary, or returns the
// binary QUIVER_BIN names. Tests that need real quiver processes use it.
func QuiverBinary(t testing.TB) string { return quiverBin.get(t) }

// BenchBinary builds cmd/quiver-bench once per test binary, or returns
// the binary QUIVER_BENCH_BIN names: the suites run it again as their
// own client processes.
func BenchBinary(t testing.TB) string { return benchBin.get(t) }

// RemoveBuilt removes the binaries this test process built. A package's
// TestMain calls it after m.Run.
func RemoveBuilt() {
	for _, b := range []*builtBinary{quiverBin, benchBin} {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
	}
}

func (b *builtBinary) get(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(b.env); bin != "" {
		return bin
	}
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", b.name+"-bin-")
		if err != nil {
			b.err = err
			return
		}
		path := filepath.Join(dir, b.name)
		cmd := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", path, b.pkg)
		cmd.Dir = RepoRoot(t)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			os.RemoveAll(dir)
			b.err = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out.String())
			return
		}
		b.path = path
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
