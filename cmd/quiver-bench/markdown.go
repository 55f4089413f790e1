package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/version"
)

// markdownUsage is --markdown's help: one page holds a section per suite,
// and running a suite again replaces its own section and nothing else.
const markdownUsage = "also write the report as a Markdown section (heading, date, machine, quiver version, this command line, the tables, and the --plot image linked relative to the page) into this file: " +
	"the suite's section there is replaced, or appended when the file has none"

// writeMarkdown puts rep's section into the --markdown page, headed by the
// command line that produced it.
func writeMarkdown(rep *report.Report, b *suiteRun, args []string) error {
	h := report.MarkdownHeader{
		Summary: suites[b.name].summary,
		Command: commandLine(args),
		Version: version.Get().Short(),
	}
	if b.plot != "" {
		plot, err := relativeTo(b.markdown, b.plot)
		if err != nil {
			return err
		}
		h.Plot = plot
	}
	var sec bytes.Buffer
	if err := rep.WriteMarkdown(&sec, h); err != nil {
		return err
	}
	return report.UpdateMarkdown(b.markdown, b.name, sec.Bytes())
}

// relativeTo is the path of file as a link on page: relative to the page's
// folder.
func relativeTo(page, file string) (string, error) {
	dir, err := filepath.Abs(filepath.Dir(page))
	if err != nil {
		return "", fmt.Errorf("markdown page: %w", err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("plot: %w", err)
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return "", fmt.Errorf("link the plot from the markdown page: %w", err)
	}
	return filepath.ToSlash(rel), nil
}

// commandLine is quiver-bench's arguments as a user types them, the binary
// named quiver-bench wherever it was run from, and each word that the
// shell would split or expand in single quotes.
func commandLine(args []string) string {
	words := []string{"quiver-bench"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}
