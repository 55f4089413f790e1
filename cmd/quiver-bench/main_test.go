package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/version"
)

// runBench runs quiver-bench in-process and returns its exit status,
// stdout and stderr.
func runBench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// usageCase is a command line that must exit 2 with want in its reason.
type usageCase struct {
	name string
	args []string
	want string
}

// checkUsage runs each case and checks that it exits 2 with a one-line
// reason holding want, before any suite starts work.
func checkUsage(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runBench(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, errOut)
			}
			if !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("stderr: got %q, want one line holding %q", errOut, tc.want)
			}
		})
	}
}

func TestRun_Usage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"no arguments", nil, 2},
		{"help", []string{"help"}, 0},
		{"-h", []string{"-h"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runBench(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit: got %d, want %d", code, tc.wantCode)
			}
			for _, want := range []string{"usage: quiver-bench <suite>", "\n  fetch ", "\n  load ", "--quiver"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("usage: got %q, want it to hold %q", errOut, want)
				}
			}
			if strings.Contains(errOut, linkClient) {
				t.Errorf("usage lists %s, which is no suite: %q", linkClient, errOut)
			}
		})
	}
}

// TestRun_UsageErrors checks the common flags, and one suite's own.
func TestRun_UsageErrors(t *testing.T) {
	checkUsage(t, []usageCase{
		{"flags before the suite", []string{"--reps", "2"}, "name a suite"},
		{"unknown suite", []string{"nope"}, `unknown suite "nope"`},
		{"bad reps", []string{"kafka", "--reps", "0"}, "--reps must be at least 1"},
		{"bad plot", []string{"kafka", "--plot", "x.pdf"}, "--plot must name"},
		{"no messages", []string{"kafka", "--messages", "0"}, "--messages and --partitions must be positive"},
		{"negative inserters", []string{"kafka", "--inserters", "-1"}, "must not be negative"},
		{"negative decoders", []string{"kafka", "--decoders", "-2"}, "must not be negative"},
		{"negative partition fetch", []string{"kafka", "--fetch-partition-mb", "-1"}, "must not be negative"},
		{"negative fetch max", []string{"kafka", "--fetch-max-mb", "-1"}, "must not be negative"},
		{"unknown flag", []string{"kafka", "--nope"}, "flag provided but not defined"},
	})
}

func TestRun_Version(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		var out, errOut strings.Builder
		if code := run([]string{arg}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "quiver-bench "+version.Get().Version+" ") {
			t.Errorf("quiver-bench %s: exit %d, output %q", arg, code, out.String())
		}
	}
}
