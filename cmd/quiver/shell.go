package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/filesio"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

func init() {
	register("shell", "an interactive SQL session over Flight SQL; from a pipe, runs a script", func() command { return &shellCmd{} })
}

// shellModes are the output modes of the shell: the result formats of
// quiver query that make sense one statement after another (parquet is a
// file format: use quiver query -o).
var shellModes = []string{"table", "csv", "json", "arrow"}

type shellCmd struct{}

// shellConfig is what a shell needs besides its connection.
type shellConfig struct {
	mode      string
	output    string // the first .output; "" is stdout
	maxRows   int
	writeMem  string
	history   string // "" keeps none
	keepGoing bool
}

func (shellCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	fs := newFlagSet("shell")
	var (
		cf          clientFlags
		sc          shellConfig
		compression string
		noHistory   bool
	)
	cf.register(fs)
	registerResultCompression(fs, &compression)
	fs.StringVar(&sc.mode, "mode", "table", "how results print: "+strings.Join(shellModes, ", ")+" (.mode changes it)")
	fs.StringVar(&sc.output, "o", "", "write results to this file instead of stdout (.output changes it)")
	fs.IntVar(&sc.maxRows, "max-rows", 100, "rows the table mode prints (the rest are counted)")
	fs.StringVar(&sc.writeMem, "write-memory", filesio.DefaultMemoryLimit, "memory the DuckDB that writes csv and json may use")
	fs.StringVar(&sc.history, "history", "", "file that keeps the statements typed at the prompt, created with mode 0600 (default $XDG_STATE_HOME/quiver/history, else ~/.local/state/quiver/history)")
	fs.BoolVar(&noHistory, "no-history", false, "keep no history file")
	fs.BoolVar(&sc.keepGoing, "keep-going", false, "in a script, go on after a failed statement (the exit status is still 1)")
	pos, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("quiver shell takes no arguments: type SQL at its prompt or pipe a script into it (quiver query runs one statement)")
	}
	if err := checkResultCompression(compression); err != nil {
		return err
	}
	if sc.history == "" {
		sc.history = defaultHistoryFile()
	}
	if noHistory {
		sc.history = ""
	}
	return runShell(ctx, std, &cf, compression, sc)
}

// queryShell is quiver query with no SQL on a terminal: the shell, with
// query's flags.
func queryShell(ctx context.Context, std cli.Stdio, cf *clientFlags, compression, format, out string, maxRows int, writeMem string) error {
	if err := checkResultCompression(compression); err != nil {
		return err
	}
	if format == "" {
		format = "table"
		if out != "" {
			var err error
			if format, err = client.OutputFormatOf(out); err != nil {
				return usagef("%v", err)
			}
		}
	}
	if format == "parquet" {
		return usagef("the shell prints table, csv, json or arrow; for a parquet file give the statement: quiver query -o FILE.parquet \"SELECT ...\"")
	}
	sc := shellConfig{mode: format, output: out, maxRows: maxRows, writeMem: writeMem, history: defaultHistoryFile()}
	return runShell(ctx, std, cf, compression, sc)
}

// runShell connects and reads statements from std.In: at a prompt when it
// is a terminal, else as a script.
func runShell(ctx context.Context, std cli.Stdio, cf *clientFlags, compression string, sc shellConfig) error {
	if !contains(shellModes, sc.mode) {
		return usagef("unknown mode %q: use %s", sc.mode, strings.Join(shellModes, ", "))
	}
	if _, err := admit.ParseBytes(sc.writeMem); err != nil {
		return usagef("--write-memory: %v", err)
	}
	cfg, err := cf.config()
	if err != nil {
		return err
	}
	cfg.Compression = compression
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return cf.serverError("connect", err)
	}
	defer c.Close()
	s := &session{
		c: c, cf: cf, mode: sc.mode, maxRows: sc.maxRows,
		wopts: []filesio.WriteOption{filesio.WithMemoryLimit(sc.writeMem)},
		out:   std.Out, errw: std.Err, std: std,
		cat: newCatalog(c),
	}
	defer s.closeOutput()
	defer s.endTransaction(ctx)
	if sc.output != "" {
		if err := s.setOutput(sc.output); err != nil {
			return err
		}
	}
	in, ok := std.In.(*os.File)
	if !ok || !cli.IsTerminal(in) {
		return s.script(ctx, std.In, sc.keepGoing)
	}
	s.interactive = true
	return s.prompt(ctx, sc.history, in)
}

