package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/quiverdata/quiver/internal/cli"
)

// asCLI, set in the environment, makes the test binary the quiver CLI, so
// that tests can run it as a user would without building it again.
const asCLI = "QUIVER_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(run(os.Args[1:], cli.OSStdio()))
	}
	os.Exit(m.Run())
}

// panicCmd panics, as a writer given data it cannot take once did.
type panicCmd struct{}

func (panicCmd) Run(context.Context, cli.Stdio, []string) error {
	var m map[string]int
	m["x"]++ // a nil map: a runtime error, not a panic of our own
	return nil
}

func TestRun_PanicIsAnError(t *testing.T) {
	register("test-panic", "panics", func() command { return panicCmd{} })
	t.Cleanup(func() { delete(commands, "test-panic") })
	code, _, errOut := runQuiver(t, "test-panic")
	if code != 1 {
		t.Errorf("exit status: got %d, want 1", code)
	}
	if !strings.HasPrefix(errOut, "quiver test-panic: stopped by a bug in quiver: assignment to entry in nil map;") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("stderr: got %q, want one line naming the panic", errOut)
	}
}

// TestHints_RunAsPrinted starts quiver serve as make run does
// (./bin/quiver from the repository's root), and as an installed quiver
// on the PATH, and runs the quiver command its hints print exactly as
// printed, through a shell.
func TestHints_RunAsPrinted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the CLI as a process")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(root, "bin", "quiver")); err != nil {
		t.Fatal(err)
	}
	path := os.Getenv("PATH")
	for _, tt := range []struct {
		name, prog, path, want string
	}{
		{"after make run", "./bin/quiver", path, "./bin/quiver query"},
		{"after make install", "quiver", filepath.Join(root, "bin") + string(os.PathListSeparator) + path, "quiver query"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := append(os.Environ(), asCLI+"=1", "PATH="+tt.path)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			serve := exec.CommandContext(ctx, tt.prog, "serve", "--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "", "--http", "")
			if tt.prog == "quiver" {
				serve = exec.CommandContext(ctx, "sh", "-c", `exec quiver serve --db :memory: --flight 127.0.0.1:0 --mysql "" --http ""`)
			}
			serve.Dir, serve.Env = root, env
			stderr, err := serve.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := serve.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				serve.Process.Signal(os.Interrupt)
				serve.Wait()
			})
			hint, shellHint := "", ""
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if cmd, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "quiver CLI : "); ok {
					hint = cmd
				}
				if cmd, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "SQL shell  : "); ok {
					shellHint = cmd
					break
				}
			}
			go func() { // keep the server's stderr flowing
				for sc.Scan() {
				}
			}()
			if !strings.HasPrefix(hint, tt.want) {
				t.Fatalf("hint: got %q, want it to start with %q", hint, tt.want)
			}
			run := exec.CommandContext(ctx, "sh", "-c", hint)
			run.Dir, run.Env = root, env
			out, err := run.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "42") {
				t.Errorf("%s: %v, output %q", hint, err, out)
			}
			// The shell's hint, given a script on stdin.
			run = exec.CommandContext(ctx, "sh", "-c", shellHint)
			run.Dir, run.Env, run.Stdin = root, env, strings.NewReader("SELECT 6 * 7 AS answer;\n")
			out, err = run.CombinedOutput()
			if !strings.HasPrefix(shellHint, strings.TrimSuffix(tt.want, "query")+"shell") || err != nil || !strings.Contains(string(out), "42") {
				t.Errorf("%q: %v, output %q", shellHint, err, out)
			}
		})
	}
}

// TestPrintUsage_Summaries checks the lines of quiver -h read alike: each
// summary starts in lower case and ends without a period.
func TestPrintUsage_Summaries(t *testing.T) {
	for _, name := range verbs() {
		s := commands[name].summary
		if s == "" || !unicode.IsLower([]rune(s)[0]) || strings.HasSuffix(s, ".") {
			t.Errorf("quiver %s: summary %q, want one starting in lower case, without a final period", name, s)
		}
	}
}
