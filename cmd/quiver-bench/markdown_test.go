package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"plain words", []string{"fetch", "--reps", "3", "--sizes", "1M,10M"}, "quiver-bench fetch --reps 3 --sizes 1M,10M"},
		{"flag=value", []string{"load", "--clients=1,64"}, "quiver-bench load --clients=1,64"},
		{"a blank", []string{"fetch", "--mariadb", "a b"}, "quiver-bench fetch --mariadb 'a b'"},
		{"a quote", []string{"fetch", "--x", "it's"}, `quiver-bench fetch --x 'it'\''s'`},
		{"empty", []string{"fetch", "--x", ""}, "quiver-bench fetch --x ''"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandLine(tc.args); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRun_Markdown runs a small codec suite twice into one page: the first
// run appends its section, with the command and the plot linked relative
// to the page; the second replaces it, keeping the rest of the page.
func TestRun_Markdown(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "docs", "benchmarks.md")
	if err := os.MkdirAll(filepath.Join(dir, "docs", "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	const intro = "# Benchmarks\n\nIntro.\n"
	if err := os.WriteFile(page, []byte(intro), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"codec", "--rows", "1k", "--min-sample", "1ms", "--reps", "1",
		"--markdown", page, "--plot", filepath.Join(dir, "docs", "bench", "codec.svg")}
	for run := 1; run <= 2; run++ {
		if code, _, errOut := runBench(t, args...); code != 0 {
			t.Fatalf("run %d: exit %d, stderr %q", run, code, errOut)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		for _, want := range []string{
			intro + "\n<!-- quiver-bench codec -->\n## codec\n",
			"\n```\n" + commandLine(args) + "\n```\n",
			"\n![codec](bench/codec.svg)\n<!-- /quiver-bench codec -->\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("run %d: page holds no %q:\n%s", run, want, got)
			}
		}
		if n := strings.Count(got, "<!-- quiver-bench codec -->"); n != 1 {
			t.Errorf("run %d: %d codec sections, want 1", run, n)
		}
		if !regexp.MustCompile(`(?m)^Run \d{4}-\d\d-\d\d \d\d:\d\d UTC on \S+, \d+ cores, .*, quiver `).MatchString(got) {
			t.Errorf("run %d: no date and machine line:\n%s", run, got)
		}
		if !regexp.MustCompile(`(?m)^\| \S.* \|\n\|(:---\||---:\|)+\n\| `).MatchString(got) {
			t.Errorf("run %d: no table:\n%s", run, got)
		}
	}
}
