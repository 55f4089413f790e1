package main

import (
	"io"

	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/readme"
)

// TestReadme_GoBenchCommandsName checks the README's go test commands
// against the code they would run: each -bench pattern matches a
// benchmark of the package named, and each flag after -args is one the
// package's tests define. (The benchmarks themselves take minutes; this
// keeps the commands from drifting away from them.)
func TestReadme_GoBenchCommandsName(t *testing.T) {
	cmds := readme.Commands(t, "go test ")
	if len(cmds) == 0 {
		t.Fatal("the README shows no go test command")
	}
	benchFunc := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(b \*testing\.B\)`)
	for _, line := range cmds {
		t.Logf("README: %s", line)
		words := readme.ShellWords(t, line)
		var pattern, pkg string
		var testArgs []string
		for i := 2; i < len(words); i++ {
			w := words[i]
			switch {
			case w == "-args":
				testArgs = words[i+1:]
				i = len(words)
			case w == "-bench" && i+1 < len(words):
				pattern = words[i+1]
				i++
			case strings.HasPrefix(w, "./"):
				pkg = w
			}
		}
		if pattern == "" || pkg == "" {
			t.Errorf("%s: want a -bench pattern and a ./package", line)
			continue
		}
		files, err := filepath.Glob(filepath.Join("../..", pkg, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no tests in %s", line, pkg)
			continue
		}
		var src strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
		re, err := regexp.Compile(strings.Split(pattern, "/")[0])
		if err != nil {
			t.Errorf("%s: -bench %s: %v", line, pattern, err)
			continue
		}
		found := false
		for _, m := range benchFunc.FindAllStringSubmatch(src.String(), -1) {
			found = found || re.MatchString(m[1])
		}
		if !found {
			t.Errorf("%s: no benchmark in %s matches %s", line, pkg, pattern)
		}
		for _, a := range testArgs {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !strings.Contains(src.String(), `"`+name+`"`) {
				t.Errorf("%s: %s defines no flag %s", line, pkg, name)
			}
		}
	}
}

// TestReadme_BenchCommandsParse checks the README's quiver-bench commands
// as written: each names a suite, and the suite takes every flag given.
// (Running them takes minutes to hours; the figures beside them say how
// they were measured.)
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
