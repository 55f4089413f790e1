package main

import (
	"context"
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

// TestQuery_ParquetCompressionUsage checks the flag's usage errors.
func TestQuery_ParquetCompressionUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"not parquet", []string{"query", "--parquet-compression", "snappy", "-o", "x.csv", "SELECT 1"}, "--parquet-compression needs --format parquet"},
		{"unknown codec", []string{"query", "--parquet-compression", "lzma", "-o", "x.parquet", "SELECT 1"}, `unknown --parquet-compression "lzma"`},
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
