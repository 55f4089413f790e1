package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/quiverdata/quiver/server"
)

// Keys as a terminal sends them.
const (
	keyEnter     = "\r"
	keyTab       = "\t"
	keyBackspace = "\x7f"
	keyDelete    = "\x1b[3~"
	keyLeft      = "\x1b[D"
	keyUp        = "\x1b[A"
	keyHome      = "\x01" // Ctrl-A
	keyEnd       = "\x05" // Ctrl-E
	keyCtrlC     = "\x03"
	keyCtrlD     = "\x04"
)

// ptyWait bounds every wait on the shell.
const ptyWait = 30 * time.Second

// ptyShell is the quiver CLI (this test binary) running on a
// pseudo-terminal, as a user at a terminal runs it.
type ptyShell struct {
	t    *testing.T
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	mark int // expect reads the screen text past this
	done chan struct{}
	err  error // of the process, once done is closed
}

// startPTY runs quiver args on a new pseudo-terminal, with HOME in a
// scratch directory and no inputrc of the user's.
func startPTY(t *testing.T, home string, args ...string) *ptyShell {
	t.Helper()
	return startPTYEnv(t, home, nil, args...)
}

// startPTYEnv is startPTY with more environment variables, which win
// over startPTY's own.
func startPTYEnv(t *testing.T, home string, env []string, args ...string) *ptyShell {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), asCLI+"=1", "TERM=xterm", "HOME="+home, "XDG_STATE_HOME=", "INPUTRC=/dev/null"), env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatalf("start %v on a pty: %v", args, err)
	}
	return watchPTY(t, cmd, tty, 0)
}

// watchPTY follows cmd, started with tty as its terminal: it keeps what
// the terminal receives and, at the test's end, gives the process grace
// to exit before killing it, then closes tty.
func watchPTY(t *testing.T, cmd *exec.Cmd, tty *os.File, grace time.Duration) *ptyShell {
	p := &ptyShell{t: t, tty: tty, done: make(chan struct{})}
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return // EIO once the process is gone
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		case <-time.After(grace):
			cmd.Process.Kill()
			<-p.done
		}
		tty.Close()
		<-reading
		if t.Failed() {
			t.Logf("the terminal showed:\n%s", p.screen())
		}
	})
	return p
}

// ansi matches the escape sequences the line editor draws with.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r`)

// screen is everything the terminal received, without escape sequences
// and carriage returns.
func (p *ptyShell) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ansi.ReplaceAllString(p.out.String(), "")
}

// send types keys.
func (p *ptyShell) send(keys ...string) {
	p.t.Helper()
	for _, k := range keys {
		if _, err := p.tty.Write([]byte(k)); err != nil {
			p.t.Fatalf("type %q: %v", k, err)
		}
	}
}

