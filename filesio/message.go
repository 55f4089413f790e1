package filesio

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/quiverdata/quiver/engine"
)

// maxLine caps each line of a DuckDB message, maxMessage the whole: an
// "Original Line" can be a whole CSV row, and the reason it failed
// follows it.
const (
	maxLine    = 200
	maxMessage = 500
)

// duckErr turns an error from DuckDB into one line: DuckDB's messages
// run over many lines of advice on its own SQL options (sample_size,
// ignore_errors, …) and the statement quiver wrote, which mean nothing
// to a quiver user. What stays is what failed, where, and the value. An
// interrupted statement is ctx's error.
func duckErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && engine.KindOf(err) == engine.KindCanceled {
		return cerr
	}
	var ee *engine.Error
	if !errors.As(err, &ee) {
		return errors.New(duckMessage(err.Error()))
	}
	return &engine.Error{Kind: ee.Kind, Msg: duckMessage(ee.Msg)}
}

// cuts end the part of a DuckDB message worth showing.
var cuts = []string{
	"\nPossible fixes", "\nPossible Solution", "\nPossible solutions", "\nTry increasing", "\nTry setting",
	"\nColumn ", "\nThis type was", "\n  file = ", "\nLINE 1:",
}

// pendingFailed starts DuckDB's message for an error raised while a
// streaming query runs (error() in quiver's casts); the real one follows.
const pendingFailed = "Attempting to execute an unsuccessful or closed pending query result\nError: "

func duckMessage(msg string) string {
	if i := strings.Index(msg, pendingFailed); i >= 0 {
		msg = msg[i+len(pendingFailed):]
	}
	for _, c := range cuts {
		if i := strings.Index(msg, c); i >= 0 {
			msg = msg[:i]
		}
	}
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, capText(line, maxLine))
		}
	}
	return capText(strings.Join(parts, "; "), maxMessage)
}

// capText cuts s to at most n bytes, on a character's start, marking the
// cut with an ellipsis.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
