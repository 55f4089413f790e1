package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/testsvc"
)

// TestDocs_ArchitecturePackages checks the package map of
// docs/architecture.md against the tree: every package go list finds is
// in the map, and every package the map names exists.
func TestDocs_ArchitecturePackages(t *testing.T) {
	root := testsvc.RepoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-tags", "duckdb_arrow", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := map[string]bool{}
	for _, path := range strings.Fields(string(out)) {
		_, rel, ok := strings.Cut(path, "/quiver/")
		if !ok {
			t.Fatalf("go list printed %q, outside the module", path)
		}
		listed[rel] = true
	}
	// The map is the table after "## Packages": its first column names
	// packages in backquotes.
	_, table, ok := strings.Cut(string(page), "## Packages")
	if !ok {
		t.Fatal("docs/architecture.md has no Packages section")
	}
	named := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`([a-z0-9/_-]+)`").FindAllStringSubmatch(cells[1], -1) {
			named[m[1]] = true
		}
	}
	for pkg := range listed {
		if !named[pkg] {
			t.Errorf("package %s is not in the map of docs/architecture.md", pkg)
		}
	}
	for pkg := range named {
		if !listed[pkg] {
			t.Errorf("docs/architecture.md maps %s, which go list does not find", pkg)
		}
	}
	if len(listed) == 0 {
		t.Error("go list found no packages")
	}
}
