package main

import (
	"strings"
	"testing"
)

// TestBench_Moved checks that quiver bench, with or without a suite and
// flags, exits 2 with one line that names quiver-bench.
func TestBench_Moved(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "fetch", "--sizes", "1M"},
		{"bench", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runQuiver(t, args...)
			if code != 2 {
				t.Errorf("exit: got %d, want 2", code)
			}
			want := "quiver bench: the benchmarks moved to their own binary: run quiver-bench SUITE"
			if !strings.HasPrefix(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" {
				t.Errorf("stderr %q, stdout %q: want one line starting %q", errOut, out, want)
			}
		})
	}
}
