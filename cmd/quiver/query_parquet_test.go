package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestQuery_ParquetCompression checks that --parquet-compression picks the
// codec of every column chunk quiver query -o writes, zstd by default.
func TestQuery_ParquetCompression(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), "CREATE TABLE pc AS SELECT i AS id, 'v' || i AS s FROM range(50000) t(i)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		codec string // "" is the default
		want  compress.Compression
	}{
		{"", compress.Codecs.Zstd},
		{"snappy", compress.Codecs.Snappy},
		{"uncompressed", compress.Codecs.Uncompressed},
	} {
		t.Run("codec="+tt.codec, func(t *testing.T) {
			path := filepath.Join(dir, "out-"+tt.codec+".parquet")
			args := []string{"query", "--server", srv.FlightAddr, "-o", path, "--quiet"}
			if tt.codec != "" {
				args = append(args, "--parquet-compression", tt.codec)
			}
			if code, _, errOut := runQuiver(t, append(args, "SELECT * FROM pc")...); code != 0 {
				t.Fatalf("exit status %d: %s", code, errOut)
			}
			pf, err := file.OpenParquetFile(path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			if got := pf.NumRows(); got != 50000 {
				t.Errorf("rows: got %d, want 50000", got)
			}
			for g := range pf.NumRowGroups() {
				rg := pf.MetaData().RowGroup(g)
				for col := range rg.NumColumns() {
					cc, err := rg.ColumnChunk(col)
					if err != nil {
						t.Fatal(err)
					}
					if got := cc.Compression(); got != tt.want {
						t.Fatalf("row group %d column %d: got %v, want %v", g, col, got, tt.want)
					}
				}
			}
		})
	}
}

// TestQuery_WriteMemory checks that --write-memory bounds the DuckDB that
// writes -o: rows of ten 200-byte strings (246 MB a row group) do not fit
// in 64MB, and the error says so, names the flag, and leaves no file.
func TestQuery_WriteMemory(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	var cols []string
	for k := range 10 {
		cols = append(cols, fmt.Sprintf("rpad(i::VARCHAR, 200, 'x') AS c%d", k))
	}
	if _, err := c.Exec(context.Background(), "CREATE TABLE wm AS SELECT "+strings.Join(cols, ", ")+" FROM range(150000) t(i)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.parquet")
	code, _, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "--quiet", "--write-memory", "64MB", "-o", path, "SELECT * FROM wm")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (stderr %q)", code, errOut)
	}
	for _, want := range []string{"ran out of memory (limit 64MB)", "give it more with --write-memory", "nothing was written"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	if strings.Contains(errOut, "SET memory_limit") {
		t.Errorf("stderr %q gives DuckDB's own advice, which a quiver user cannot follow", errOut)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
		t.Errorf("files left: %v", names)
	}
}

// TestQuery_ParquetCompressionUsage checks the flag's usage errors.
func TestQuery_ParquetCompressionUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"not parquet", []string{"query", "--parquet-compression", "snappy", "-o", "x.csv", "SELECT 1"}, "--parquet-compression needs --format parquet"},
		{"unknown codec", []string{"query", "--parquet-compression", "lzma", "-o", "x.parquet", "SELECT 1"}, `unknown --parquet-compression "lzma"`},
		{"write memory not a size", []string{"query", "--write-memory", "lots", "-o", "x.parquet", "SELECT 1"}, `--write-memory: size "lots"`},
		{"write memory too small", []string{"query", "--write-memory", "1KB", "-o", "x.parquet", "SELECT 1"}, "want at least 1MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runQuiver(t, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q lacks %q", errOut, tt.want)
			}
		})
	}
}
