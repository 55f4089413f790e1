package mysqlwire

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/mysqlwire/mysqlvalue"
)

// column is a column of a canned table.
type column struct {
	name string
	typ  querypb.Type // VarChar or Int64
}

// table is a small canned result; a nil cell is NULL.
type table struct {
	cols []column
	rows [][]*string
}

func strRows(rows ...[]string) [][]*string {
	out := make([][]*string, len(rows))
	for i, r := range rows {
		out[i] = make([]*string, len(r))
		for j := range r {
			out[i][j] = &r[j]
		}
	}
	return out
}

func strPtr(s string) *string { return &s }

// result builds the MySQL result of the table.
func (t *table) result() *sqltypes.Result {
	res := &sqltypes.Result{Fields: make([]*querypb.Field, len(t.cols))}
	for j, c := range t.cols {
		res.Fields[j] = fieldNamed(c.name, c.typ)
	}
	for _, r := range t.rows {
		row := make([]sqltypes.Value, len(r))
		for j, v := range r {
			switch {
			case v == nil:
				row[j] = sqltypes.NULL
			case t.cols[j].typ == sqltypes.Int64:
				row[j] = sqltypes.MakeTrusted(sqltypes.Int64, []byte(*v))
			default:
				row[j] = sqltypes.NewVarChar(*v)
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res
}

// sql renders the table as a DuckDB query, for filtering with WHERE.
func (t *table) sql() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for j, c := range t.cols {
		if j > 0 {
			b.WriteString(", ")
		}
		typ := "VARCHAR"
		if c.typ == sqltypes.Int64 {
			typ = "BIGINT"
		}
		fmt.Fprintf(&b, "CAST(col%d AS %s) AS %s", j, typ, engine.QuoteIdent(c.name))
	}
	b.WriteString(" FROM (VALUES ")
	if len(t.rows) == 0 {
		b.WriteString("(" + strings.TrimSuffix(strings.Repeat("NULL, ", len(t.cols)), ", ") + ")")
	}
	for i, r := range t.rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, v := range r {
			if j > 0 {
				b.WriteString(", ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(engine.QuoteString(*v))
			}
		}
		b.WriteByte(')')
	}
	b.WriteString(") AS v(")
	for j := range t.cols {
		if j > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "col%d", j)
	}
	b.WriteString(")")
	if len(t.rows) == 0 {
		b.WriteString(" WHERE false")
	}
	return b.String()
}

// fieldNamed is the column definition of a compatibility result column.
func fieldNamed(name string, typ querypb.Type) *querypb.Field {
	f := &querypb.Field{Name: name, OrgName: name, Type: typ, Charset: mysqlvalue.CharsetBinary, ColumnLength: 21}
	if typ == sqltypes.VarChar {
		f.Charset, f.ColumnLength = mysqlvalue.CharsetUTF8MB4, 4096
	}
	return f
}

// queryStrings runs a small query and returns its rows as text, nil for
// NULL.
func queryStrings(ctx context.Context, conn *engine.Conn, sql string) ([][]*string, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]*string
	var buf []byte
	for rows.Next() {
		rec := rows.RecordBatch()
		for i := range int(rec.NumRows()) {
			row := make([]*string, rec.NumCols())
			for j, col := range rec.Columns() {
				if col.IsNull(i) {
					continue
				}
				if buf, err = mysqlvalue.AppendText(buf[:0], col, i); err != nil {
					return nil, err
				}
				row[j] = strPtr(string(buf))
			}
			out = append(out, row)
		}
	}
	return out, rows.Err()
}
