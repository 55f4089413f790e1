package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	return &Report{
		Suite:   "fetch",
		When:    time.Date(2026, 12, 7, 15, 40, 12, 0, time.FixedZone("CET", 3600)),
		Machine: "linux/amd64, 2 cores, 23.5 GB, go1.26.0",
		Reps:    3,
		Tables: []*Table{{
			Title:   "Protocol fetch: client fetches the result and discards it",
			Note:    "Same server process\nand rows.",
			Columns: []string{"workload", "rows", "Flight ms", "speedup"},
			Rows: [][]string{
				{"id", "1M", "54 ±31%", "3.11×"},
				{"a|b", "10M", "146 ±12%", "—"},
			},
			Footer: "The raw TCP column is the loopback ceiling.",
		}},
	}
}

func TestReport_WriteMarkdown(t *testing.T) {
	const head = "<!-- quiver-bench fetch -->\n## fetch\n\n"
	const dated = "Run 2026-12-07 14:40 UTC on linux/amd64, 2 cores, 23.5 GB, go1.26.0, quiver v0.4.0 (abc1234); 3 alternated runs per figure (median; ± is the min–max spread).\n\n" +
		"```\nquiver-bench fetch --reps 3\n```\n"
	const table = "\n### Protocol fetch: client fetches the result and discards it\n\n" +
		"Same server process and rows.\n\n" +
		"| workload | rows | Flight ms | speedup |\n" +
		"|:---|---:|---:|---:|\n" +
		"| id | 1M | 54 ±31% | 3.11× |\n" +
		"| a\\|b | 10M | 146 ±12% | — |\n" +
		"\nThe raw TCP column is the loopback ceiling.\n"
	const end = "<!-- /quiver-bench fetch -->\n"
	noTables := sampleReport()
	noTables.Tables = nil
	for _, tc := range []struct {
		name string
		r    *Report
		h    MarkdownHeader
		want string
	}{
		{
			name: "table, no plot",
			r:    sampleReport(),
			h:    MarkdownHeader{Command: "quiver-bench fetch --reps 3", Version: "v0.4.0 (abc1234)"},
			want: head + dated + table + end,
		},
		{
			name: "summary and plot",
			r:    sampleReport(),
			h:    MarkdownHeader{Summary: "Fetch over\nFlight.", Command: "quiver-bench fetch --reps 3", Version: "v0.4.0 (abc1234)", Plot: "bench/fetch.svg"},
			want: head + "Fetch over Flight.\n\n" + dated + table + "\n![fetch](bench/fetch.svg)\n" + end,
		},
		{
			name: "no tables",
			r:    noTables,
			h:    MarkdownHeader{Command: "quiver-bench fetch --reps 3", Version: "v0.4.0 (abc1234)"},
			want: head + dated + end,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.r.WriteMarkdown(&b, tc.h); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestUpdateMarkdown(t *testing.T) {
	section := func(suite, body string) string {
		return SectionStart(suite) + "\n" + body + "\n" + SectionEnd(suite) + "\n"
	}
	for _, tc := range []struct {
		name    string
		page    string // "" for no page
		suite   string
		want    string
		wantErr string
	}{
		{"no page yet", "", "fetch", section("fetch", "new"), ""},
		{"appended after the intro", "# Benchmarks\n\nIntro.\n", "fetch", "# Benchmarks\n\nIntro.\n\n" + section("fetch", "new"), ""},
		{
			"replaced in place, others kept",
			"# B\n\n" + section("codec", "old codec") + "\n" + section("fetch", "old fetch") + "\n" + section("fetchx", "other"),
			"fetch",
			"# B\n\n" + section("codec", "old codec") + "\n" + section("fetch", "new") + "\n" + section("fetchx", "other"),
			"",
		},
		{"start without end", "# B\n" + SectionStart("fetch") + "\nold\n", "fetch", "", "has no end marker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "page.md")
			if tc.page != "" {
				if err := os.WriteFile(path, []byte(tc.page), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := UpdateMarkdown(path, tc.suite, []byte(section(tc.suite, "new")))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error: got %v, want one holding %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("page:\ngot:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
