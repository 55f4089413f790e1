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
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// runQuiver runs the CLI in-process and returns its exit status, stdout
// and stderr.
func runQuiver(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	oldOut, oldErr := stdout, stderr
	stdout, stderr = &out, &errOut
	defer func() { stdout, stderr = oldOut, oldErr }()
	code := run(args, &errOut)
	return code, out.String(), errOut.String()
}

// writeLoadFiles writes rows 0..n-1 (id, name, score) as Parquet, Arrow
// IPC, CSV and NDJSON files, a quarter of the rows in each, and returns
// their paths.
func writeLoadFiles(t *testing.T, dir string, n int) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
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

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("id,name,score\n1,x,2.5\nnot-a-number,y,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.csv")
	if err := os.WriteFile(other, []byte("id,label\n1,x\n"), 0o644); err != nil {
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
		{"bad value", []string{"load", bad, "--table", "x1", "--infer-rows", "1", "--server", srv.FlightAddr}, 1, "not-a-number"},
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
			if _, err := parseFlags(fs, tt.args); err != nil {
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
