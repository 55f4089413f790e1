package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
	"io"
)

// testInput is the standard input runQuiver gives the CLI (withStdin
// sets it).
var testInput string

// runQuiver runs the CLI in-process, with testInput on its standard
// input, and returns its exit status, stdout and stderr.
func runQuiver(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, cli.Stdio{In: strings.NewReader(testInput), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// discard is standard streams for a test that reads none of them.
func discard() cli.Stdio {
	return cli.Stdio{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
}

// writeLoadFiles writes rows 0..n-1 (id, name, score) as Parquet, Arrow
// IPC, CSV and NDJSON files, a quarter of the rows in each, and returns
// their paths.
func writeLoadFiles(t *testing.T, dir string, n int) []string {
	t.Helper()
	mem := testmem.Checked(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	q := n / 4
	build := func(from, to int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := from; i < to; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", i))
			b.Field(2).(*array.Float64Builder).Append(float64(i) + 0.25)
		}
		return b.NewRecordBatch()
	}
	paths := []string{filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.arrow"), filepath.Join(dir, "c.csv"), filepath.Join(dir, "d.ndjson")}

	rec := build(0, q)
	f, _ := os.Create(paths[0])
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Release()

	rec = build(q, 2*q)
	f, _ = os.Create(paths[1])
	fw, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rec.Release()

	var csv, ndjson strings.Builder
	csv.WriteString("id,name,score\n")
	for i := 2 * q; i < 3*q; i++ {
		fmt.Fprintf(&csv, "%d,n%d,%v\n", i, i, float64(i)+0.25)
	}
	for i := 3 * q; i < n; i++ {
		fmt.Fprintf(&ndjson, `{"id":%d,"name":"n%d","score":%v}`+"\n", i, i, float64(i)+0.25)
	}
	if err := os.WriteFile(paths[2], []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths[3], []byte(ndjson.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return paths
}

func TestLoad_CLI(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	dir := t.TempDir()
	paths := writeLoadFiles(t, dir, 40000)
	summary := regexp.MustCompile(`^loaded (\d+) rows \([\d.]+ MB\) into (\S+) in [\d.]+s: \d+ rows/s, [\d.]+ MB/s\n$`)
	count := func(table string) string {
		r, err := c.Query(context.Background(), fmt.Sprintf("SELECT count(*)::VARCHAR || '/' || count(DISTINCT id)::VARCHAR || '/' || "+
			"count(*) FILTER (WHERE name <> 'n' || id OR score <> id + 0.25)::VARCHAR FROM %s", table))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		r.Next()
		return r.RecordBatch().Column(0).ValueStr(0)
	}

	tests := []struct {
		name     string
		args     []string
		env      string // QUIVER_SERVER
		wantRows string // count/distinct/mismatches afterwards
		table    string
	}{
		{name: "one file per format", table: "t1", wantRows: "40000/40000/0",
			args: []string{"load", paths[0], paths[1], paths[2], paths[3], "--table", "t1", "--server", srv.FlightAddr}},
		{name: "flags before files, zstd, small batches", table: "t2", wantRows: "20000/20000/0",
			args: []string{"load", "--table", "t2", "--compression", "zstd", "--batch-rows", "1000", "--server", srv.FlightAddr, paths[0], paths[1]}},
		{name: "server from the environment, append", table: "t2", env: srv.FlightAddr, wantRows: "30000/30000/0",
			args: []string{"load", paths[2], "--table", "t2", "--mode", "append", "--compression", "lz4"}},
		{name: "replace", table: "t2", wantRows: "10000/10000/0",
			args: []string{"load", paths[3], "--table", "t2", "--mode", "replace", "--server", srv.FlightAddr}},
		{name: "schema-from", table: "t3", wantRows: "10000/10000/0",
			args: []string{"load", paths[3], "--table", "t3", "--schema-from", paths[0], "--mode", "create_append", "--server", srv.FlightAddr}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("QUIVER_SERVER", tt.env)
			code, out, errOut := runQuiver(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit status: got %d, want 0; stderr: %s", code, errOut)
			}
			m := summary.FindStringSubmatch(out)
			if m == nil || m[2] != tt.table {
				t.Errorf("summary: got %q", out)
			}
			if got := count(tt.table); got != tt.wantRows {
				t.Errorf("rows/distinct ids/mismatches: got %s, want %s", got, tt.wantRows)
			}
		})
	}

	// A value that does not fit the column DuckDB's sniffer typed from
	// the first rows, past them.
	var badCSV strings.Builder
	badCSV.WriteString("id,name,score\n")
	for i := range 30000 {
		fmt.Fprintf(&badCSV, "%d,n%d,%d.5\n", i, i, i)
	}
	badCSV.WriteString("not-a-number,y,3\n")
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte(badCSV.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ragged := filepath.Join(dir, "ragged.csv")
	if err := os.WriteFile(ragged, []byte("id,name,score\n1,x,2.5\n2,y\n3,z,1,extra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	textID := filepath.Join(dir, "textid.csv")
	if err := os.WriteFile(textID, []byte("id,name,score\nabc,x,2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.csv")
	if err := os.WriteFile(other, []byte("id,label\n1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A 3 MB line, past DuckDB's 2,000,000-byte limit.
	long := filepath.Join(dir, "long.csv")
	if err := os.WriteFile(long, []byte("id,s\n1,x\n2,"+strings.Repeat("y", 3_000_000)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failures := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no files", []string{"load", "--table", "x"}, 2, "name at least one file"},
		{"no table", []string{"load", paths[0]}, 2, "--table is required"},
		{"bad mode", []string{"load", paths[0], "--table", "x", "--mode", "upsert"}, 2, "bad --mode"},
		{"bad compression", []string{"load", paths[0], "--table", "x", "--compression", "gzip"}, 2, "bad --compression"},
		{"unknown extension", []string{"load", filepath.Join(dir, "notes.txt"), "--table", "x"}, 2, "unknown format"},
		{"missing file", []string{"load", filepath.Join(dir, "gone.parquet"), "--table", "x"}, 2, "no such file"},
		{"unknown flag", []string{"load", paths[0], "--table", "x", "--bogus"}, 2, "bogus"},
		{"password without user", []string{"load", paths[0], "--table", "x", "--password", "pw", "--server", srv.FlightAddr}, 2, "--password needs --user"},
		{"table exists", []string{"load", paths[0], "--table", "t1", "--server", srv.FlightAddr}, 1, "already exists"},
		{"table missing", []string{"load", paths[0], "--table", "nope", "--mode", "append", "--server", srv.FlightAddr}, 1, "does not exist"},
		{"files do not fit the table", []string{"load", other, "--table", "t1", "--mode", "append", "--server", srv.FlightAddr}, 1, "do not fit the table"},
		{"bad value", []string{"load", bad, "--table", "x1", "--server", srv.FlightAddr}, 1, "Could not convert string 'not-a-number' to INT64"},
		{"bad value, schema given", []string{"load", paths[3], bad, "--table", "x1", "--schema-from", paths[0], "--server", srv.FlightAddr}, 1, "'not-a-number'"},
		{"malformed CSV", []string{"load", ragged, "--table", "x1", "--server", srv.FlightAddr}, 1, "CSV Error on Line: 3; Original Line: 2,y; Expected Number of Columns: 3 Found: 2"},
		{"value does not fit the table", []string{"load", textID, "--table", "t1", "--mode", "append", "--server", srv.FlightAddr}, 1, "'abc'"},
		{"bad infer-rows", []string{"load", paths[0], "--table", "x", "--infer-rows", "0"}, 2, "--infer-rows"},
		{"line too long", []string{"load", long, "--table", "x1", "--server", srv.FlightAddr}, 1,
			"Maximum line size of 2000000 bytes exceeded. Actual Size:3000003 bytes.; allow longer lines with --max-line-size, e.g. 64MB"},
		{"bad max-line-size", []string{"load", long, "--table", "x1", "--max-line-size", "lots"}, 2, `bad --max-line-size "lots"`},
		{"max-line-size too small", []string{"load", long, "--table", "x1", "--max-line-size", "100"}, 2, "at least 1KB"},
		{"missing schema file", []string{"load", paths[0], "--table", "x", "--schema-from", filepath.Join(dir, "gone.csv")}, 2, "bad --schema-from"},
		{"no server", []string{"load", paths[0], "--table", "x", "--server", "127.0.0.1:1"}, 1, "is quiver serve running"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("QUIVER_SERVER", "")
			code, _, errOut := runQuiver(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit status: got %d, want %d; stderr: %s", code, tt.wantCode, errOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr: got %q, want it to contain %q", errOut, tt.wantErr)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("stderr: got several lines, want one: %q", errOut)
			}
		})
	}
	if got := count("t1"); got != "40000/40000/0" {
		t.Errorf("t1 after the failures: got %s, want 40000/40000/0", got)
	}
	if got := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'x1'"); got != "0" {
		t.Errorf("tables named x1: got %s, want 0", got)
	}
	t.Run("max-line-size makes room", func(t *testing.T) {
		if code, _, errOut := runQuiver(t, "load", long, "--table", "long", "--max-line-size", "8MB", "--server", srv.FlightAddr); code != 0 {
			t.Fatalf("exit status %d; stderr: %s", code, errOut)
		}
		if got := scalar(t, c, "SELECT count(*) || '/' || max(length(s)) FROM long"); got != "2/3000000" {
			t.Errorf("rows/longest value: got %s, want 2/3000000", got)
		}
	})
}

// scalar runs a one-value query.
func scalar(t *testing.T, c *client.Client, sql string) string {
	t.Helper()
	r, err := c.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("%s: no rows (%v)", sql, r.Err())
	}
	return strings.Clone(r.RecordBatch().Column(0).ValueStr(0))
}

// TestLoad_NewUserCSV loads what a new user tried first, which quiver's
// own CSV reader refused: quoted commas, a doubled quote, a field over
// two lines, an empty number, and timestamps with and without a zone.
func TestLoad_NewUserCSV(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	path := filepath.Join(t.TempDir(), "new.csv")
	if err := os.WriteFile(path, []byte("id,name,note,amount,ts\n"+
		"1,\"Smith, John\",\"He said \"\"hi\"\"\",12.5,2024-01-02 03:04:05\n"+
		"2,Ann,\"line one\nline two\",,2024-01-02T03:04:05Z\n"+
		"3,Bob,plain,7,2024-01-02 03:04:05+02:00\n"+
		"4,\"Zoë\",,3.25,2024-03-04 05:06:07\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runQuiver(t, "load", path, "--table", "people", "--server", srv.FlightAddr)
	if code != 0 {
		t.Fatalf("exit status %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "loaded 4 rows") {
		t.Errorf("summary: got %q", out)
	}
	for sql, want := range map[string]string{
		"SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'people'": "id BIGINT, name VARCHAR, note VARCHAR, amount DOUBLE, ts TIMESTAMP WITH TIME ZONE",
		"SELECT string_agg(name || '|' || coalesce(note, 'NULL') || '|' || coalesce(amount::VARCHAR, 'NULL') || '|' || ts::VARCHAR, ';' ORDER BY id) FROM people": "Smith, John|He said \"hi\"|12.5|2024-01-02 03:04:05+00;" +
			"Ann|line one\nline two|NULL|2024-01-02 03:04:05+00;Bob|plain|7.0|2024-01-02 01:04:05+00;Zoë|NULL|3.25|2024-03-04 05:06:07+00",
	} {
		if got := scalar(t, c, sql); got != want {
			t.Errorf("%s:\n got %q\nwant %q", sql, got, want)
		}
	}
}

func TestClientFlags_Config(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    client.Config
		wantErr string
	}{
		{name: "defaults", want: client.Config{Addr: defaultServer}},
		{name: "environment", env: map[string]string{"QUIVER_SERVER": "h:1", "QUIVER_USER": "u", "QUIVER_PASSWORD": "p"},
			want: client.Config{Addr: "h:1", User: "u", Password: "p"}},
		{name: "flags win", env: map[string]string{"QUIVER_SERVER": "h:1", "QUIVER_USER": "u"},
			args: []string{"--server", "k:2", "--user", "v", "--password", "q"}, want: client.Config{Addr: "k:2", User: "v", Password: "q"}},
		{name: "tls-ca implies tls", args: []string{"--tls-ca", "ca.pem"}, want: client.Config{Addr: defaultServer, TLS: true, CAFile: "ca.pem"}},
		{name: "tls", args: []string{"--tls"}, want: client.Config{Addr: defaultServer, TLS: true}},
		{name: "bad server", args: []string{"--server", "nohost"}, wantErr: "HOST:PORT"},
		{name: "password alone", args: []string{"--password", "p"}, wantErr: "--password needs --user"},
		{name: "cert without key", args: []string{"--tls-cert", "c.pem"}, wantErr: "go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"QUIVER_SERVER", "QUIVER_USER", "QUIVER_PASSWORD"} {
				t.Setenv(k, tt.env[k])
			}
			fs := newFlagSet("test")
			var cf clientFlags
			cf.register(fs)
			if _, err := parseFlags(discard(), fs, tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := cf.config()
			if tt.wantErr != "" {
				var ue *usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error: got %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("config: got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestHumanCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", 100000: "100,000"} {
		if got := humanCount(n); got != want {
			t.Errorf("humanCount(%d): got %s, want %s", n, got, want)
		}
	}
}

// shellExpand does what sh does to a README command's words beyond
// shellWords: `> FILE` redirects stdout, and a word with a * that names
// files is those files.
func shellExpand(words []string) (args []string, stdoutFile string) {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == ">" && i == len(words)-2 {
			return args, words[i+1]
		}
		if m, _ := filepath.Glob(w); strings.Contains(w, "*") && len(m) > 0 {
			args = append(args, m...)
			continue
		}
		args = append(args, w)
	}
	return args, ""
}

// TestReadme_LoadAndQueryAsWritten runs the README's quiver load and
// quiver query commands exactly as written, in a scratch directory
// holding the files they name, against a server with an orders table.
func TestReadme_LoadAndQueryAsWritten(t *testing.T) {
	var cmds []string
	for _, c := range readme.Commands(t, "quiver ") {
		if (strings.HasPrefix(c, "quiver load ") || strings.HasPrefix(c, "quiver query ")) && !strings.Contains(c, "--server") {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) < 4 {
		t.Fatalf("found %d load and query commands in the README, want at least 4", len(cmds))
	}
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), "CREATE TABLE orders AS SELECT i AS id, ['new', 'paid', 'shipped'][i % 3 + 1] AS status, i * 1.5 AS total FROM range(10000) t(i)"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("QUIVER_SERVER", srv.FlightAddr)
	t.Chdir(t.TempDir())
	if err := os.Mkdir("events", 0o755); err != nil {
		t.Fatal(err)
	}
	for i, part := range []string{"id < 5000", "id >= 5000"} {
		if code, _, errOut := runQuiver(t, "query", "SELECT * FROM orders WHERE "+part, "-o", fmt.Sprintf("events/part-%d.parquet", i)); code != 0 {
			t.Fatal(errOut)
		}
	}
	if err := os.WriteFile("data.csv", []byte("id,status,total\n1,paid,1.5\n2,\"new, again\",3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("more.ndjson", []byte(`{"id": 3, "status": "paid", "total": 4.5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range cmds {
		t.Logf("README: %s", line)
		args, redirect := shellExpand(readme.ShellWords(t, line))
		code, out, errOut := runQuiver(t, args[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit status %d: %s", line, code, errOut)
		}
		if redirect != "" {
			if err := os.WriteFile(redirect, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for sql, want := range map[string]string{
		"SELECT count(*) FROM events":                         "10000",
		"SELECT count(*) FROM t":                              "3",
		"SELECT count(*) FROM read_parquet('orders.parquet')": "10000",
	} {
		if strings.Contains(sql, "orders.parquet") {
			// The server cannot reach files: read it back with quiver load.
			if code, _, errOut := runQuiver(t, "load", "orders.parquet", "--table", "back"); code != 0 {
				t.Fatal(errOut)
			}
			sql = "SELECT count(*) FROM back"
		}
		if got := scalar(t, c, sql); got != want {
			t.Errorf("%s: got %s, want %s", sql, got, want)
		}
	}
	if b, err := os.ReadFile("orders.csv"); err != nil || !strings.HasPrefix(string(b), "id,status,total\n") || strings.Count(string(b), "\n") != 10001 {
		t.Errorf("orders.csv: %v, %d lines", err, strings.Count(string(b), "\n"))
	}
}
