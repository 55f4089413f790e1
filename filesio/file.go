package filesio

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
)

// file is one file of a Reader and how it is read.
type file struct {
	path   string
	format Format
	size   int64
	sample int // sample_size for CSV and NDJSON
	// maxLine is max_line_size for CSV (0: DuckDB's).
	maxLine int64

	// names are the file's columns as read; types their DuckDB types
	// (nil for Arrow files, whose schema is arrow).
	names []string
	types []string
	arrow *arrow.Schema

	// csvTypes, when set, are the types read_csv parses the columns as.
	csvTypes map[string]string
	// sql reads a file DuckDB reads; cols picks an Arrow file's column
	// for each column of the schema (nil: as they are).
	sql  string
	cols []int
}

// columns are the schema every file is read with.
type columns struct {
	names []string
	// types are DuckDB types; nil when an Arrow file set the schema.
	types  []string
	schema *arrow.Schema
}

// scan is the table function that reads f, for DuckDB's formats.
func (f *file) scan() string {
	path := engine.QuoteString(f.path)
	switch f.format {
	case FormatCSV:
		// The first line is the header, as it always was for quiver:
		// DuckDB's sniffer could otherwise take a file's first rows for
		// a preamble and skip them.
		s := fmt.Sprintf("read_csv(%s, header = true, skip = 0, sample_size = %d%s", path, f.sample, f.lineOption())
		if len(f.csvTypes) > 0 {
			s += ", types = {"
			i := 0
			for _, name := range f.names {
				if t, ok := f.csvTypes[name]; ok {
					if i > 0 {
						s += ", "
					}
					s += engine.QuoteString(name) + ": " + engine.QuoteString(t)
					i++
				}
			}
			s += "}"
		}
		return s + ")"
	case FormatNDJSON:
		return fmt.Sprintf("read_json(%s, sample_size = %d)", path, f.sample)
	case FormatParquet:
		return fmt.Sprintf("read_parquet(%s)", path)
	}
	panic("filesio: no DuckDB scan for " + f.format.String())
}

// lineOption is read_csv's option for maxLine, with a leading comma, or
// nothing.
func (f *file) lineOption() string {
	if f.maxLine <= 0 {
		return ""
	}
	return fmt.Sprintf(", max_line_size = %d", f.maxLine)
}

// fit plans how f is read with the columns t, which came from the file
// at from: by name, in t's order, cast to t's DuckDB types when it has
// them, and with no integer rounded (wholeCast).
func (f *file) fit(t *columns, from string) error {
	for _, name := range f.names {
		if !slices.Contains(t.names, name) {
			return fmt.Errorf("column %q is not a column of %s (%s); every file must share one schema", name, from, strings.Join(t.names, ", "))
		}
	}
	if f.format == FormatArrow {
		return f.fitArrow(t, from)
	}
	sel := make([]string, len(t.names))
	for i, name := range t.names {
		q := engine.QuoteIdent(name)
		j := slices.Index(f.names, name)
		if j < 0 {
			switch {
			case f.format != FormatNDJSON:
				return fmt.Errorf("no column %q, which %s has; every file must share one schema", name, from)
			case t.types == nil:
				sel[i] = "NULL AS " + q
			default:
				sel[i] = "CAST(NULL AS " + t.types[i] + ") AS " + q
			}
			continue
		}
		have, want := f.types[j], f.types[j]
		if t.types != nil {
			want = t.types[i]
		}
		switch {
		case f.format == FormatCSV && intTypes[want]:
			f.setCSVType(name, "VARCHAR")
			sel[i] = wholeCast(q, name, "VARCHAR", want) + " AS " + q
		case have == want:
			sel[i] = q
		case f.format == FormatCSV:
			f.setCSVType(name, want) // parsed as the type: errors give the line
			sel[i] = q
		case intTypes[want]:
			sel[i] = wholeCast(q, name, have, want) + " AS " + q
		default:
			sel[i] = "CAST(" + q + " AS " + want + ") AS " + q
		}
	}
	f.sql = "SELECT " + strings.Join(sel, ", ") + " FROM " + f.scan()
	return nil
}

func (f *file) setCSVType(name, typ string) {
	if f.csvTypes == nil {
		f.csvTypes = map[string]string{}
	}
	f.csvTypes[name] = typ
}

// intTypes are DuckDB's integer types. DuckDB rounds when it casts a
// fraction to one, from text too ('3.5'::BIGINT is 4), and its CSV and
// JSON readers parse integers with those casts: a value with a fraction
// after the sample the sniffer typed a column from would be rounded.
var intTypes = map[string]bool{
	"TINYINT": true, "SMALLINT": true, "INTEGER": true, "BIGINT": true, "HUGEINT": true,
	"UTINYINT": true, "USMALLINT": true, "UINTEGER": true, "UBIGINT": true, "UHUGEINT": true,
}

