package segment

import (
	"fmt"
	"strings"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// PartitionKey is one level of an export's hive layout: a directory
// Name=value per distinct value of Expr over the exported rows.
type PartitionKey struct {
	// Name is the key, a plain identifier used as the directory prefix.
	Name string
	// Expr is the DuckDB SQL expression computing the value. Empty means
	// the column Name itself, which then lives only in the directory names,
	// as hive layouts do.
	Expr string
}

// DefaultPartition is the partitioning used when none is configured: one
// directory per UTC day of the Kafka record timestamp, dt=YYYY-MM-DD.
const DefaultPartition = "dt=strftime(_timestamp, '%Y-%m-%d')"

// ParsePartitionSpec parses a comma-separated list of partition keys. Each
// item is a column name, or name=SQL expression:
//
//	dt=strftime(_timestamp, '%Y-%m-%d'), hour=hour(_timestamp), country
//
// Commas inside parentheses or quotes do not split items. "none" or an
// empty spec means no partitioning.
func ParsePartitionSpec(spec string) ([]PartitionKey, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || strings.EqualFold(spec, "none") {
		return nil, nil
	}
	items, err := splitTopLevel(spec)
	if err != nil {
		return nil, fmt.Errorf("parse partition spec %q: %w", spec, err)
	}
	seen := map[string]bool{}
	keys := make([]PartitionKey, 0, len(items))
	for _, item := range items {
		item = strings.TrimSpace(item)
		var k PartitionKey
		if name, expr, ok := strings.Cut(item, "="); ok {
			k = PartitionKey{Name: strings.TrimSpace(name), Expr: strings.TrimSpace(expr)}
			if k.Expr == "" {
				return nil, fmt.Errorf("parse partition spec %q: key %q has an empty expression", spec, k.Name)
			}
		} else {
			k = PartitionKey{Name: item}
		}
		if !isIdent(k.Name) {
			return nil, fmt.Errorf("parse partition spec %q: %q is not a plain identifier (letters, digits, _)", spec, k.Name)
		}
		if seen[strings.ToLower(k.Name)] {
			return nil, fmt.Errorf("parse partition spec %q: key %q given twice", spec, k.Name)
		}
		seen[strings.ToLower(k.Name)] = true
		keys = append(keys, k)
	}
	return keys, nil
}

// splitTopLevel splits s at commas outside parentheses, strings and
// comments, which it reads as DuckDB does (duckdbsql.Lex): the items are
// DuckDB expressions.
func splitTopLevel(s string) ([]string, error) {
	toks, err := duckdbsql.Lex(s)
	if err != nil {
		return nil, err
	}
	var out []string
	depth, start := 0, 0
	for _, t := range toks {
		switch {
		case t.Is("("):
			depth++
		case t.Is(")"):
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ')' at %d", t.Pos)
			}
		case t.Is(",") && depth == 0:
			out = append(out, s[start:t.Pos])
			start = t.End
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced '('")
	}
	out = append(out, s[start:])
	for _, item := range out {
		if strings.TrimSpace(item) == "" {
			return nil, fmt.Errorf("empty item")
		}
	}
	return out, nil
}

// isIdent reports whether s is a plain SQL identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}
