package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// MarkdownHeader is what a report's Markdown section says above its
// tables, beside what the report itself holds.
type MarkdownHeader struct {
	// Summary is a sentence under the heading: what the suite measures.
	Summary string
	// Command is the command line that produced the report, as a user
	// types it (quiver-bench SUITE …).
	Command string
	// Version is the quiver build that ran it.
	Version string
	// Plot is the plot's path relative to the page, or "" for none.
	Plot string
}

// SectionStart and SectionEnd are the HTML comments (invisible when the
// page is rendered) that bound the section of a suite on a page, so a
// later run of the same suite replaces its own section and nothing else.
func SectionStart(suite string) string { return "<!-- quiver-bench " + suite + " -->" }

// SectionEnd closes the section SectionStart opens.
func SectionEnd(suite string) string { return "<!-- /quiver-bench " + suite + " -->" }

// DateLayout is how a section dates its run, in UTC.
const DateLayout = "2006-01-02 15:04 UTC"

// WriteMarkdown writes r as one Markdown section: its start marker, a
// heading, the summary, one line with the date, the machine and the build,
// the command line in a code block, each table with its title, note and
// footer, the plot when there is one, and the end marker.
func (r *Report) WriteMarkdown(w io.Writer, h MarkdownHeader) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n## %s\n\n", SectionStart(r.Suite), r.Suite)
	if h.Summary != "" {
		fmt.Fprintf(&b, "%s\n\n", oneLine(h.Summary))
	}
	fmt.Fprintf(&b, "Run %s on %s, quiver %s; %d alternated runs per figure (median; ± is the min–max spread).\n\n",
		r.When.UTC().Format(DateLayout), r.Machine, h.Version, r.Reps)
	fmt.Fprintf(&b, "```\n%s\n```\n", h.Command)
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "\n### %s\n\n", oneLine(t.Title))
		if t.Note != "" {
			fmt.Fprintf(&b, "%s\n\n", oneLine(t.Note))
		}
		if len(t.Columns) > 0 {
			markdownTable(&b, t)
		}
		if t.Footer != "" {
			fmt.Fprintf(&b, "\n%s\n", oneLine(t.Footer))
		}
	}
	if h.Plot != "" {
		fmt.Fprintf(&b, "\n![%s](%s)\n", r.Suite, filepath.ToSlash(h.Plot))
	}
	fmt.Fprintf(&b, "%s\n", SectionEnd(r.Suite))
	_, err := w.Write(b.Bytes())
	return err
}

// markdownTable writes t's columns and rows as a pipe table. A column
// whose cells all start with a digit or a sign is right-aligned, as Print
// aligns figures; one that holds words (workload names, contenders) is
// left-aligned.
func markdownTable(b *bytes.Buffer, t *Table) {
	fmt.Fprintf(b, "| %s |\n|", strings.Join(cells(t.Columns), " | "))
	for i := range t.Columns {
		if numericColumn(t.Rows, i) {
			b.WriteString("---:|")
		} else {
			b.WriteString(":---|")
		}
	}
	b.WriteString("\n")
	for _, row := range t.Rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells(row), " | "))
	}
}

func numericColumn(rows [][]string, col int) bool {
	for _, row := range rows {
		if col >= len(row) {
			continue
		}
		for _, r := range row[col] {
			if unicode.IsLetter(r) {
				return false
			}
			break
		}
	}
	return true
}

// cells escapes what would break a pipe table: a | ends a cell, and a
// line break ends the row.
func cells(in []string) []string {
	out := make([]string, len(in))
	for i, c := range in {
		out[i] = strings.ReplaceAll(oneLine(c), "|", `\|`)
	}
	return out
}

// oneLine joins a multi-line text into one line, so that a note or a
// title cannot end the Markdown block it sits in.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// UpdateMarkdown puts section, a suite's section from WriteMarkdown, into
// the page at path: in place of the suite's section already there, else
// at the end of the page (creating the page if it does not exist). The
// rest of the page is left as it is, so one page holds a section per
// suite and each is refreshed by running its own command again.
func UpdateMarkdown(path, suite string, section []byte) error {
	page, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read markdown page: %w", err)
	}
	start, end := []byte(SectionStart(suite)), []byte(SectionEnd(suite)+"\n")
	var out []byte
	i := bytes.Index(page, start)
	switch {
	case i >= 0:
		j := bytes.Index(page[i:], end)
		if j < 0 {
			return fmt.Errorf("markdown page %s: the %s section has no end marker %q", path, suite, SectionEnd(suite))
		}
		out = append(append(append(out, page[:i]...), section...), page[i+j+len(end):]...)
	case len(page) == 0:
		out = section
	default:
		out = append(append(bytes.TrimRight(page, "\n"), '\n', '\n'), section...)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("write markdown page: %w", err)
	}
	return nil
}
