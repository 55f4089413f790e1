package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// runCLI runs the quiver CLI as a process (this test binary) with stdin
// from a pipe, and returns its exit status and output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, out, errOut string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), asCLI+"=1", "HOME="+t.TempDir(), "XDG_STATE_HOME=")
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return code, o.String(), e.String()
}

// shellServer starts quiver serve in-process on 127.0.0.1:0 with the
// voyages table the shell tests query, and returns it with a client of
// it.
func shellServer(t *testing.T) (*server.Server, *client.Client) {
	t.Helper()
	srv, stop := startServe(t, "--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "", "--http", "")
	t.Cleanup(stop)
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(),
		"CREATE TABLE voyages AS SELECT i AS leg, i * 1.5 AS fare_amount FROM range(3) t(i)"); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// tableExists reports whether the server has a table named name.
func tableExists(t *testing.T, c *client.Client, name string) bool {
	t.Helper()
	n, err := testutil.CountRows(context.Background(), c, "SELECT 1 FROM duckdb_tables() WHERE table_name = '"+name+"'")
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func TestShell_Script(t *testing.T) {
	srv, c := shellServer(t)
	dir := t.TempDir()
	csvFile := filepath.Join(dir, "out.csv")
	arrowFile := filepath.Join(dir, "out.arrow")
	for _, tt := range []struct {
		name   string
		script string
		args   []string
		// wantCode is the exit status; wantOut and wantErr are texts
		// stdout and stderr hold.
		wantCode         int
		wantOut, wantErr []string
		// notOut are texts stdout must not hold.
		notOut []string
		// made and notMade are tables the script makes, or must not
		// (notMade: none made after a failed statement, none left by a
		// rolled-back transaction).
		made, notMade []string
	}{
		{
			name:    "statements in order",
			script:  "SELECT 42 AS answer;\nSELECT 'a;b' AS s; -- a comment;\nSELECT\n  6 * 7 AS product\n;\n",
			wantOut: []string{"answer\n------\n42\n(1 row)\n", "s\n----\na;b\n(1 row)\n", "product\n-------\n42\n(1 row)\n"},
		},
		{
			name:    "the last statement needs no semicolon",
			script:  "SELECT 1 AS one;\nSELECT 2 AS two",
			wantOut: []string{"one", "two\n----\n2\n"},
		},
		{
			name:     "stops at the first error",
			script:   "SELECT 1 AS one;\n\nSELECT nope;\nCREATE TABLE after_error (i INT);\n",
			wantCode: 1,
			wantOut:  []string{"one"},
			wantErr:  []string{"quiver shell: line 3: SELECT nope: query: Binder Error: Referenced column \"nope\" was not found"},
			notMade:  []string{"after_error"},
		},
		{
			name:     "keep going",
			script:   "SELECT nope;\nCREATE TABLE kept_going (i INT);\nSELECT nada;\n",
			args:     []string{"--keep-going"},
			wantCode: 1,
			wantErr:  []string{"quiver shell: line 1: SELECT nope:", "quiver shell: 2 statements failed; the first: line 1: SELECT nope:"},
			made:     []string{"kept_going"},
		},
		{
			name:     "an open string at the end",
			script:   "SELECT 1 AS one;\nSELECT 'open\n",
			wantCode: 1,
			wantOut:  []string{"one"},
			wantErr:  []string{"quiver shell: line 2: the input ends inside a statement: unterminated string"},
		},
		{
			name:    "dot-commands",
			script:  ".tables\n.schema voyages\n.mode csv\nSELECT * FROM voyages ORDER BY leg;\n.mode\n",
			wantOut: []string{"table_name", "voyages", "CREATE TABLE main.voyages (\n  leg BIGINT,\n  fare_amount DECIMAL(21,1)\n);\n", "leg,fare_amount\n0,0.0\n1,1.5\n2,3.0\n"},
			wantErr: []string{"csv\n"},
		},
		{
			name:    "output to a file and back",
			script:  ".output " + csvFile + "\n.mode csv\nSELECT 7 AS seven;\n.output\nSELECT 8 AS eight;\n",
			wantOut: []string{"eight"},
			notOut:  []string{"seven"},
		},
		{
			name:    "arrow to a file",
			script:  ".mode arrow\n.output " + arrowFile + "\nSELECT leg FROM voyages ORDER BY 1;\n",
			notOut:  []string{"leg"},
			wantErr: nil,
		},
		{
			name:     "arrow writes one result per file",
			script:   ".mode arrow\n.output " + filepath.Join(dir, "once.arrow") + "\nSELECT 1;\nSELECT 2;\n",
			wantCode: 1,
			wantErr:  []string{"line 4: SELECT 2: the arrow mode writes one result per file: give .output FILE again"},
		},
		{
			name:     "an unknown dot-command",
			script:   ".frobnicate\nSELECT 1;\n",
			wantCode: 1,
			wantErr:  []string{"quiver shell: line 1: .frobnicate: unknown command .frobnicate: see .help"},
		},
		{
			name:     "schema of no table",
			script:   ".schema nosuch\n",
			wantCode: 1,
			wantErr:  []string{"line 1: .schema nosuch: no table nosuch"},
		},
		{
			name:    "a transaction rolled back",
			script:  "BEGIN;\nCREATE TABLE tx_dropped (i INT);\nCREATE TEMP TABLE tx_scratch AS SELECT 41 AS i;\nSELECT i + 1 AS in_txn FROM tx_scratch;\nROLLBACK;\n",
			wantOut: []string{"in_txn\n------\n42\n"},
			notMade: []string{"tx_dropped"},
		},
		{
			name:   "a transaction committed",
			script: "START TRANSACTION;\nCREATE TABLE tx_kept (i INT);\nINSERT INTO tx_kept VALUES (1);\nCOMMIT;\n",
			made:   []string{"tx_kept"},
		},
		{
			name:    "a transaction left open is rolled back",
			script:  "BEGIN;\nCREATE TABLE tx_left (i INT);\n",
			wantErr: []string{"quiver shell: the open transaction was rolled back"},
			notMade: []string{"tx_left"},
		},
		{
			name:     "commit with no transaction",
			script:   "COMMIT;\n",
			wantCode: 1,
			wantErr:  []string{"quiver shell: line 1: COMMIT: no transaction is open: BEGIN one first"},
		},
		{
			name:     "begin twice",
			script:   "BEGIN;\nBEGIN;\n",
			wantCode: 1,
			wantErr:  []string{"quiver shell: line 2: BEGIN: a transaction is open already: COMMIT or ROLLBACK it first", "the open transaction was rolled back"},
		},
		{
			name:    "quit stops the script",
			script:  "SELECT 1 AS one;\n.quit\nSELECT 2 AS two;\n",
			wantOut: []string{"one"},
			notOut:  []string{"two"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"shell", "--server", srv.FlightAddr}, tt.args...)
			code, out, errOut := runCLI(t, tt.script, args...)
			if code != tt.wantCode {
				t.Errorf("exit status: got %d, want %d; stderr: %s", code, tt.wantCode, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q; got:\n%s", w, out)
				}
			}
			for _, w := range tt.notOut {
				if strings.Contains(out, w) {
					t.Errorf("stdout holds %q; got:\n%s", w, out)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q; got:\n%s", w, errOut)
				}
			}
			for _, name := range tt.made {
				if !tableExists(t, c, name) {
					t.Errorf("table %s was not made", name)
				}
			}
			for _, name := range tt.notMade {
				if tableExists(t, c, name) {
					t.Errorf("table %s was made", name)
				}
			}
		})
	}

	t.Run("files written", func(t *testing.T) {
		b, err := os.ReadFile(csvFile)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), "seven\n7\n"; got != want {
			t.Errorf("%s: got %q, want %q", csvFile, got, want)
		}
		f, err := os.Open(arrowFile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			t.Fatalf("read %s as an Arrow file: %v", arrowFile, err)
		}
		defer r.Close()
		var ids []int64
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
		}
		if got := len(ids); got != 3 || ids[0] != 0 || ids[2] != 2 {
			t.Errorf("%s: leg %v, want [0 1 2]", arrowFile, ids)
		}
	})
}

func TestShell_Usage(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"shell", "SELECT 1"}, "quiver shell: quiver shell takes no arguments"},
		{[]string{"shell", "--mode", "parquet"}, `quiver shell: unknown mode "parquet": use table, csv, json, arrow`},
		{[]string{"shell", "--compression", "gzip"}, `quiver shell: unknown --compression "gzip"`},
	} {
		code, _, errOut := runQuiver(t, tt.args...)
		if code != 2 || !strings.HasPrefix(errOut, tt.wantErr) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, errOut, tt.wantErr)
		}
	}
}

// TestQuery_NoSQLFromAPipe checks quiver query keeps its answer to no
// SQL when stdin is not a terminal: a usage error, not a shell.
func TestQuery_NoSQLFromAPipe(t *testing.T) {
	code, _, errOut := runCLI(t, "SELECT 1;\n", "query", "--server", "127.0.0.1:1")
	if code != 2 || !strings.Contains(errOut, "give one SQL statement") {
		t.Errorf("exit %d, stderr %q; want 2 and a usage error", code, errOut)
	}
}
