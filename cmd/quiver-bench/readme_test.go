package main

import (
	"io"
	"testing"

	"github.com/quiverdata/quiver/internal/readme"
)

// TestReadme_BenchCommandsParse checks the README's quiver-bench commands
// as written: each names a suite, and the suite takes every flag given.
// TestBenchPage_CommandsRun runs them at smoke size; this check needs no
// build and runs under -short too.
func TestReadme_BenchCommandsParse(t *testing.T) {
	cmds := readme.Commands(t, "quiver-bench ")
	if len(cmds) < 5 {
		t.Fatalf("found %d quiver-bench commands in the README, want at least 5", len(cmds))
	}
	for _, line := range cmds {
		words := readme.ShellWords(t, line)
		if _, err := parseSuite(words[1:], io.Discard, io.Discard); err != nil {
			t.Errorf("README: %s: %v", line, err)
		}
	}
}
