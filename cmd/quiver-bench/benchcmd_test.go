package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/consolepage/consoletest"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// interopSuites need the Python venv and the Java build that `make
// interop` makes; interop/run.sh runs their commands with
// QUIVER_REQUIRE_INTEROP=1, where a missing one fails instead of skipping.
var interopSuites = map[string][]string{
	"pandas":  {".venv/bin/python"},
	"jdbc":    {".venv/bin/python", "interop/java/target/bench-classpath.txt"},
	"parquet": {".venv/bin/python", "interop/java/target/bench-classpath.txt"},
}

// benchScratch makes a directory that stands in for the repository's root
// when a documented quiver-bench command runs: a copy of docs/, which the
// command rewrites, and links to what the suites read relative to the
// root (scripts/, interop/, .venv). It returns the directory and a PATH
// whose first entry holds quiver and quiver-bench, as `make build` and
// the page's "with bin/ on the PATH" have it.
func benchScratch(t *testing.T) (dir, path string) {
	t.Helper()
	root := testsvc.RepoRoot(t)
	dir = t.TempDir()
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy docs: %v", err)
	}
	for _, name := range []string{"scripts", "interop", ".venv"} {
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"quiver": testsvc.QuiverBinary(t), "quiver-bench": testsvc.BenchBinary(t)} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// needBenchTools skips a suite's command where what it needs beside the
// two binaries is missing, saying which stage of CI has it, and returns
// the environment it needs.
func needBenchTools(t *testing.T, suite, root string) []string {
	t.Helper()
	switch suite {
	case "link", "scaleout":
		if os.Geteuid() != 0 {
			t.Skipf("quiver-bench %s needs root for network namespaces (make test runs as root in CI)", suite)
		}
		for _, tool := range []string{"ip", "tc"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("quiver-bench %s needs %s (iproute2)", suite, tool)
			}
		}
	case "fetch":
		if _, err := exec.LookPath("mysql"); err != nil {
			t.Skip("quiver-bench fetch --protocols mysql needs the mysql CLI (make deps installs it)")
		}
	case "lake":
		testsvc.SeaweedBinary(t)
	case "console":
		return []string{"QUIVER_CHROMIUM=" + consoletest.Chromium(t)}
	}
	for _, need := range interopSuites[suite] {
		if _, err := os.Stat(filepath.Join(root, need)); err != nil {
			if os.Getenv("QUIVER_REQUIRE_INTEROP") == "1" {
				t.Fatalf("QUIVER_REQUIRE_INTEROP=1: quiver-bench %s needs %s: %v", suite, need, err)
			}
			t.Skipf("quiver-bench %s needs %s: run make interop first (it runs this command then)", suite, need)
		}
	}
	return nil
}

// TestBenchPage_CommandsRun runs every quiver-bench command of the README
// and the docs exactly as written, through sh in a scratch copy of the
// repository's docs/ with quiver and quiver-bench on the PATH, as a smoke
// run (QUIVER_BENCH_SMOKE=1) that takes seconds. A command with
// --markdown must have rewritten its suite's section of the scratch page:
// dated as a smoke run, headed by the command as written, with a table,
// the page still passing checkBenchPage; its --plot must exist.
func TestBenchPage_CommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds quiver and quiver-bench and runs each suite")
	}
	var cmds []string
	for _, c := range readme.Commands(t, "quiver-bench ") {
		if !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) < 10 {
		t.Fatalf("found %d quiver-bench commands, want one per suite on %s", len(cmds), benchPage)
	}
	root := testsvc.RepoRoot(t)
	for _, line := range cmds {
		words := readme.ShellWords(t, line)
		suite := words[1]
		t.Run(suite, func(t *testing.T) {
			if _, ok := smokeFlags[suite]; !ok {
				t.Fatalf("%s: suite %s has no smoke sizes in smokeFlags, so this test would run it at full size", line, suite)
			}
			env := needBenchTools(t, suite, root)
			b, err := parseSuite(words[1:], io.Discard, io.Discard)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			dir, path := benchScratch(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", line)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), append(env, "PATH="+path, smokeEnv+"=1", "QUIVER_BIN=")...)
			cmd.WaitDelay = 10 * time.Second
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", line, err, out.String(), errOut.String())
			}
			t.Logf("%s: %s", line, time.Since(start).Round(100*time.Millisecond))
			if !strings.Contains(out.String(), "\n(took ") {
				t.Errorf("%s: stdout holds no report:\n%s", line, out.String())
			}
			if b.plot != "" {
				svg, err := os.ReadFile(filepath.Join(dir, b.plot))
				if err != nil || !bytes.Contains(svg, []byte("<svg")) {
					t.Errorf("%s: plot %s: %v, %d bytes, want an SVG", line, b.plot, err, len(svg))
				}
			}
			if b.markdown != "" {
				page, err := os.ReadFile(filepath.Join(dir, b.markdown))
				if err != nil {
					t.Fatal(err)
				}
				checkRewritten(t, line, suite, string(page))
				for _, p := range checkBenchPage(t, string(page), filepath.Join(dir, filepath.Dir(b.markdown))) {
					t.Errorf("%s: the page it wrote: %s", line, p)
				}
			}
		})
	}
}

// checkRewritten checks that suite's section of page is the one a smoke
// run of line wrote: its date line, line itself as the command, a table.
func checkRewritten(t *testing.T, line, suite, page string) {
	t.Helper()
	start := strings.Index(page, "<!-- quiver-bench "+suite+" -->\n")
	end := strings.Index(page, "<!-- /quiver-bench "+suite+" -->")
	if start < 0 || end < start {
		t.Fatalf("%s: no section of %s in the page", line, suite)
	}
	sec := page[start:end]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Run \d{4}-\d\d-\d\d \d\d:\d\d UTC on .*a smoke run \(` + smokeEnv + `\)`),
		regexp.MustCompile("(?m)^```\n" + regexp.QuoteMeta(line) + "\n```$"),
		regexp.MustCompile(`(?m)^\| .*\|\n\|(:?---:?\|)+$`),
	} {
		if !want.MatchString(sec) {
			t.Errorf("%s: the section it wrote matches no %s:\n%s", line, want, sec)
		}
	}
}
