package testsvc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// StartPostgres starts a throwaway PostgreSQL server on a free port of
// 127.0.0.1 with scripts/postgres.sh (which installs Debian's postgresql
// package on first use), and stops it and deletes its data when the test
// ends. It returns the URL of a database the server's password-protected
// user owns, like
//
//	postgresql://quiver:quiver@127.0.0.1:PORT/quiver?sslmode=disable
//
// With QUIVER_SKIP_POSTGRES=1 it skips the test instead.
func StartPostgres(t testing.TB) string {
	t.Helper()
	if os.Getenv("QUIVER_SKIP_POSTGRES") == "1" {
		t.Skip("QUIVER_SKIP_POSTGRES=1")
	}
	script := filepath.Join(RepoRoot(t), "scripts", "postgres.sh")
	// Not t.TempDir: as root the script hands the directory to the
	// postgres user, who cannot enter the test's private temporary
	// directories. The system temporary directory is open to everyone.
	dir, err := os.MkdirTemp("", "quiver-postgres-")
	if err != nil {
		t.Fatal(err)
	}
	stop := func() {
		out, err := exec.Command("bash", script, "stop", dir).CombinedOutput()
		if err != nil {
			t.Errorf("stop postgres: %v\n%s", err, out)
		}
	}

	start := time.Now()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script, "start", dir, "0")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		stop()
		os.RemoveAll(dir)
		t.Fatalf("start postgres: %v\n%s", err, stderr.Bytes())
	}
	var url string
	for _, line := range strings.Split(string(out), "\n") {
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "POSTGRES="); ok {
			url = u
		}
	}
	if url == "" {
		stop()
		os.RemoveAll(dir)
		t.Fatalf("start postgres printed no POSTGRES= line:\n%s%s", out, stderr.Bytes())
	}
	t.Logf("postgres: %s, ready in %v", url, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("postgres log:\n%s", seaweedLogTail(filepath.Join(dir, "log"), 40))
		}
		stop()
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove postgres data: %v", err)
		}
	})
	return url
}
