package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchLakeSuites_UsageErrors checks that bad flags of bench lakeread
// and bench scaleout exit 2 with a one-line reason, before any data is
// written or any namespace made.
func TestBenchLakeSuites_UsageErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"lakeread bad rows", []string{"bench", "lakeread", "--rows", "lots"}, `bad --rows "lots"`},
		{"lakeread two sizes", []string{"bench", "lakeread", "--rows", "1M,2M"}, "one size"},
		{"lakeread id workload", []string{"bench", "lakeread", "--workloads", "id"}, "id is not a lake table"},
		{"lakeread unknown workload", []string{"bench", "lakeread", "--workloads", "num30"}, `unknown workload "num30"`},
		{"lakeread file size", []string{"bench", "lakeread", "--file-mb", "0"}, "--file-mb and --file-row-groups must be at least 1"},
		{"lakeread file row groups", []string{"bench", "lakeread", "--file-row-groups", "0"}, "--file-mb and --file-row-groups must be at least 1"},
		{"lakeread compression", []string{"bench", "lakeread", "--file-compression", "brotli"}, `unknown --file-compression "brotli"`},
		{"lakeread parquet version", []string{"bench", "lakeread", "--parquet-version", "v3"}, `unknown --parquet-version "V3"`},
		{"lakeread negative part", []string{"bench", "lakeread", "--part-mb", "-1"}, "must not be negative"},
		{"scaleout negative fetch", []string{"bench", "scaleout", "--fetch-parallel", "-2"}, "must not be negative"},
		{"scaleout one replica", []string{"bench", "scaleout", "--replicas", "1"}, "--replicas must be 2 to 250"},
		{"scaleout bad rows", []string{"bench", "scaleout", "--rows", "0"}, `bad --rows "0"`},
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