// session is one shell's connection and settings.
type session struct {
	c       *client.Client
	cf      *clientFlags
	mode    string
	maxRows int
	wopts   []filesio.WriteOption
	// out is where results go: stdout, or outFile (.output).
	out     io.Writer
	outFile *os.File
	// outUsed is set once a result went to outFile: an Arrow IPC file
	// holds one result, so the arrow mode writes one per .output.
	outUsed bool
	errw    io.Writer
	std     cli.Stdio
	cat     *catalog
	// txn is the open transaction, which the statements run in.
	txn *client.Txn
	// interactive prints timings and keeps going after errors.
	interactive bool

	mu     sync.Mutex
	cancel context.CancelFunc // of the running statement, if any
}

// prompt reads statements at a prompt until Ctrl-D or .quit. Ctrl-C
// cancels the running statement; SIGTERM ends the shell.
func (s *session) prompt(ctx context.Context, historyFile string, in *os.File) error {
	// The verb's context ends at the first Ctrl-C; here Ctrl-C is for
	// the running statement only.
	ctx = context.WithoutCancel(ctx)
	restore, err := term.GetState(int(in.Fd()))
	if err != nil {
		return fmt.Errorf("read the terminal's mode: %w", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				s.interrupt()
				if sig == syscall.SIGTERM {
					// The line editor may hold the terminal in raw mode
					// and blocks on it: give the terminal back and go.
					term.Restore(int(in.Fd()), restore)
					os.Exit(128 + int(syscall.SIGTERM))
				}
			}
		}
	}()

	src, err := newLineSource(in, s.std, historyFile, s.cat, s.promptText)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.errw, "quiver shell: connected to %s. End statements with ';'. Type .help for commands, Ctrl-D to leave.\n", s.cf.server)
	var buf sqlBuffer
	for {
		text, err := src.next(buf.empty())
		switch {
		case errors.Is(err, errLineCanceled):
			buf.reset()
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(s.errw)
			return nil
		case err != nil:
			return err
		}
		quit, _ := s.feed(ctx, &buf, text)
		if quit {
			return nil
		}
	}
}

// script runs the statements read from in. It stops at the first failed
// statement (a non-nil error naming it) unless keepGoing, when it runs
// them all and fails at the end if any failed.
func (s *session) script(ctx context.Context, in io.Reader, keepGoing bool) error {
	src := newPlainSource(in)
	var buf sqlBuffer
	failed := 0
	var first error
	for {
		text, err := src.next(buf.empty())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the script: %w", err)
		}
		quit, err := s.feed(ctx, &buf, text)
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
			if !keepGoing {
				return err
			}
			fmt.Fprintf(s.errw, "quiver shell: %v\n", err)
		}
		if quit {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := s.runRest(ctx, &buf); err != nil {
		if !keepGoing || first == nil {
			first = err
		}
		failed++
	}
	switch {
	case failed == 1 && keepGoing:
		return fmt.Errorf("1 statement failed: %w", first)
	case failed > 1:
		return fmt.Errorf("%d statements failed; the first: %w", failed, first)
	}
	return first
}

// feed adds a line (or an editor's whole input) to buf and runs what it
// completes: a dot-command on a line of its own, or the statements up to
// the last ';'. It reports whether the user asked to quit, and the first
// failure, which the prompt has printed already.
func (s *session) feed(ctx context.Context, buf *sqlBuffer, text string) (quit bool, err error) {
	if buf.empty() {
		if cmd, ok := dotCommand(text); ok {
			line := buf.skipLines(text)
			quit, err := s.dot(ctx, cmd)
			if err != nil {
				return quit, s.failed(line, strings.TrimSpace(text), err)
			}
			return quit, nil
		}
	}
	buf.add(text)
	stmts, ok := buf.take()
	if !ok {
		return false, nil
	}
	return false, s.runAll(ctx, stmts)
}

// runRest runs what a script leaves after its last ';': a last statement
// without one runs, an open string or comment is an error.
func (s *session) runRest(ctx context.Context, buf *sqlBuffer) error {
	if buf.empty() {
		return nil
	}
	stmts, err := buf.rest()
	if err != nil {
		return err
	}
	return s.runAll(ctx, stmts)
}

