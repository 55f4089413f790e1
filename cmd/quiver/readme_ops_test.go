package main

import (
	"os"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/internal/version"
)

// TestReadme_OperationsAsWritten runs the README's version and
// configuration commands exactly as written, from the repository's root.
func TestReadme_OperationsAsWritten(t *testing.T) {
	var cmds []string
	for _, prefix := range []string{"quiver version", "quiver serve --config"} {
		cmds = append(cmds, readme.Commands(t, prefix)...)
	}
	if len(cmds) < 2 {
		t.Fatalf("found %d commands, want the version and the configuration ones", len(cmds))
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
	for _, c := range cmds {
		code, out, errOut := runQuiver(t, strings.Fields(c)[1:]...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", c, code, errOut)
			continue
		}
		want := "quiver " + version.Get().Version
		if strings.Contains(c, "--print-config") {
			want = "db = '/var/lib/quiver/quiver.duckdb'"
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s: output lacks %q:\n%s", c, want, out)
		}
	}
}
