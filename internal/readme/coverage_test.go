package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/testsvc"
)

// runner is a test, or a CI script, that runs some of the pages' shell
// commands exactly as written: every command for which runs is true.
type runner struct {
	// pkg is the test's package directory, or "" for a script.
	pkg string
	// name is the test function, or the script's path.
	name string
	runs func(cmd string) bool
}

func prefix(p string) func(string) bool {
	return func(c string) bool { return strings.HasPrefix(c, p) }
}

// runners are what runs the pages' commands, each entry the same choice
// of commands its test makes from readme.Commands. A command that only
// parses in a test is not listed here.
var runners = []runner{
	{"cmd/quiver-bench", "TestBenchPage_CommandsRun", prefix("quiver-bench ")},
	{"", ".ci/run", func(c string) bool { return c == "make run" || c == "make test" }},
	{"cmd/quiver", "TestReadme_InstallAsWritten", prefix("make install")},
	{"cmd/quiver", "TestReadme_ServeDemoAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver serve ") && strings.Contains(c, " --demo") && !strings.Contains(c, "--flight")
	}},
	{"cmd/quiver", "TestReadme_LoadAndQueryAsWritten", func(c string) bool {
		return (strings.HasPrefix(c, "quiver load ") || strings.HasPrefix(c, "quiver query ")) && !strings.Contains(c, "--server")
	}},
	{"cmd/quiver", "TestReadme_ShellAsWritten", prefix("quiver shell")},
	{"cmd/quiver", "TestReadme_IngestAsWritten", prefix("quiver ingest --brokers 127.0.0.1:9092 ")},
	{"cmd/quiver", "TestReadme_LakeOpsAsWritten", prefix("quiver lake ")},
	{"cmd/quiver", "TestReadme_UsersAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver user ") || strings.HasPrefix(c, "quiver serve ") && strings.Contains(c, "--users-file")
	}},
	{"cmd/quiver", "TestReadme_OperationsAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver version") || strings.HasPrefix(c, "quiver serve --config")
	}},
	{"cmd/quiver", "TestReadme_MySQLToolsAsWritten", func(c string) bool {
		return (strings.HasPrefix(c, "mysql ") || strings.HasPrefix(c, "mysqldump ")) && strings.Contains(c+" ", " -h 127.0.0.1 -P 9030 -u admin -p ")
	}},
	{"cmd/quiver", "TestReadme_MySQLDumpIntoMariaDBAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "mysql ") && strings.Contains(c, "-h db.example")
	}},
	{"cmd/quiver", "TestReadme_BackupsAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver backup ") || strings.HasPrefix(c, "quiver restore ") || strings.Contains(c, "127.0.0.1:31381")
	}},
	{"cmd/quiver", "TestReadme_ServeRolesAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver serve") && strings.Contains(c, "--role")
	}},
	{"cmd/quiver", "TestReadme_LimitsAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver serve") && strings.Contains(c, "--max-running")
	}},
	{"cmd/quiver", "TestReadme_ExportAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver serve") && strings.Contains(c, "--export-root") || strings.HasPrefix(c, "quiver query --server 127.0.0.1:31361")
	}},
	{"cmd/quiver", "TestReadme_LakeReplicasAsWritten", func(c string) bool {
		return strings.HasPrefix(c, "quiver serve") && strings.Contains(c, "--lake file:///tmp/quiver-lake") || strings.HasPrefix(c, "quiver query --server 127.0.0.1:3134")
	}},
}

// notRun are the commands no test runs, each with the reason. Keep it
// short: a command belongs here only when running it needs what no CI
// stage has.
var notRun = map[string]string{}

// TestDocs_EveryCommandRuns fails for each shell command of the README
// and docs/*.md that no runner runs, naming the page and line; and for a
// runner that is not where the table says or does not read the pages'
// commands, and for an entry of notRun that the pages no longer show or a
// runner now runs.
func TestDocs_EveryCommandRuns(t *testing.T) {
	cmds := Shell(t)
	if len(cmds) < 50 {
		t.Fatalf("found %d shell commands on the pages, want the README's and docs' 50 or more", len(cmds))
	}
	root := testsvc.RepoRoot(t)
	shown := map[string]bool{}
	for _, c := range cmds {
		shown[c.Text] = true
		var by []string
		for _, r := range runners {
			if r.runs(c.Text) {
				by = append(by, r.name)
			}
		}
		why, skipped := notRun[c.Text]
		switch {
		case len(by) == 0 && !skipped:
			t.Errorf("%s:%d: no test runs %q: run it as written in a test and add the test to runners", c.Page, c.Line, c.Text)
		case len(by) > 0 && skipped:
			t.Errorf("%s:%d: %q is in notRun (%s) but %s runs it", c.Page, c.Line, c.Text, why, strings.Join(by, ", "))
		}
	}
	for c := range notRun {
		if !shown[c] {
			t.Errorf("notRun lists %q, which no page shows", c)
		}
	}
	for _, r := range runners {
		if r.pkg == "" {
			checkScript(t, root, r)
			continue
		}
		if !readsCommands(t, filepath.Join(root, r.pkg), r.name) {
			t.Errorf("runner %s.%s: no such test reading the pages through readme.Commands", r.pkg, r.name)
		}
	}
}

// checkScript checks that the script runs each command of the pages its
// runner claims, as a line of its own.
func checkScript(t *testing.T, root string, r runner) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, r.name))
	if err != nil {
		t.Errorf("runner %s: %v", r.name, err)
		return
	}
	for _, c := range Shell(t) {
		if !r.runs(c.Text) {
			continue
		}
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			found = found || !strings.HasPrefix(line, "#") && (line == c.Text || strings.Contains(" "+line+" ", " "+c.Text+" "))
		}
		if !found {
			t.Errorf("runner %s runs no %q", r.name, c.Text)
		}
	}
}

// readsCommands reports whether a _test.go file of dir declares the test
// function name and calls readme.Commands in it.
func readsCommands(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != name || fn.Body == nil {
				continue
			}
			calls := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "readme" && sel.Sel.Name == "Commands" {
						calls = true
					}
				}
				return !calls
			})
			return calls
		}
	}
	return false
}

// TestPageCommands_Blocks checks which lines of a page's fenced blocks
// are shell commands, and how a command is joined and trimmed.
func TestPageCommands_Blocks(t *testing.T) {
	for _, tc := range []struct {
		name, page string
		want       []Command
	}{
		{"sh block", "text\n```sh\nquiver version   # prints it\n# a comment\nls -l\n```\n",
			[]Command{{"quiver version", "p.md", 3}, {"ls -l", "p.md", 5}}},
		{"continued lines", "```sh\nquiver serve \\\n   --db x \\\n   --demo\n```\n",
			[]Command{{"quiver serve --db x --demo", "p.md", 2}}},
		{"untagged block: programs only", "```\nmysql -h h -p\njdbc:arrow-flight-sql://h:1\nspark.x=y\n```\n",
			[]Command{{"mysql -h h -p", "p.md", 2}}},
		{"text and python blocks", "```text\nquiver is ready\n```\n```python\nquiver = 1\n```\n", nil},
		{"outside blocks", "quiver version\n`quiver version`\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pageCommands("p.md", tc.page)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("command %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
