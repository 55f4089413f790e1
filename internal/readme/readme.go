// Package readme reads the shell commands the README shows, so that tests
// can check or run them exactly as written.
package readme

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/testsvc"
)

// Commands returns the README's shell commands that start with
// prefix, continuation lines joined and trailing comments dropped.
func Commands(t testing.TB, prefix string) []string {
	t.Helper()
	// The README and the pages of docs/: every command in them runs in
	// a test as written.
	files, err := filepath.Glob(filepath.Join(testsvc.RepoRoot(t), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, f := range append([]string{filepath.Join(testsvc.RepoRoot(t), "README.md")}, files...) {
		page, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, page...), '\n')
	}
	var cmds []string
	inBlock, cur := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		if cur == "" && !strings.HasPrefix(line, prefix) {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cur += more + " "
			continue
		}
		cmds = append(cmds, strings.Join(strings.Fields(cur+line), " "))
		cur = ""
	}
	return cmds
}

// ShellWords splits a command line the way sh does for the README's
// commands: on blanks, with single and double quotes.
func ShellWords(t testing.TB, line string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'' || ch == '"':
			end := strings.IndexByte(line[i+1:], ch)
			if end < 0 {
				t.Fatalf("unbalanced quote in %s", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// Command is a shell command shown on a page: its text as Commands
// returns it, the page relative to the repository's root, and the line
// it starts on.
type Command struct {
	Text string
	Page string
	Line int
}

// programs are the first words that make a line of an untagged block a
// command; untagged blocks also hold output, URLs and configuration.
var programs = []string{"quiver", "quiver-bench", "make", "go", "mysql", "mysqldump"}

// Shell returns every shell command of the README and docs/*.md, as
// pageCommands finds them.
func Shell(t testing.TB) []Command {
	t.Helper()
	root := testsvc.RepoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []Command
	for _, f := range append([]string{filepath.Join(root, "README.md")}, files...) {
		page, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, pageCommands(filepath.ToSlash(rel), string(page))...)
	}
	return cmds
}

// pageCommands returns the shell commands of page: each line of a sh,
// bash or shell block that is not a comment, and each line of an untagged
// block that starts with the name of a program the docs run. Blocks
// tagged otherwise (python, toml, text) hold no commands.
func pageCommands(name, page string) []Command {
	var (
		cmds    []Command
		lang    string
		inBlock bool
		cur     string
		start   int
	)
	for i, line := range strings.Split(page, "\n") {
		if tag, ok := strings.CutPrefix(line, "```"); ok {
			inBlock, lang, cur = !inBlock, strings.TrimSpace(tag), ""
			continue
		}
		if !inBlock {
			continue
		}
		shell := lang == "sh" || lang == "bash" || lang == "shell"
		if cur == "" {
			first, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			switch {
			case first == "" || strings.HasPrefix(first, "#"):
				continue
			case !shell && (lang != "" || !slices.Contains(programs, first)):
				continue
			}
			start = i + 1
		}
		if j := strings.Index(line, " #"); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cur += more + " "
			continue
		}
		cmds = append(cmds, Command{Text: strings.Join(strings.Fields(cur+line), " "), Page: name, Line: start})
		cur = ""
	}
	return cmds
}
