package main

import (
	"testing"
)

// TestBenchLakeSuites_UsageErrors checks that bad flags of bench lakeread
// and bench scaleout exit 2 with a one-line reason, before any data is
// written or any namespace made.
func TestBenchLakeSuites_UsageErrors(t *testing.T) {
	checkUsage(t, []usageCase{
		{"lakeread bad rows", []string{"lakeread", "--rows", "lots"}, `bad --rows "lots"`},
		{"lakeread two sizes", []string{"lakeread", "--rows", "1M,2M"}, "one size"},
		{"lakeread id workload", []string{"lakeread", "--workloads", "id"}, "id is not a lake table"},
		{"lakeread unknown workload", []string{"lakeread", "--workloads", "num30"}, `unknown workload "num30"`},
		{"lakeread file size", []string{"lakeread", "--file-mb", "0"}, "--file-mb and --file-row-groups must be at least 1"},
		{"lakeread file row groups", []string{"lakeread", "--file-row-groups", "0"}, "--file-mb and --file-row-groups must be at least 1"},
		{"lakeread compression", []string{"lakeread", "--file-compression", "brotli"}, `unknown --file-compression "brotli"`},
		{"lakeread parquet version", []string{"lakeread", "--parquet-version", "v3"}, `unknown --parquet-version "V3"`},
		{"lakeread negative part", []string{"lakeread", "--part-mb", "-1"}, "must not be negative"},
		{"scaleout negative fetch", []string{"scaleout", "--fetch-parallel", "-2"}, "must not be negative"},
		{"scaleout one replica", []string{"scaleout", "--replicas", "1"}, "--replicas must be 2 to 250"},
		{"scaleout bad rows", []string{"scaleout", "--rows", "0"}, `bad --rows "0"`},
	})
}
