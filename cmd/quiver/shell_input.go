package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/reeflective/readline"
	"github.com/reeflective/readline/inputrc"

	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// shellPrompt starts each statement; the editor indents the lines that
// continue it to the same column.
const shellPrompt = "quiver> "

// shellTxnPrompt is the prompt while a transaction is open.
const shellTxnPrompt = "quiver*> "

// shellMorePrompt ends the prompt of a line that continues a statement,
// where the line editor does not draw one.
const shellMorePrompt = "...> "

// lineSource reads the shell's input.
type lineSource interface {
	// next returns the next line, or the line editor's whole input
	// (which may span lines); fresh tells whether a statement is being
	// started. Ctrl-C at the prompt is errLineCanceled, the end of input
	// io.EOF.
	next(fresh bool) (string, error)
}

// errLineCanceled is Ctrl-C at the prompt: the input so far is dropped.
var errLineCanceled = errors.New("input canceled")

// newLineSource returns the line editor, with history and completion,
// when in and stdout are a terminal that can take its escape codes, else
// a reader of plain lines that prompts on stderr.
func newLineSource(in *os.File, std cli.Stdio, historyFile string, cat *catalog, prompt func() string) (lineSource, error) {
	if !cli.IsTerminal(std.Out) || os.Getenv("TERM") == "dumb" {
		return &promptedSource{plainSource: newPlainSource(in), w: std.Err, prompt: prompt}, nil
	}
	rl := readline.NewShell(inputrc.WithApp("quiver"))
	// The probe asks the terminal where the cursor is and waits for an
	// answer that some terminals never send; the prompt always starts a
	// line here, so its width says the same.
	for name, v := range map[string]any{
		"cursor-position-probe":  false,
		"completion-ignore-case": true,
		// Tab completes what the candidates share and lists them; Tab
		// again steps through them (bash's way, not zsh's).
		"menu-complete-display-prefix": true,
	} {
		if err := rl.Config.Set(name, v); err != nil {
			return nil, fmt.Errorf("set up the line editor: %w", err)
		}
	}
	// The editing keys of common terminals, which GNU readline finds in
	// the terminal's description or /etc/inputrc, and this editor only in
	// an inputrc; one that binds them wins.
	emacs := rl.Config.Binds["emacs"]
	for seq, action := range map[string]string{
		`\e[3~`: "delete-char",
		`\e[H`:  "beginning-of-line", `\eOH`: "beginning-of-line", `\e[1~`: "beginning-of-line",
		`\e[F`: "end-of-line", `\eOF`: "end-of-line", `\e[4~`: "end-of-line",
		`\e[1;5C`: "forward-word", `\e[1;5D`: "backward-word",
	} {
		if _, bound := emacs[inputrc.Unescape(seq)]; !bound && emacs != nil {
			emacs[inputrc.Unescape(seq)] = inputrc.Bind{Action: action}
		}
	}
	rl.Prompt.Primary(prompt)
	rl.AcceptMultiline = inputComplete
	rl.Completer = func(line []rune, cursor int) readline.Completions {
		word, cands := cat.complete(string(line), cursor)
		comps := readline.CompleteValues(cands...)
		comps.PREFIX = word
		return comps
	}
	if historyFile != "" {
		h, err := openHistory(historyFile)
		if err != nil {
			fmt.Fprintf(std.Err, "quiver shell: %v; the history of this session will not be kept\n", err)
		} else {
			rl.History.Delete()
			rl.History.Add("quiver", h)
		}
	}
	return &editorSource{rl: rl}, nil
}

// editorSource is the line editor: Enter inserts a new line until the
// input ends a statement, and up-arrow recalls whole statements.
type editorSource struct{ rl *readline.Shell }

func (e *editorSource) next(bool) (string, error) {
	line, err := e.rl.Readline()
	if errors.Is(err, readline.ErrInterrupt) {
		return "", errLineCanceled
	}
	return line, err
}

// inputComplete reports whether the editor's input is ready to run: a
// dot-command, statements whose last ends with ';', or nothing to run. A
// ';' in a string, a quoted name, a comment or a dollar-quoted string
// ends nothing: the input is read with DuckDB's lexer.
func inputComplete(line []rune) bool {
	text := string(line)
	if _, ok := dotCommand(text); ok {
		return true
	}
	toks, err := duckdbsql.Lex(text)
	if err != nil {
		return false // an open string, quoted name or comment
	}
	return len(toks) == 0 || toks[len(toks)-1].Is(";")
}

// openHistory opens the history file at path, creating it (mode 0600, in
// a directory of mode 0700) when it is missing. Each statement is one
// JSON line in it.
func openHistory(path string) (readline.History, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create history directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	f.Close()
	h, err := readline.NewHistoryFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return h, nil
}

