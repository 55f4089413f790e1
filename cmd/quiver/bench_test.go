package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBench_UsageErrors checks that bad bench flags exit 2 with a
// one-line reason, before any suite starts work.
func TestBench_UsageErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no suite", []string{"bench"}, "name a suite"},
		{"unknown suite", []string{"bench", "nope"}, `unknown suite "nope"`},
		{"bad reps", []string{"bench", "kafka", "--reps", "0"}, "--reps must be at least 1"},
		{"bad plot", []string{"bench", "kafka", "--plot", "x.pdf"}, "--plot must name"},
		{"no messages", []string{"bench", "kafka", "--messages", "0"}, "--messages and --partitions must be positive"},
		{"negative inserters", []string{"bench", "kafka", "--inserters", "-1"}, "must not be negative"},
		{"negative decoders", []string{"bench", "kafka", "--decoders", "-2"}, "must not be negative"},
		{"negative partition fetch", []string{"bench", "kafka", "--fetch-partition-mb", "-1"}, "must not be negative"},
		{"negative fetch max", []string{"bench", "kafka", "--fetch-max-mb", "-1"}, "must not be negative"},
		{"unknown flag", []string{"bench", "kafka", "--nope"}, "flag provided but not defined"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tt.args, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}
