// Package cli holds what quiver's commands, quiver and quiver-bench, share
// in reading a command line: the usage error that exits with status 2, and
// flags that may follow positional arguments.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// UsageError is a bad flag or argument: the command prints it on one line
// and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// NewFlagSet returns a FlagSet named name that reports errors instead of
// exiting, so that the caller can turn them into usage errors.
func NewFlagSet(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ContinueOnError)
}

// ParseFlags parses args into fs and returns the positional arguments. A
// bad flag is a *UsageError. Flags may follow positional arguments
// (quiver load a.parquet --table t). On -h it prints fs's flags to help
// and returns flag.ErrHelp.
func ParseFlags(fs *flag.FlagSet, args []string, help io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(help)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, Usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// Stdio is a command's standard streams. Commands take them from their
// caller, not from the os package, so that a test runs a command
// in-process with buffers, and several at once.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// OSStdio is the process's own standard streams.
func OSStdio() Stdio { return Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// IsTerminal reports whether a stream is a terminal; only an *os.File can
// be one.
func IsTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