// defaultHistoryFile is where the shell keeps its history when --history
// does not say: $XDG_STATE_HOME/quiver/history, else
// ~/.local/state/quiver/history (the XDG default). "" when there is no
// home directory.
func defaultHistoryFile() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "quiver", "history")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "state", "quiver", "history")
}

// plainSource reads lines, for scripts and for terminals without the
// line editor.
type plainSource struct{ r *bufio.Reader }

func newPlainSource(in io.Reader) *plainSource { return &plainSource{r: bufio.NewReader(in)} }

func (p *plainSource) next(bool) (string, error) {
	line, err := p.r.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	line = strings.TrimSuffix(line, "\n")
	return strings.TrimSuffix(line, "\r"), nil
}

// promptedSource reads plain lines at a terminal the line editor cannot
// draw on (TERM=dumb, or stdout not a terminal), and writes the prompt
// itself: the shell's, or one that says the statement goes on.
type promptedSource struct {
	*plainSource
	w      io.Writer
	prompt func() string
}

func (p *promptedSource) next(fresh bool) (string, error) {
	pr := p.prompt()
	if !fresh {
		pr = strings.Repeat(" ", len(pr)-len(shellMorePrompt)) + shellMorePrompt
	}
	fmt.Fprint(p.w, pr)
	return p.plainSource.next(fresh)
}

// dotCommand splits a line that is a dot-command (.tables, .mode csv)
// into its words.
func dotCommand(text string) ([]string, bool) {
	t := strings.TrimSpace(text)
	if len(t) < 2 || t[0] != '.' || !(t[1] >= 'a' && t[1] <= 'z' || t[1] >= 'A' && t[1] <= 'Z') || strings.ContainsAny(t, "\n\r") {
		return nil, false
	}
	return strings.Fields(t), true
}

// sqlBuffer gathers input until it holds whole statements, and keeps the
// line each starts on.
type sqlBuffer struct {
	text string
	// start is the line text starts on, next the line fed next; both
	// count from 1 once input arrives.
	start, next int
}

// bufferedStatement is one statement to run and the line it starts on.
type bufferedStatement struct {
	text string
	line int
}

// empty reports whether the buffer holds nothing to run: no input, or
// only white space and comments.
func (b *sqlBuffer) empty() bool {
	if strings.TrimSpace(b.text) == "" {
		return true
	}
	toks, err := duckdbsql.Lex(b.text)
	return err == nil && len(toks) == 0
}

// reset drops the buffered input.
func (b *sqlBuffer) reset() { b.text = "" }

// skipLines counts the lines of input that bypass the buffer (a
// dot-command) and returns the line it starts on.
func (b *sqlBuffer) skipLines(text string) int {
	b.reset()
	if b.next == 0 {
		b.next = 1
	}
	line := b.next
	b.next += strings.Count(text, "\n") + 1
	return line
}

// add appends input, which ends a line.
func (b *sqlBuffer) add(text string) {
	if b.next == 0 {
		b.next = 1
	}
	if b.empty() {
		b.text, b.start = "", b.next
	}
	b.text += text + "\n"
	b.next += strings.Count(text, "\n") + 1
}

// take returns the buffered statements when the last of them ends with
// ';', and empties the buffer.
func (b *sqlBuffer) take() ([]bufferedStatement, bool) {
	toks, err := duckdbsql.Lex(b.text)
	if err != nil || len(toks) == 0 || !toks[len(toks)-1].Is(";") {
		return nil, false
	}
	stmts, err := b.split()
	if err != nil {
		return nil, false
	}
	b.reset()
	return stmts, true
}

// rest returns what is left at the end of the input: statements whose
// last lacks its ';', or an error for an open string or comment.
func (b *sqlBuffer) rest() ([]bufferedStatement, error) {
	stmts, err := b.split()
	b.reset()
	if err != nil {
		return nil, fmt.Errorf("line %d: the input ends inside a statement: %w", b.start, err)
	}
	return stmts, nil
}

// split cuts the buffer into statements, each from its first token to
// its last, without comments around it or its ';'.
func (b *sqlBuffer) split() ([]bufferedStatement, error) {
	parts, err := duckdbsql.Split(b.text)
	if err != nil {
		return nil, err
	}
	var out []bufferedStatement
	for _, p := range parts {
		if len(p.Tokens) == 0 {
			continue
		}
		first, last := p.Tokens[0], p.Tokens[len(p.Tokens)-1]
		out = append(out, bufferedStatement{
			text: b.text[first.Pos:last.End],
			line: b.start + strings.Count(b.text[:first.Pos], "\n"),
		})
	}
	return out, nil
}