// expect waits for the screen to show want past what earlier expects
// found, and moves past it.
func (p *ptyShell) expect(want string) {
	p.t.Helper()
	deadline := time.Now().Add(ptyWait)
	for {
		s := p.screen()
		if i := strings.Index(s[min(p.mark, len(s)):], want); i >= 0 {
			p.mark += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal did not show %q in %v; past the last match it shows:\n%s", want, ptyWait, s[min(p.mark, len(s)):])
		}
		select {
		case <-p.done:
			if !strings.Contains(p.screen()[min(p.mark, len(s)):], want) {
				p.t.Fatalf("the shell ended (%v) before the terminal showed %q; it shows:\n%s", p.err, want, s[min(p.mark, len(s)):])
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rest is the screen past the last expect.
func (p *ptyShell) rest() string {
	s := p.screen()
	return s[min(p.mark, len(s)):]
}

// exit waits for the shell to end and checks it ended well.
func (p *ptyShell) exit() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(ptyWait):
		p.t.Fatalf("the shell did not end in %v", ptyWait)
	}
	if p.err != nil {
		p.t.Errorf("the shell ended with %v, want exit status 0", p.err)
	}
}

// prompt waits for a new prompt: the editor reads keys again. (Keys
// typed before it meet the terminal in its ordinary mode, as when a
// person types ahead.)
func (p *ptyShell) prompt() {
	p.t.Helper()
	p.expect("\n" + shellPrompt)
}

// do types a line and Enter, waits for the screen to show each of want in
// turn, and then for the next prompt.
func (p *ptyShell) do(line string, want ...string) {
	p.t.Helper()
	p.send(line, keyEnter)
	for _, w := range want {
		p.expect(w)
	}
	p.prompt()
}

// cancelInput types Ctrl-C at the prompt and waits for the new prompt.
// Keys that come in the same read as the Ctrl-C are lost to the editor,
// which a person cannot type that fast.
func (p *ptyShell) cancelInput() {
	p.t.Helper()
	p.send(keyCtrlC)
	p.expect("^C")
	p.prompt()
}

// runningQueries is how many statements hold a run slot on srv.
func runningQueries(srv *server.Server) int {
	st := srv.Admission.Stats()
	return st.Running[0] + st.Running[1]
}

// TestShell_Terminal types at quiver shell through a pseudo-terminal, as a
// user does, and checks what the shell runs and shows.
func TestShell_Terminal(t *testing.T) {
	srv, _ := shellServer(t)
	home := t.TempDir()
	shell := func(t *testing.T, args ...string) *ptyShell {
		p := startPTY(t, home, append([]string{"shell", "--server", srv.FlightAddr, "--history", filepath.Join(t.TempDir(), "history")}, args...)...)
		p.prompt()
		return p
	}

	t.Run("editing", func(t *testing.T) {
		p := shell(t)
		// Typed with two slips: a stray x in the number and a z at the
		// end. Backspace takes the z; left-arrow walks back to the x and
		// Delete takes it; the 2 goes in the middle; Home and End move.
		p.send("SELECT 4x AS answerz", keyBackspace)
		p.send(strings.Repeat(keyLeft, len("x AS answer")), keyDelete, "2")
		p.send(keyHome, "/* typed */ ", keyEnd, ";")
		p.do("", "answer\n------\n42\n(1 row)\nTime: ")
		noErrors(t, p)
	})

	t.Run("multi-line statement", func(t *testing.T) {
		p := shell(t)
		// Enter before the ';' goes on to a new line: had the shell run
		// "SELECT 6 *", it would have failed.
		p.send("SELECT 6 *", keyEnter, "7 AS product", keyEnter)
		p.do(";", "product\n-------\n42\n(1 row)\n")
		// A ';' in a string, a comment or a quoted name ends nothing.
		p.send("SELECT 'semi;", keyEnter, "colon' AS s -- ;", keyEnter, `, 1 AS "x;y"`, keyEnter)
		p.do(";", "semi;\ncolon", "(1 row)")
		noErrors(t, p)
	})

	t.Run("completion", func(t *testing.T) {
		p := shell(t)
		// Each Tab must complete the word: the statement fails otherwise.
		p.send("SELECT fare_a", keyTab, ", voyages.le", keyTab, " FROM voy", keyTab)
		p.do(" ORDER BY 2;", "fare_amount  leg\n", "(3 rows)")
		noErrors(t, p)
	})

	t.Run("completion sees new tables", func(t *testing.T) {
		p := shell(t)
		p.send("SELECT 1 FROM vo", keyTab) // reads the catalog
		p.expect("voyages")
		p.cancelInput()
		p.do("CREATE TABLE zeppelins (altitude INT);", "(1 row)")
		p.send("SELECT alti", keyTab, " FROM zep", keyTab)
		p.do(";", "altitude\n--------\n(0 rows)")
		noErrors(t, p)
	})

	t.Run("ctrl-c cancels the running statement", func(t *testing.T) {
		p := shell(t)
		p.send("SELECT count(*) FROM range(1000000000000);", keyEnter)
		deadline := time.Now().Add(ptyWait)
		for runningQueries(srv) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the statement did not start on the server in %v", ptyWait)
			}
			time.Sleep(10 * time.Millisecond)
		}
		p.send(keyCtrlC)
		p.expect("Error: canceled")
		p.prompt()
		// The server interrupted the statement: it gives its slot back,
		// where it would otherwise hold it for hours.
		for runningQueries(srv) > 0 || !srv.Admission.Idle() {
			if time.Now().After(deadline) {
				t.Fatalf("the server still runs the canceled statement after %v", ptyWait)
			}
			time.Sleep(10 * time.Millisecond)
		}
		p.do("SELECT 42 AS after_cancel;", "after_cancel\n------------\n42\n")
	})

	t.Run("ctrl-c clears the input", func(t *testing.T) {
		p := shell(t)
		p.send("SELECT nonsense", keyEnter, "FROM nowhere")
		p.cancelInput()
		p.do("SELECT 5 AS five;", "five\n----\n5\n")
		noErrors(t, p)
	})

	t.Run("transaction", func(t *testing.T) {
		p := shell(t)
		p.send("BEGIN;", keyEnter)
		p.expect("BEGIN\n" + shellTxnPrompt)
		p.send("CREATE TABLE balloons (i INT);", keyEnter)
		p.expect("(1 row)")
		p.expect("\n" + shellTxnPrompt)
		p.do("ROLLBACK;", "ROLLBACK")
		p.do("SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'balloons';", "n\n----\n0\n")
		noErrors(t, p)
	})

	t.Run("dot-commands", func(t *testing.T) {
		p := shell(t)
		out := filepath.Join(t.TempDir(), "legs.csv")
		p.do(".help", ".schema [TABLE]")
		p.do(".tables", "table_name", "voyages")
		p.do(".tables zep%", "zeppelins")
		p.do(".schema voyages", "CREATE TABLE main.voyages (\n  leg BIGINT,\n  fare_amount DECIMAL(21,1)\n);")
		p.do(".mode csv")
		p.do("SELECT leg FROM voyages ORDER BY leg;", "leg\n0\n1\n2\n(3 rows)\n")
		p.do(".mode json")
		p.do("SELECT leg FROM voyages ORDER BY leg LIMIT 1;", `{"leg":0}`)
		// Not "json\n": the prompt's wait needs the newline.
		p.do(".mode", "\njson")
		p.do(".mode csv")
		p.do(".output " + out)
		p.do("SELECT leg * 10 AS tens FROM voyages ORDER BY 1;", "(3 rows)")
		p.do(".output")
		p.do("SELECT 'back' AS here;", "here\nback\n")
		p.do(".mode arrow")
		p.do("SELECT 1;", "Error: the arrow mode writes binary: give .output FILE first")
		p.do(".mode table")
		p.do(".nonsense", "Error: unknown command .nonsense: see .help")
		p.send(".quit", keyEnter)
		p.exit()
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), "tens\n0\n10\n20\n"; got != want {
			t.Errorf("%s: got %q, want %q", out, got, want)
		}
	})

	t.Run("a terminal the editor cannot draw on", func(t *testing.T) {
		p := startPTYEnv(t, home, []string{"TERM=dumb"}, "shell", "--server", srv.FlightAddr, "--no-history")
		p.prompt()
		p.send("SELECT 6 *", keyEnter)
		p.expect("\n   " + shellMorePrompt)
		p.do("7 AS product;", "product\n-------\n42\n(1 row)\n")
		p.send(keyCtrlD)
		p.exit()
	})

	t.Run("ctrl-d exits", func(t *testing.T) {
		p := shell(t)
		p.send(keyCtrlD)
		p.exit()
	})

	t.Run("history", func(t *testing.T) {
		hist := filepath.Join(t.TempDir(), "state", "history")
		first := startPTY(t, home, "shell", "--server", srv.FlightAddr, "--history", hist)
		first.prompt()
		first.send("SELECT 1001 AS remembered,", keyEnter)
		first.do("2 AS two;", "remembered  two")
		first.do("SELECT 3 AS three;", "three\n-----\n3\n(1 row)")
		// Up-arrow recalls the last statement in the same session.
		first.send(keyUp)
		first.do("", "three\n-----\n3\n(1 row)")
		first.send(keyCtrlD)
		first.exit()
		st, err := os.Stat(hist)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("history file mode: got %v, want 0600", got)
		}

		// A new shell recalls the statements of the one before, a
		// multi-line one whole.
		second := startPTY(t, home, "shell", "--server", srv.FlightAddr, "--history", hist)
		second.prompt()
		second.send(keyUp, keyUp)
		second.do("", "remembered  two\n----------  ----\n1001        2\n")
		second.send(keyCtrlD)
		second.exit()

		// --no-history keeps nothing.
		before, err := os.ReadFile(hist)
		if err != nil {
			t.Fatal(err)
		}
		third := startPTY(t, home, "shell", "--server", srv.FlightAddr, "--history", hist, "--no-history")
		third.prompt()
		third.do("SELECT 'forgotten' AS f;", "f\n----\nforgotten\n(1 row)")
		third.send(keyCtrlD)
		third.exit()
		after, err := os.ReadFile(hist)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("--no-history changed the history file:\n%s", after)
		}
		if _, err := os.Stat(filepath.Join(home, ".local", "state", "quiver", "history")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--no-history made the default history file: %v", err)
		}
	})

	t.Run("quiver query with no SQL", func(t *testing.T) {
		p := startPTY(t, home, "query", "--server", srv.FlightAddr, "--format", "csv")
		p.prompt()
		p.do("SELECT 5 AS five;", "five\n5\n")
		p.send(keyCtrlD)
		p.exit()
		if _, err := os.Stat(filepath.Join(home, ".local", "state", "quiver", "history")); err != nil {
			t.Errorf("the default history file: %v", err)
		}

		// -o picks the mode from its extension, as for one statement.
		out := filepath.Join(t.TempDir(), "five.jsonl")
		p = startPTY(t, home, "query", "--server", srv.FlightAddr, "-o", out)
		p.prompt()
		p.do("SELECT 5 AS five;", "(1 row)")
		p.send(keyCtrlD)
		p.exit()
		if b, err := os.ReadFile(out); err != nil || string(b) != "{\"five\":5}\n" {
			t.Errorf("%s: got %q, %v, want {\"five\":5}", out, b, err)
		}

		// A parquet file is for one statement.
		p = startPTY(t, home, "query", "--server", srv.FlightAddr, "-o", filepath.Join(t.TempDir(), "x.parquet"))
		p.expect("quiver query: the shell prints table, csv, json or arrow")
		select {
		case <-p.done:
		case <-time.After(ptyWait):
			t.Fatalf("quiver query did not end in %v", ptyWait)
		}
		var ee *exec.ExitError
		if !errors.As(p.err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("quiver query -o x.parquet with no SQL: %v, want exit status 2", p.err)
		}
	})
}

// noErrors fails the test when the shell printed an error.
func noErrors(t *testing.T, p *ptyShell) {
	t.Helper()
	if s := p.screen(); strings.Contains(s, "Error") {
		t.Errorf("the shell printed an error:\n%s", s)
	}
}
