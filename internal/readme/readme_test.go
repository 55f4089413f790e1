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

// TestDocs_LinksResolve checks every relative link of the README and the
// pages of docs/: the file it names exists, and so does the heading its
// #anchor names, as GitHub makes anchors from headings.
func TestDocs_LinksResolve(t *testing.T) {
	root := testsvc.RepoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(outsideCode(string(b)), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
			}
			rel, _ := filepath.Rel(root, page)
			text, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s links to %s: %v", rel, m[1], err)
				continue
			}
			checked++
			if anchor != "" && !headingAnchors(string(text))[anchor] {
				t.Errorf("%s links to %s: no such heading", rel, m[1])
			}
		}
	}
	if checked == 0 {
		t.Error("found no relative links to check")
	}
}

// outsideCode is a page's text without its fenced code blocks.
func outsideCode(page string) string {
	var b strings.Builder
	inBlock := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// headingAnchors are the anchors GitHub gives a page's headings:
// lowercased, punctuation but hyphens dropped, spaces made hyphens.
func headingAnchors(page string) map[string]bool {
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	out := map[string]bool{}
	for _, line := range strings.Split(outsideCode(page), "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		a := drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), "")
		out[strings.ReplaceAll(a, " ", "-")] = true
	}
	return out
}
