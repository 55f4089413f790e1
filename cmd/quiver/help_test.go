package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelp_ReferenceCurrent fails when docs/cli.md is not what quiver
// help --markdown writes from the code.
func TestHelp_ReferenceCurrent(t *testing.T) {
	// The reference must not depend on the environment it is written in.
	t.Setenv("QUIVER_SERVER", "elsewhere:1")
	t.Setenv("QUIVER_PASSWORD", "not-for-the-docs")
	code, got, errOut := runQuiver(t, "help", "--markdown")
	if code != 0 {
		t.Fatalf("quiver help --markdown: exit %d, stderr %s", code, errOut)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", referenceFile))
	if err != nil {
		t.Fatal(err)
	}
	want := string(b)
	if got == want {
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gotLines), len(wantLines)); i++ {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Fatalf("%s is stale: run quiver help --markdown > %s (go run -tags duckdb_arrow ./cmd/quiver from the repository's root); first difference at line %d:\n got: %s\nwant: %s",
				referenceFile, referenceFile, i+1, g, w)
		}
	}
}

// TestHelp_ReferenceCoversEveryFlag checks the reference lists every
// verb and every flag of a verb with one flag set.
func TestHelp_ReferenceCoversEveryFlag(t *testing.T) {
	var b strings.Builder
	if err := writeReference(&b); err != nil {
		t.Fatal(err)
	}
	ref := b.String()
	for _, name := range verbs() {
		if !strings.Contains(ref, "\n## quiver "+name+"\n") {
			t.Errorf("the reference has no section for quiver %s", name)
		}
		if _, ok := commands[name].new().(referencer); ok {
			continue
		}
		fs, err := verbFlags(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(ref, "`--"+f.Name) && !strings.Contains(ref, "`-"+f.Name+" ") {
				t.Errorf("the reference lacks quiver %s --%s", name, f.Name)
			}
		})
	}
}

func TestHelp_Run(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"help"}, 0, "usage: quiver <command>"},
		{[]string{"help", "shell"}, 0, "-keep-going"},
		{[]string{"help", "nosuch"}, 2, "quiver help: give a command ("},
		{[]string{"help", "query", "shell"}, 2, "quiver help: give a command ("},
	} {
		code, _, errOut := runQuiver(t, tt.args...)
		if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
			t.Errorf("quiver %v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, tt.wantCode, tt.wantErr)
		}
	}
}
