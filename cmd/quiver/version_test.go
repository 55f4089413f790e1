package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"bytes"
	"github.com/quiverdata/quiver/internal/version"
)

func TestVersion(t *testing.T) {
	v := version.Get()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runQuiver(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, want := range []string{"quiver " + v.Version, v.DuckDB, v.Arrow, v.Go} {
				if !strings.Contains(out, want) {
					t.Errorf("output %q lacks %q", out, want)
				}
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		code, out, errOut := runQuiver(t, "version", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got version.Info
		if err := json.Unmarshal([]byte(out), &got); err != nil || got != v {
			t.Errorf("version --json = %+v (%v), want %+v", got, err, v)
		}
	})
	t.Run("arrow-go and DuckDB are known", func(t *testing.T) {
		if !strings.HasPrefix(v.Arrow, "v18.") || !strings.HasPrefix(v.DuckDB, "v1.") {
			t.Errorf("arrow-go %q, DuckDB %q: want the linked versions", v.Arrow, v.DuckDB)
		}
	})
	t.Run("an argument is a usage error", func(t *testing.T) {
		if code, _, _ := runQuiver(t, "version", "extra"); code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
	})
}

func TestNewLogger_Formats(t *testing.T) {
	for _, tc := range []struct {
		format, want string // want: the start of the line a logged "hi" makes
		ok           bool
	}{{"text", "time=", true}, {"json", `{"time":`, true}, {"", "time=", true}, {"yaml", "", false}} {
		var out bytes.Buffer
		l, err := newLogger(&out, "info", tc.format)
		if (err == nil) != tc.ok {
			t.Errorf("newLogger(info, %q) = %v, want ok: %v", tc.format, err, tc.ok)
			continue
		}
		if err != nil {
			continue
		}
		l.Info("hi")
		if !strings.HasPrefix(out.String(), tc.want) || !strings.Contains(out.String(), "hi") {
			t.Errorf("--log-format %q: logged %q, want a line starting %q", tc.format, out.String(), tc.want)
		}
	}
}

// TestServe_JSONLog: under --log-format json every line quiver serve
// writes is one JSON object, the first says which quiver, and the ready
// line names the addresses.
func TestServe_JSONLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the CLI as a process")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, self, "serve", "--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "", "--http", "", "--log-format", "json")
	serve.Env = append(os.Environ(), asCLI+"=1")
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		serve.Wait()
	})
	var lines []map[string]any
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		lines = append(lines, rec)
		if rec["msg"] == "quiver is ready" {
			break
		}
	}
	if len(lines) == 0 || lines[len(lines)-1]["msg"] != "quiver is ready" {
		t.Fatalf("no ready line in %v", lines)
	}
	if first := lines[0]; first["version"] != version.Get().Version || first["duckdb"] != version.Get().DuckDB {
		t.Errorf("first line %v, want the version and DuckDB's", first)
	}
	if ready := lines[len(lines)-1]; !strings.HasPrefix(fmt.Sprint(ready["flight"]), "127.0.0.1:") {
		t.Errorf("ready line %v, want the Flight address", ready)
	}
}
