package engine

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/quiverdata/quiver/auth"
)

// functionsTable is DuckDB's functions, classed by who may call them;
// its header says how to read and keep it.
//
//go:embed functions.txt
var functionsTable string

// FuncClass is who may call a function.
type FuncClass uint8

// The function classes of functions.txt.
const (
	// FuncRead is open to every role.
	FuncRead FuncClass = iota + 1
	// FuncWrite changes what a later statement of another user sees.
	FuncWrite
	// FuncAdmin reaches the server's state, its files or paths.
	FuncAdmin
	// FuncLake reads files: admin, or any role for files the lake
	// catalog planned for the statement.
	FuncLake
	// FuncBind is admin only, and DuckDB acts on it when it prepares a
	// statement (lists and opens files, binds SQL in a string), before
	// the check of the prepared statement runs: a non-admin's call of
	// one is refused before prepare.
	FuncBind
)

// Access is the least access a call of a function of the class needs,
// files aside (a FuncLake call of vouched-for files needs only read).
func (k FuncClass) Access() auth.Access {
	switch k {
	case FuncRead:
		return auth.AccessRead
	case FuncWrite:
		return auth.AccessWrite
	}
	return auth.AccessAdmin
}

// funcInfo is a function's class and, for a class other than read, why.
type funcInfo struct {
	class FuncClass
	why   string
}

// functions is functionsTable, read once.
var functions = mustParseFunctions(functionsTable)

// FunctionClass returns the class of DuckDB's function name (any case),
// why it is not open to everyone, and whether the table classes it.
func FunctionClass(name string) (FuncClass, string, bool) {
	f, ok := functions[strings.ToLower(name)]
	return f.class, f.why, ok
}

func mustParseFunctions(text string) map[string]funcInfo {
	m, err := parseFunctions(text)
	if err != nil {
		panic("engine: functions.txt: " + err.Error())
	}
	return m
}

// parseFunctions reads the table: [class] headers, then in [read]
// names separated by space, and in the other sections one "name: why"
// a line. # starts a comment.
func parseFunctions(text string) (map[string]funcInfo, error) {
	classes := map[string]FuncClass{"read": FuncRead, "write": FuncWrite, "admin": FuncAdmin, "lake": FuncLake, "bind": FuncBind}
	m := map[string]funcInfo{}
	var cur FuncClass
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "["):
			name := strings.TrimSuffix(strings.TrimPrefix(line, "["), "]")
			var ok bool
			if cur, ok = classes[name]; !ok {
				return nil, fmt.Errorf("line %d: unknown class %q", i+1, line)
			}
			continue
		case cur == 0:
			return nil, fmt.Errorf("line %d: a function before any [class]", i+1)
		}
		add := func(name, why string) error {
			if prev, dup := m[strings.ToLower(name)]; dup {
				return fmt.Errorf("line %d: %s is classed twice (%d and %d)", i+1, name, prev.class, cur)
			}
			m[strings.ToLower(name)] = funcInfo{class: cur, why: why}
			return nil
		}
		if cur == FuncRead {
			for _, name := range strings.Fields(line) {
				if err := add(name, ""); err != nil {
					return nil, err
				}
			}
			continue
		}
		name, why, ok := strings.Cut(line, ":")
		name, why = strings.TrimSpace(name), strings.TrimSpace(why)
		if !ok || name == "" || why == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("line %d: want \"name: why\", got %q", i+1, line)
		}
		if err := add(name, why); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ClassedFunctions returns the names functions.txt classes, sorted.
func ClassedFunctions() []string {
	names := make([]string, 0, len(functions))
	for name := range functions {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
