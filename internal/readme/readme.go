// Package readme reads the shell commands the README shows, so that tests
// can check or run them exactly as written.
package readme

import (
	"os"
	"path/filepath"
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
