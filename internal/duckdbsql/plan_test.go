package duckdbsql_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

func TestReadPlan(t *testing.T) {
	// Shapes as DuckDB 1.5's json_serialize_plan writes them, cut down.
	js := `{"error":false,"plans":[{"type":"LOGICAL_PROJECTION","expressions":[
		{"expression_class":"BOUND_FUNCTION","name":"NextVal","catalog_name":"system","schema_name":"main",
		 "children":[{"expression_class":"BOUND_AGGREGATE","name":"sum","catalog_name":"system","schema_name":"main"}]},
		{"expression_class":"BOUND_WINDOW","type":"WINDOW_ROW_NUMBER"},
		{"expression_class":"BOUND_WINDOW","name":"avg","catalog_name":"system","schema_name":"main"}],
		"children":[{"type":"LOGICAL_GET","name":"enable_logging","catalog_name":"system","schema_name":"main",
			"named_parameters":[{"key":"Storage","value":{"type":{"id":"VARCHAR"},"is_null":false,"value":"file"}},
				{"key":"level","value":{"type":{"id":"VARCHAR"},"is_null":true}}]},
			{"type":"LOGICAL_GET","name":"read_parquet","function_data":{"files":["/a.parquet","/b.parquet"]}},
			{"type":"LOGICAL_CREATE_VIEW","info":{"query":{"node":{"select_list":[
				{"class":"FUNCTION","function_name":"upper","schema":"","catalog":""}],
				"from_table":{"type":"BASE_TABLE","table_name":"duckdb_logs","schema_name":"","catalog_name":""}}}}}]}]}`
	p, err := duckdbsql.ReadPlan([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"LOGICAL_PROJECTION"}; !reflect.DeepEqual(p.Roots, want) {
		t.Errorf("Roots = %v, want %v", p.Roots, want)
	}
	if want := []string{"LOGICAL_PROJECTION", "LOGICAL_GET", "LOGICAL_CREATE_VIEW"}; !reflect.DeepEqual(p.Operators, want) {
		t.Errorf("Operators = %v, want %v", p.Operators, want)
	}
	got := map[string]duckdbsql.Call{}
	for _, c := range p.Calls {
		if _, dup := got[c.Name]; dup {
			t.Errorf("%s met twice", c.Name)
		}
		got[c.Name] = c
	}
	wantKinds := map[string]duckdbsql.CallKind{
		"nextval": duckdbsql.Scalar, "sum": duckdbsql.Aggregate, "avg": duckdbsql.Window,
		"enable_logging": duckdbsql.Table, "read_parquet": duckdbsql.Table,
		"upper": duckdbsql.Written, "duckdb_logs": duckdbsql.Written,
	}
	if len(got) != len(wantKinds) {
		t.Errorf("calls = %v, want %v", got, wantKinds)
	}
	for name, kind := range wantKinds {
		if got[name].Kind != kind {
			t.Errorf("%s: kind %v, want %v", name, got[name].Kind, kind)
		}
	}
	if want := map[string]any{"storage": "file", "level": nil}; !reflect.DeepEqual(got["enable_logging"].Named, want) {
		t.Errorf("enable_logging Named = %v, want %v", got["enable_logging"].Named, want)
	}
	if want := []string{"/a.parquet", "/b.parquet"}; !reflect.DeepEqual(got["read_parquet"].Files, want) {
		t.Errorf("read_parquet Files = %v, want %v", got["read_parquet"].Files, want)
	}
	if got["nextval"].Catalog != "system" || got["nextval"].Schema != "main" {
		t.Errorf("nextval found in %s.%s, want system.main", got["nextval"].Catalog, got["nextval"].Schema)
	}
}

func TestReadPlan_Errors(t *testing.T) {
	_, err := duckdbsql.ReadPlan([]byte(`{"error":true,"error_type":"not implemented","error_message":"CSVReaderSerialize not implemented"}`))
	var pe *duckdbsql.PlanError
	if !errors.As(err, &pe) || pe.Message != "CSVReaderSerialize not implemented" {
		t.Errorf("got %v, want the PlanError DuckDB reported", err)
	}
	for _, js := range []string{``, `{`, `{"error":false}`, `{"error":false,"plans":[1]}`} {
		if _, err := duckdbsql.ReadPlan([]byte(js)); err == nil || errors.As(err, &pe) {
			t.Errorf("ReadPlan(%q) = %v, want a read error", js, err)
		}
	}
}

func TestReplaceParams(t *testing.T) {
	tree := `{"error":false,"statements":[{"node":{"select_list":[{"class":"PARAMETER","identifier":"1"},
		{"class":"FUNCTION","function_name":"f","children":[{"class":"PARAMETER","identifier":"2"}]}]}}]}`
	sample := `{"error":false,"statements":[{"node":{"select_list":[{"class":"SUBQUERY","x":1}]}}]}`
	out, err := duckdbsql.ReplaceParams([]byte(tree), []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"error":false,"statements":[{"node":{"select_list":[{"class":"SUBQUERY","x":1},{"children":[{"class":"SUBQUERY","x":1}],"class":"FUNCTION","function_name":"f"}]}}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := duckdbsql.ReplaceParams([]byte(`{"error":true,"error_message":"no"}`), []byte(sample)); err == nil {
		t.Error("a parse error DuckDB reported passed")
	}
}

func FuzzReadPlan(f *testing.F) {
	for _, s := range []string{`{"error":false,"plans":[{"type":"LOGICAL_GET","name":"x","named_parameters":[{"key":1}]}]}`,
		`{"error":true}`, `[]`, `{"plans":[{"function_data":{"files":[1,null,"a"]}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		duckdbsql.ReadPlan(js) // must not panic, whatever the JSON
		duckdbsql.ReadParsed(js)
		duckdbsql.ReplaceParams(js, js)
	})
}
