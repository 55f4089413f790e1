package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// benchPage is the page of benchmark tables, relative to the repository's
// root; its commands name it as their --markdown.
const benchPage = "docs/benchmarks.md"

var (
	sectionStart = regexp.MustCompile(`^<!-- quiver-bench (\S+) -->$`)
	sectionEnd   = regexp.MustCompile(`^<!-- /quiver-bench (\S+) -->$`)
	// ranLine is the line WriteMarkdown dates a run with; notRunLine is
	// what a section says instead when its suite was not run for the page.
	ranLine    = regexp.MustCompile(`^Run \d{4}-\d\d-\d\d \d\d:\d\d UTC on \S`)
	notRunLine = regexp.MustCompile(`^Not run on \d{4}-\d\d-\d\d: \S`)
	plotLink   = regexp.MustCompile(`^!\[[^\]]*\]\(([^)]+)\)$`)
)

// checkBenchPage returns what is wrong with a page of benchmark tables:
// every table must sit in a suite's section, below the section's date
// line and its command; every section holds one command, of its own
// suite, that parses with the flags the suite has today and writes back
// to this page; a section without tables says it was not run, and when;
// a linked plot exists beside the page. Tables above the first section
// are the introduction's.
func checkBenchPage(t *testing.T, page, dir string) []string {
	t.Helper()
	var problems []string
	bad := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
	}
	var (
		suite                          string // the open section's, "" outside
		dated, notRun, inBlock, tables bool
		seenSection                    bool
		commands                       int
		startLine                      int
	)
	for i, line := range strings.Split(page, "\n") {
		n := i + 1
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if m := sectionStart.FindStringSubmatch(line); m != nil {
			if suite != "" {
				bad(n, "section %s opens inside section %s", m[1], suite)
			}
			if _, ok := suites[m[1]]; !ok {
				bad(n, "section of unknown suite %q", m[1])
			}
			suite, startLine, seenSection = m[1], n, true
			dated, notRun, tables, commands = false, false, false, 0
			continue
		}
		if m := sectionEnd.FindStringSubmatch(line); m != nil {
			switch {
			case m[1] != suite:
				bad(n, "end of section %s, but the open one is %q", m[1], suite)
			case commands != 1:
				bad(startLine, "section %s holds %d quiver-bench commands, want 1", suite, commands)
			case !tables && !notRun:
				bad(startLine, "section %s has no table and does not say it was not run (a line %q)", suite, "Not run on YYYY-MM-DD: why")
			}
			suite = ""
			continue
		}
		switch {
		case inBlock && strings.HasPrefix(line, "quiver-bench "):
			commands++
			words := readme.ShellWords(t, line)
			if suite == "" {
				bad(n, "command outside a section: %s", line)
			} else if words[1] != suite {
				bad(n, "command of suite %s in the section of %s", words[1], suite)
			}
			b, err := parseSuite(words[1:], io.Discard, io.Discard)
			if err != nil {
				bad(n, "%s: %v", line, err)
			} else if b.markdown != benchPage {
				bad(n, "%s: want --markdown %s, so that running it refreshes this section", line, benchPage)
			}
		case !inBlock && strings.HasPrefix(line, "|"):
			if suite == "" {
				if seenSection {
					bad(n, "table outside a suite's section")
				}
				// Above the first section is the introduction,
				// whose tables describe and measure nothing.
				continue
			}
			if !dated || commands == 0 {
				bad(n, "table in section %s without a date line and a command above it", suite)
			}
			tables = true
		case suite != "" && ranLine.MatchString(line):
			dated = true
		case suite != "" && notRunLine.MatchString(line):
			notRun = true
		case suite != "" && plotLink.MatchString(line):
			f := plotLink.FindStringSubmatch(line)[1]
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
				bad(n, "plot %s: %v", f, err)
			}
		}
	}
	if suite != "" {
		bad(startLine, "section %s has no end %q", suite, report.SectionEnd(suite))
	}
	return problems
}

// TestBenchPage checks the page of benchmark tables: each table is the
// output of the command above it, dated, and each command still runs
// the suite and flags it names.
func TestBenchPage(t *testing.T) {
	path := filepath.Join(testsvc.RepoRoot(t), benchPage)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkBenchPage(t, string(b), filepath.Dir(path)) {
		t.Errorf("%s: %s", benchPage, p)
	}
	if got := strings.Count(string(b), "\n<!-- quiver-bench "); got < 5 {
		t.Errorf("%s: %d suite sections, want at least 5", benchPage, got)
	}
}

// TestCheckBenchPage shows that the page's check fails on a stale page:
// a command of a suite or flag that is gone, a table without its date or
// command, a section neither run nor said not to be.
func TestCheckBenchPage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bench", "codec.svg"), []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		date  = "Run 2026-12-07 15:40 UTC on linux/amd64, 2 cores, quiver v1; 3 alternated runs per figure.\n\n"
		cmd   = "```\nquiver-bench codec --reps 3 --markdown docs/benchmarks.md --plot docs/bench/codec.svg\n```\n"
		table = "\n### Codecs\n\n| codec | ms |\n|:---|---:|\n| lz4 | 12 ±3% |\n"
		plot  = "\n![codec](bench/codec.svg)\n"
	)
	section := func(suite, body string) string {
		return "<!-- quiver-bench " + suite + " -->\n## " + suite + "\n\n" + body + "<!-- /quiver-bench " + suite + " -->\n"
	}
	intro := "# Benchmarks\n\n| name | query |\n|:---|:---|\n| id | SELECT id |\n\n"
	for _, tc := range []struct {
		name string
		page string
		want string // "" for a page with no problem
	}{
		{"run", intro + section("codec", date+cmd+table+plot), ""},
		{"not run", intro + section("codec", "Not run on 2026-12-07: needs root.\n\n"+cmd), ""},
		{"unknown suite", intro + section("codecs", date+strings.Replace(cmd, "codec --", "codecs --", 1)+table), `unknown suite "codecs"`},
		{"unknown flag", intro + section("codec", date+strings.Replace(cmd, "--reps 3", "--repeats 3", 1)+table), "flag provided but not defined: -repeats"},
		{"another suite's command", intro + section("codec", date+strings.Replace(cmd, "codec --", "fetch --", 1)+table), "command of suite fetch in the section of codec"},
		{"no --markdown", intro + section("codec", date+strings.Replace(cmd, " --markdown docs/benchmarks.md", "", 1)+table), "want --markdown docs/benchmarks.md"},
		{"no date", intro + section("codec", cmd+table), "without a date line and a command"},
		{"table above the command", intro + section("codec", date+table+cmd), "without a date line and a command"},
		{"no command", intro + section("codec", date+table), "holds 0 quiver-bench commands"},
		{"neither run nor said not run", intro + section("codec", cmd), "does not say it was not run"},
		{"missing plot", intro + section("codec", date+cmd+table+strings.Replace(plot, "codec.svg", "gone.svg", 1)), "plot bench/gone.svg"},
		{"table between sections", intro + section("codec", date+cmd+table) + table, "table outside a suite's section"},
		{"no end", intro + strings.TrimSuffix(section("codec", date+cmd+table), "<!-- /quiver-bench codec -->\n"), "has no end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkBenchPage(t, tc.page, dir)
			if tc.want == "" {
				if len(got) > 0 {
					t.Errorf("got problems %q, want none", got)
				}
				return
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("got problems %q, want one holding %q", got, tc.want)
			}
		})
	}
}
