package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/quiverdata/quiver/internal/cli"
)

// referenceFile is where the CLI reference lives in the repository,
// written by quiver help --markdown and checked by a test.
const referenceFile = "docs/cli.md"

// referencePage is one section of the CLI reference: a command line
// whose flags are read by running it with -h.
type referencePage struct {
	// title follows "quiver" in the heading; args follow the verb.
	title string
	args  []string
	// text, when set, stands for the flags: where to find them.
	text string
}

// referencer is a verb whose flags depend on its first argument (an
// operation or a suite): it lists the pages of the reference it needs.
type referencer interface {
	reference() []referencePage
}

// flagsShown, when set, receives the FlagSet of a verb run with -h
// instead of it being printed; the reference reads the flags so.
var flagsShown func(*flag.FlagSet)

// runHelp is quiver help: the usage, a verb's flags (help VERB), or the
// whole reference as Markdown (help --markdown).
func runHelp(args []string, std cli.Stdio) int {
	w := std.Err
	switch {
	case len(args) == 0:
		printUsage(w)
		return 0
	case len(args) == 1 && args[0] == "--markdown":
		if err := writeReference(std.Out); err != nil {
			fmt.Fprintf(w, "quiver help: %v\n", err)
			return 1
		}
		return 0
	case len(args) == 1:
		if _, ok := commands[args[0]]; ok {
			return run([]string{args[0], "-h"}, std)
		}
	}
	fmt.Fprintf(w, "quiver help: give a command (%s) or --markdown\n", strings.Join(verbs(), ", "))
	return 2
}

// writeReference writes the CLI reference: each verb's summary and, for
// it and each of its operations, every flag with its argument, default
// and meaning. Defaults are the built-in ones: a flag that takes its
// default from the environment (QUIVER_SERVER) shows what it is without.
func writeReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("The flags of every `quiver` command, written by `quiver help --markdown` from\n")
	b.WriteString("the commands' own flag definitions; a test fails when this page differs from\n")
	b.WriteString("what the code would write. `quiver COMMAND -h` prints the same on a terminal\n")
	b.WriteString("(`quiver lake gc -h` for an operation's).\n")
	b.WriteString("Flags take one dash or two, and may follow the arguments.\n\n")
	for _, name := range verbs() {
		b.WriteString("## quiver " + name + "\n\n")
		b.WriteString(sentence(commands[name].summary) + "\n\n")
		pages := []referencePage{{title: name}}
		if r, ok := commands[name].new().(referencer); ok {
			pages = r.reference()
		}
		for _, p := range pages {
			if len(pages) > 1 || p.title != name {
				b.WriteString("### quiver " + p.title + "\n\n")
			}
			if p.text != "" {
				b.WriteString(p.text + "\n\n")
				continue
			}
			fs, err := verbFlags(name, p.args)
			if err != nil {
				return err
			}
			writeFlags(&b, fs)
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// verbFlags runs verb args -h and returns the FlagSet it parsed.
func verbFlags(verb string, args []string) (*flag.FlagSet, error) {
	var got *flag.FlagSet
	flagsShown = func(fs *flag.FlagSet) { got = fs }
	defer func() { flagsShown = nil }()
	line := append(append([]string{verb}, args...), "-h")
	err := commands[verb].new().Run(context.Background(), cli.Stdio{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, line[1:])
	if got == nil || !errors.Is(err, flag.ErrHelp) {
		return nil, fmt.Errorf("quiver %s shows no flags (%v)", strings.Join(line, " "), err)
	}
	return got, nil
}

// writeFlags lists fs's flags: name, argument, default, meaning.
func writeFlags(b *strings.Builder, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		arg, usage := flag.UnquoteUsage(f)
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		b.WriteString("- `" + dashes + f.Name)
		if arg != "" {
			b.WriteString(" " + arg)
		}
		b.WriteString("`")
		if !zeroDefault(f) {
			b.WriteString(" (default `" + f.DefValue + "`)")
		}
		b.WriteString(": " + sentence(strings.Join(strings.Fields(usage), " ")) + "\n")
	})
	if n == 0 {
		b.WriteString("No flags.\n")
	}
	b.WriteString("\n")
}

// zeroDefault reports whether f's default is its type's zero value,
// which -h does not print either.
func zeroDefault(f *flag.Flag) bool {
	return slices.Contains([]string{"", "0", "false", "0s"}, f.DefValue)
}

// sentence starts s with a capital and ends it with a period.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
