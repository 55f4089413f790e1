package console

import (
	"net/http"

	"github.com/quiverdata/quiver/auth"
)

type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type table struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Columns []column `json:"columns"`
}

type schema struct {
	Name   string   `json:"name"`
	Tables []*table `json:"tables"`
}

type catalog struct {
	Name    string    `json:"name"`
	Schemas []*schema `json:"schemas"`
}

// schemaSQL lists every column of every table and view users see: the
// database's own, attached ones, and the lake's; DuckDB's internal
// catalogs are left out, as GetCatalogs leaves them out.
const schemaSQL = `SELECT c.table_catalog, c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_catalog = c.table_catalog AND t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_catalog NOT IN ('system', 'temp')
ORDER BY c.table_catalog, c.table_schema, c.table_name, c.ordinal_position`

// handleSchema answers the schema tree: catalogs, schemas, tables and
// their columns with types.
func (c *Console) handleSchema(w http.ResponseWriter, r *http.Request, _ auth.User) {
	conn, err := c.opts.DB.Conn(r.Context())
	if err != nil {
		failed(r.Context(), err).write(w)
		return
	}
	defer conn.Release()
	rows, err := conn.Query(r.Context(), schemaSQL)
	if err != nil {
		failed(r.Context(), err).write(w)
		return
	}
	defer rows.Close()
	out := struct {
		Catalogs []*catalog `json:"catalogs"`
	}{Catalogs: []*catalog{}}
	var (
		cat *catalog
		sch *schema
		tab *table
	)
	for rows.Next() {
		rec := rows.RecordBatch()
		str := func(col int, i int) string {
			a := rec.Column(col)
			if a.IsNull(i) {
				return ""
			}
			return a.ValueStr(i)
		}
		for i := range int(rec.NumRows()) {
			cn, sn, tn := str(0, i), str(1, i), str(2, i)
			if cat == nil || cat.Name != cn {
				cat = &catalog{Name: cn}
				out.Catalogs = append(out.Catalogs, cat)
				sch, tab = nil, nil
			}
			if sch == nil || sch.Name != sn {
				sch = &schema{Name: sn}
				cat.Schemas = append(cat.Schemas, sch)
				tab = nil
			}
			if tab == nil || tab.Name != tn {
				tab = &table{Name: tn, Type: str(3, i)}
				sch.Tables = append(sch.Tables, tab)
			}
			tab.Columns = append(tab.Columns, column{Name: str(4, i), Type: str(5, i)})
		}
	}
	if err := rows.Err(); err != nil {
		failed(r.Context(), err).write(w)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