// runAll runs statements in order; the first failure stops them.
func (s *session) runAll(ctx context.Context, stmts []bufferedStatement) error {
	for _, st := range stmts {
		if err := s.run(ctx, st.text); err != nil {
			return s.failed(st.line, st.text, err)
		}
	}
	return nil
}

// failed prints a failure at the prompt and returns it with its place in
// a script: the line a statement or dot-command starts on, and its text.
func (s *session) failed(line int, text string, err error) error {
	if s.interactive {
		fmt.Fprintf(s.errw, "Error: %v\n", err)
	}
	return &scriptError{line: line, text: text, err: err}
}

// scriptError is a failed statement or dot-command and where it is.
type scriptError struct {
	line int
	text string
	err  error
}

func (e *scriptError) Error() string {
	return fmt.Sprintf("line %d: %s: %v", e.line, abbreviate(e.text, 60), e.err)
}

func (e *scriptError) Unwrap() error { return e.err }

// abbreviate puts text on one line and cuts it to about n characters.
func abbreviate(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n]) + "…"
	}
	return text
}

// run runs one statement and prints its result in the session's mode.
// The statement can be canceled (Ctrl-C) while it runs or streams.
func (s *session) run(ctx context.Context, sql string) error {
	if v, err := transactionVerb(sql); err != nil || v != txnNone {
		if err != nil {
			return err
		}
		return s.transaction(ctx, v)
	}
	if s.mode == "arrow" {
		if s.outFile == nil && cli.IsTerminal(s.out) {
			return errors.New("the arrow mode writes binary: give .output FILE first")
		}
		if s.outFile != nil && s.outUsed {
			return errors.New("the arrow mode writes one result per file: give .output FILE again")
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
	}()
	if changesCatalog(sql) {
		defer s.cat.invalidate()
	}

	start := time.Now()
	var res *client.Result
	var err error
	if s.txn != nil {
		res, err = s.txn.Query(ctx, sql)
	} else {
		res, err = s.c.Query(ctx, sql)
	}
	if err != nil {
		return s.failure(ctx, err)
	}
	defer res.Release()
	src := &countingReader{RecordReader: res, prog: newFetchProgress(s.errw, true)}
	werr := writeResult(ctx, src, s.out, s.mode, s.maxRows, s.wopts...)
	if s.outFile != nil {
		s.outUsed = true
	}
	if rerr := res.Err(); rerr != nil {
		return s.failure(ctx, rerr)
	}
	if werr != nil {
		if ctx.Err() != nil {
			return s.failure(ctx, werr)
		}
		return fmt.Errorf("write %s: %w", s.mode, werr)
	}
	if s.interactive {
		if s.mode != "table" || s.outFile != nil {
			rows, _ := src.counts()
			fmt.Fprintf(s.errw, "(%s)\n", rowCount(rows))
		}
		fmt.Fprintf(s.errw, "Time: %s\n", roundDuration(time.Since(start)))
	}
	return nil
}

// failure explains a failed statement; one the user canceled says so.
func (s *session) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("canceled")
	}
	return s.cf.serverError("query", err)
}

// promptText is the prompt, which shows an open transaction.
func (s *session) promptText() string {
	if s.txn != nil {
		return shellTxnPrompt
	}
	return shellPrompt
}

// interrupt cancels the running statement, if any.
func (s *session) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
}

// setOutput sends results to the file at path (created or truncated), or
// back to stdout when path is empty.
func (s *session) setOutput(path string) error {
	if path == "" {
		s.closeOutput()
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("open output: %w", err)
	}
	s.closeOutput()
	s.out, s.outFile, s.outUsed = f, f, false
	return nil
}

func (s *session) closeOutput() {
	if s.outFile != nil {
		if err := s.outFile.Close(); err != nil {
			fmt.Fprintf(s.errw, "quiver shell: close %s: %v\n", s.outFile.Name(), err)
		}
		s.out, s.outFile = s.std.Out, nil
	}
}

// changesCatalog reports whether a statement may add, drop or change
// tables, so that completion reads the catalog again.
func changesCatalog(sql string) bool {
	words := duckdbsql.LeadingWords(sql, 1)
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "SELECT", "FROM", "WITH", "VALUES", "TABLE", "SHOW", "DESCRIBE", "SUMMARIZE", "EXPLAIN", "PRAGMA":
		return false
	}
	return true
}

// rowCount is "1 row" or "N rows".
func rowCount(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return humanCount(n) + " rows"
}

// roundDuration keeps a duration's three leading digits: 12.3ms, 1.23s.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
