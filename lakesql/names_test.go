package lakesql

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

func TestWriteTargets(t *testing.T) {
	cases := []struct {
		sql  string
		want []string // dotted targets per statement, joined by ;
	}{
		{"SELECT * FROM lake.quiver.events", nil},
		{"INSERT INTO lake.quiver.events VALUES (1)", []string{"lake.quiver.events"}},
		{"INSERT OR REPLACE INTO t SELECT * FROM lake.quiver.events", []string{"t"}},
		{"insert into \"lake\".\"quiver\".\"events\" select 1", []string{"lake.quiver.events"}},
		{"DELETE FROM lake.q.e WHERE id = 1", []string{"lake.q.e"}},
		{"UPDATE lake.q.e SET x = 1 FROM other", []string{"lake.q.e"}},
		{"CREATE TABLE mine AS SELECT * FROM lake.q.e", []string{"mine"}},
		{"CREATE OR REPLACE TEMP VIEW v AS SELECT 1", []string{"v"}},
		{"CREATE TABLE IF NOT EXISTS lake.q.x (i INT)", []string{"lake.q.x"}},
		{"DROP SCHEMA IF EXISTS lake.quiver CASCADE", []string{"lake.quiver"}},
		{"ALTER VIEW lake.q.e RENAME TO e2", []string{"lake.q.e"}},
		{"COPY lake.q.e TO 'out.parquet'", nil},
		{"COPY lake.q.e FROM 'in.csv'", []string{"lake.q.e"}},
		{"COMMENT ON TABLE lake.q.e IS 'x'", []string{"lake.q.e"}},
		{"TRUNCATE lake.q.e", []string{"lake.q.e"}},
		{"DETACH DATABASE lake", []string{"lake"}},
		{"SELECT 'INSERT INTO lake.q.e'; DELETE FROM t -- lake.q.e", []string{"t"}},
		{"/* DROP TABLE lake.q.e */ SELECT 1", nil},
		{"CREATE INDEX i ON lake.q.e (id)", []string{"i", "lake.q.e"}},
	}
	for _, tc := range cases {
		var got []string
		for i, s := range statements(tokens(tc.sql)) {
			for _, n := range s.writeTargets(i) {
				got = append(got, strings.Join(n.parts, "."))
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.sql, got, tc.want)
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"SELECT * FROM lake.quiver.\"events@1\"", "a.b.c; $$x$$ 'it''s' \"q\"\"x\" -- c\n/* */", "$tag$ … $tag$", "\"unterminated", "'unterminated", "1.5e3.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		for i, s := range statements(tokens(sql)) {
			_ = s.writeTargets(i)
			for _, n := range s.names(i) {
				if len(n.parts) == 0 || len(n.parts) != len(n.quoted) {
					t.Fatalf("bad name %+v", n)
				}
			}
		}
	})
}

// FuzzPruneFilter feeds arbitrary parse trees to the filter builder, which
// must never panic and never return an expression that does not bind.
func FuzzPruneFilter(f *testing.F) {
	f.Add(`{"class":"COMPARISON","type":"COMPARE_EQUAL","left":{"class":"CONSTANT","value":{"type":{"id":"INTEGER"},"value":5}},"right":{"class":"COLUMN_REF","column_names":["id"]}}`)
	f.Add(`{"class":"CONJUNCTION","type":"CONJUNCTION_AND","children":[{"class":"BETWEEN","input":{"class":"COLUMN_REF","column_names":["day"]},"lower":{"class":"CAST","child":{"class":"CONSTANT","value":{"type":{"id":"VARCHAR"},"value":"2026-01-01"}}},"upper":null}]}`)
	f.Add(`{"class":"OPERATOR","type":"COMPARE_IN","children":[{"class":"COLUMN_REF","column_names":["e","name"]},{"class":"CONSTANT","value":{"type":{"id":"VARCHAR"},"value":"x"}}]}`)
	sch := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
	f.Fuzz(func(t *testing.T, where string) {
		var e duckdbsql.Expr
		if json.Unmarshal([]byte(where), &e) != nil {
			return
		}
		expr := pruneFilter(&e, sch, func(q string) bool { return q == "" || q == "e" })
		if expr == nil {
			return
		}
		if _, err := iceberg.BindExpr(sch, expr, false); err != nil {
			t.Fatalf("unbindable filter %v: %v", expr, err)
		}
	})
}
