package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// tooDeep took DuckDB's parser over 4 seconds of a core that nothing
// could interrupt (2,048 '+': cubic in the run's length), from any user.
var tooDeep = "SELECT " + strings.Repeat("+", 2000) + "1"

// TestServer_TooComplex: a readonly user's statement whose shape would
// hold DuckDB's parser for seconds is refused before DuckDB sees it,
// with an error that says why, on every Flight SQL path (InvalidArgument)
// and over MySQL (a syntax error, 1064), text and prepared; long
// statements of shapes that parse in linear time still run.
func TestServer_TooComplex(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "c.duckdb"), MySQLAddr: "127.0.0.1:0",
		Security: server.Security{Users: roleUsers},
	})
	ctx := context.Background()
	bi := roleUsers[2]
	want := fmt.Sprintf("statement too complex: nesting depth 2000 exceeds the limit of %d", engine.MaxStatementDepth)

	c := testutil.Dial(t, srv, client.Config{User: bi.Name, Password: bi.Password})
	for _, p := range flightPaths {
		for _, rows := range []bool{true, false} {
			err := p.run(ctx, c, roleCase{sql: tooDeep, rows: rows})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
				t.Errorf("Flight %s (rows %v): got %v, want InvalidArgument: %s", p.name, rows, err, want)
			}
		}
	}

	db := openMySQL(t, srv, bi, "")
	checkMySQL := func(how string, err error) {
		t.Helper()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1064 || !strings.Contains(me.Message, want) {
			t.Errorf("MySQL %s: got %v, want error 1064: %s", how, err, want)
		}
	}
	_, err := db.Exec(tooDeep)
	checkMySQL("COM_QUERY", err)
	if st, err := db.Prepare(tooDeep); err == nil {
		_, err = st.Exec()
		st.Close()
		checkMySQL("COM_STMT_PREPARE", err)
	} else {
		checkMySQL("COM_STMT_PREPARE", err)
	}

	long := []struct {
		name, sql string
		want      int64
	}{
		{"IN list of 5,000", "SELECT count(*)::BIGINT FROM range(10) r(i) WHERE i IN (1" + strings.Repeat(", 2", 4999) + ")", 2},
		{"4,000 ORs", "SELECT count(*)::BIGINT FROM range(10) r(i) WHERE i = 1" + strings.Repeat(" OR i = 2", 3999), 2},
		{"sum of 100 terms", "SELECT (1" + strings.Repeat(" + 1", 99) + ")::BIGINT", 100},
		{"list of 1,000 sums", "SELECT len([" + strings.Repeat("1 + 1, ", 999) + "1 + 1])::BIGINT", 1000},
		{"sum of 1,000 terms as a list", "SELECT list_sum([1" + strings.Repeat(", 1", 999) + "])::BIGINT", 1000},
	}
	for _, tc := range long {
		t.Run(tc.name, func(t *testing.T) {
			sql := tc.sql
			r, err := c.Query(ctx, sql)
			if err != nil {
				t.Fatalf("Flight: %v", err)
			}
			defer r.Release()
			if !r.Next() {
				t.Fatalf("Flight: no row: %v", r.Err())
			}
			if got := fmt.Sprint(r.RecordBatch().Column(0).ValueStr(0)); got != fmt.Sprint(tc.want) {
				t.Errorf("Flight: got %s, want %d", got, tc.want)
			}
			var got int64
			if err := db.QueryRow(sql).Scan(&got); err != nil || got != tc.want {
				t.Errorf("MySQL: got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestConsole_TooComplex: the console's query endpoint refuses the same
// statement, on a server without users, where every statement runs as an
// admin's: the limit holds for every role.
func TestConsole_TooComplex(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{HTTPAddr: "127.0.0.1:0"})
	resp := consolePost(t, srv, "/api/query", map[string]string{"sql": tooDeep})
	defer resp.Body.Close()
	var body struct{ Error, Code string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("statement too complex: nesting depth 2000 exceeds the limit of %d", engine.MaxStatementDepth)
	if resp.StatusCode != http.StatusBadRequest || body.Code != "sql" || !strings.Contains(body.Error, want) {
		t.Errorf("got %s %+v, want 400 with code sql: %s", resp.Status, body, want)
	}
}
