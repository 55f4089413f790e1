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

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// QuiverBinary builds cmd/quiver once per test binary, or returns the
// binary QUIVER_BIN names. Tests that need real quiver processes use it.
func QuiverBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("QUIVER_BIN"); bin != "" {
		return bin
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "quiver-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "quiver")
		cmd := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", binPath, "./cmd/quiver")
		cmd.Dir = repoRoot(t)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out.String())
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