// wholeCast casts the column q, of DuckDB type from, to the integer type
// to, failing on a value with a fraction instead of rounding it. A number
// written with a point or an exponent is refused, as DuckDB's sniffer
// refuses it for an integer column; other text fails the cast itself.
func wholeCast(q, name, from, to string) string {
	var frac string
	switch {
	case from == "VARCHAR":
		frac = fmt.Sprintf("(contains(%[1]s, '.') OR contains(%[1]s, 'e') OR contains(%[1]s, 'E')) AND TRY_CAST(%[1]s AS DOUBLE) IS NOT NULL", q)
	case from == "FLOAT" || from == "DOUBLE" || strings.HasPrefix(from, "DECIMAL"):
		frac = fmt.Sprintf("%[1]s <> trunc(%[1]s)", q)
	default:
		return "CAST(" + q + " AS " + to + ")"
	}
	msg := engine.QuoteString(fmt.Sprintf("column %q: %%s is not a whole number, and the column is %s", name, to))
	return fmt.Sprintf("CASE WHEN %s THEN error(printf(%s, %s::VARCHAR)) ELSE CAST(%s AS %s) END", frac, msg, q, q, to)
}

// fitArrow maps an Arrow file's columns onto t: arrow-go reads them as
// they are, so their types must be t's.
func (f *file) fitArrow(t *columns, from string) error {
	f.cols = make([]int, len(t.names))
	fields := make([]arrow.Field, len(t.names))
	for i, name := range t.names {
		j := slices.Index(f.names, name)
		if j < 0 {
			return fmt.Errorf("no column %q, which %s has; every file must share one schema", name, from)
		}
		f.cols[i], fields[i] = j, f.arrow.Field(j)
	}
	if t.schema == nil { // f sets the schema
		return nil
	}
	return sameTypes(arrow.NewSchema(fields, nil), t.schema, from)
}

// sameTypes checks that got has want's Arrow types, column by column.
func sameTypes(got, want *arrow.Schema, from string) error {
	for i, f := range got.Fields() {
		w := want.Field(i)
		if !arrow.TypeEqual(f.Type, w.Type) {
			return fmt.Errorf("column %q is %s, and %s in %s; Arrow files are read as they are, so every file must give the same Arrow types", f.Name, f.Type, w.Type, from)
		}
	}
	return nil
}

// delimiters are the CSV delimiters checkDialect looks for.
const delimiters = ",;\t|"

// checkDialect refuses a CSV file whose rows DuckDB's sniffer could not
// split: when no delimiter gives every sampled row the same number of
// fields (a row has too many or too few), it settles for one column
// holding whole lines. A one-column file whose header holds a delimiter
// the sniffer did not choose is such a file; reading it strictly with
// that delimiter names the row that does not fit.
func (r *Reader) checkDialect(f *file) error {
	if len(f.names) != 1 || !strings.ContainsAny(f.names[0], delimiters) {
		return nil
	}
	delim := string(f.names[0][strings.IndexAny(f.names[0], delimiters)])
	rows, err := r.conn.Query(r.ctx, fmt.Sprintf("SELECT Delimiter FROM sniff_csv(%s, header = true, skip = 0, sample_size = %d%s)",
		engine.QuoteString(f.path), f.sample, f.lineOption()))
	if err != nil {
		return &ReadError{Path: f.path, Err: duckErr(r.ctx, err)}
	}
	sniffed := ""
	if rows.Next() {
		sniffed = rows.RecordBatch().Column(0).(*array.String).Value(0)
		sniffed = strings.Clone(sniffed)
	}
	rows.Close()
	if sniffed == delim {
		return nil // one quoted column name holding the delimiter
	}
	n := strings.Count(f.names[0], delim) + 1
	cols := make([]string, n)
	for i := range cols {
		cols[i] = fmt.Sprintf("'column%d': 'VARCHAR'", i+1)
	}
	_, err = r.conn.Exec(r.ctx, fmt.Sprintf(
		"SELECT count(*) FROM read_csv(%s, auto_detect = false, header = true, skip = 0, delim = %s, quote = '\"', escape = '\"', columns = {%s}%s)",
		engine.QuoteString(f.path), engine.QuoteString(delim), strings.Join(cols, ", "), f.lineOption()))
	if err != nil {
		return &ReadError{Path: f.path, Err: duckErr(r.ctx, err)}
	}
	return &ReadError{Path: f.path, Err: errors.New("DuckDB found no delimiter that splits every row into the same number of fields")}
}
