package filesio_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/filesio"
	"github.com/quiverdata/quiver/internal/testmem"
)

// TestWriteFile_ParquetCompression checks that WithParquetCompression
// picks the codec of every column chunk, WriteFile's and Write's alike,
// and that an unknown codec is refused before anything is written.
func TestWriteFile_ParquetCompression(t *testing.T) {
	mem := testmem.Checked(t)
	recs := oddRows(mem, 20_000, 5000)
	defer releaseAll(recs)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	for _, tt := range []struct {
		name  string
		codec string // "" is the default
		want  string // parquet_metadata's compression
	}{
		{"default", "", "ZSTD"},
		{"snappy", "snappy", "SNAPPY"},
		{"uncompressed", "uncompressed", "UNCOMPRESSED"},
		{"gzip", "gzip", "GZIP"},
	} {
		for _, stream := range []bool{false, true} {
			name := tt.name + "/file"
			if stream {
				name = tt.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				rdr, err := array.NewRecordReader(oddSchema, recs)
				if err != nil {
					t.Fatal(err)
				}
				defer rdr.Release()
				var opts []filesio.WriteOption
				if tt.codec != "" {
					opts = append(opts, filesio.WithParquetCompression(tt.codec))
				}
				path := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".parquet")
				if stream {
					var buf bytes.Buffer
					if err := filesio.Write(context.Background(), rdr, &buf, "parquet", opts...); err != nil {
						t.Fatalf("write: %v", err)
					}
					if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				} else if err := filesio.WriteFile(context.Background(), rdr, path, "parquet", opts...); err != nil {
					t.Fatalf("write: %v", err)
				}
				var got string
				var rows int64
				if err := db.QueryRow("SELECT string_agg(DISTINCT compression, ','), (SELECT count(*) FROM read_parquet($1)) FROM parquet_metadata($1)", path).Scan(&got, &rows); err != nil {
					t.Fatalf("read back: %v", err)
				}
				if got != tt.want {
					t.Errorf("compression: got %s, want %s", got, tt.want)
				}
				if rows != 20_000 {
					t.Errorf("rows: got %d, want 20000", rows)
				}
			})
		}
	}
	t.Run("unknown", func(t *testing.T) {
		rdr, err := array.NewRecordReader(oddSchema, recs)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		path := filepath.Join(dir, "unknown.parquet")
		err = filesio.WriteFile(context.Background(), rdr, path, "parquet", filesio.WithParquetCompression("lzma"))
		if err == nil || !strings.Contains(err.Error(), `unknown Parquet compression "lzma"`) {
			t.Fatalf("got %v, want an unknown-compression error", err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s exists after a refused write (stat: %v)", path, err)
		}
	})
}
