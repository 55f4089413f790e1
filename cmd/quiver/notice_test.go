package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotice_EveryLinkedModule: THIRD_PARTY_NOTICES.md holds, for every
// module linked into this binary, its version and a license text. A new
// or upgraded dependency fails here until scripts/notice.sh is run.
func TestNotice_EveryLinkedModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "duckdb_arrow",
		"-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	linked := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, ver, ok := strings.Cut(line, " "); ok {
			linked[path] = ver
		}
	}
	if len(linked) < 20 {
		t.Fatalf("go list found %d linked modules; want the binary's dependencies", len(linked))
	}
	type entry struct{ version, text string }
	notice := map[string]*entry{}
	f, err := os.Open(filepath.Join("..", "..", "THIRD_PARTY_NOTICES.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cur *entry
	inText := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			cur = &entry{}
			notice[strings.TrimPrefix(line, "## ")] = cur
		case cur != nil && strings.HasPrefix(line, "Version "):
			cur.version, _, _ = strings.Cut(strings.TrimPrefix(line, "Version "), ";")
		case cur != nil && line == "```":
			inText = !inText
		case cur != nil && inText:
			cur.text += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// go-licenses names a library by the directory its license is in: a
	// module's root, or a package below it with a license of its own. A
	// library belongs to the longest module path it starts with.
	owner := func(name string) string {
		best := ""
		for mod := range linked {
			if (name == mod || strings.HasPrefix(name, mod+"/")) && len(mod) > len(best) {
				best = mod
			}
		}
		return best
	}
	covered := map[string]bool{}
	for name, e := range notice {
		mod := owner(name)
		if mod == "" {
			continue // linked no more; the version check below catches a stale file
		}
		covered[mod] = true
		// go-licenses drops the +incompatible of a module without go.mod.
		if e.version != strings.TrimSuffix(linked[mod], "+incompatible") {
			t.Errorf("%s: the notice has version %s, the binary links %s: run scripts/notice.sh", name, e.version, linked[mod])
		}
		if strings.TrimSpace(e.text) == "" {
			t.Errorf("%s: the notice has no license text", name)
		}
	}
	for mod, ver := range linked {
		if !covered[mod] {
			t.Errorf("%s %s is linked but not in THIRD_PARTY_NOTICES.md: run scripts/notice.sh", mod, ver)
		}
	}
}
