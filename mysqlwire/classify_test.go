package mysqlwire

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
)

// TestAdmission_ClassifiesByDatabase checks that the classifier knows a
// statement by its text in the session's database: the same SELECT in
// another database reads another table, so what it did in one says
// nothing of the other. The database comes from the handshake or USE.
func TestAdmission_ClassifiesByDatabase(t *testing.T) {
	cls := &admit.Classifier{}
	ts := startServer(t, Options{Admission: admit.New(admit.Config{}), Classifier: cls})
	ctx := context.Background()
	setup := ts.conn(t, "multiStatements=true")
	if _, err := setup.ExecContext(ctx, `CREATE SCHEMA few; CREATE SCHEMA many;
		CREATE TABLE few.events AS SELECT range AS id FROM range(10);
		CREATE TABLE many.events AS SELECT range AS id FROM range(50000)`); err != nil {
		t.Fatal(err)
	}
	const q = "SELECT id FROM events"
	run := func(db string) int {
		t.Helper()
		c, err := ts.openAs(t, "u", "", db, "").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s in %s: %v", q, db, err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	key := func(db string) admit.Key { return admit.Key{Scope: engine.QuoteIdent(db), SQL: q} }
	if n := run("few"); n != 10 {
		t.Fatalf("few: %d rows, want 10", n)
	}
	if n := run("many"); n != 50000 {
		t.Fatalf("many: %d rows, want 50000", n)
	}
	for _, tc := range []struct {
		db   string
		want admit.Lane
	}{{"few", admit.Small}, {"many", admit.Bulk}} {
		if l, ok := cls.Known(key(tc.db)); !ok || l != tc.want {
			t.Errorf("%q in %s: known %v, %v; want %v", q, tc.db, l, ok, tc.want)
		}
	}
	if _, ok := cls.Known(admit.Key{SQL: q}); ok {
		t.Errorf("%q is known without a database, where it never ran", q)
	}

	// USE as a statement sets it too.
	c := ts.conn(t, "")
	if _, err := c.ExecContext(ctx, "USE few"); err != nil {
		t.Fatal(err)
	}
	const q2 = "SELECT id FROM events WHERE id < 3"
	var n int
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM ("+q2+")").Scan(&n); err != nil || n != 3 {
		t.Fatalf("after USE few: %d rows, %v; want 3", n, err)
	}
	if _, ok := cls.Known(admit.Key{Scope: engine.QuoteIdent("few"), SQL: "SELECT count(*) FROM (" + q2 + ")"}); !ok {
		t.Error("a statement after USE few is not known in few")
	}

	// A USE that fails (error 1049) leaves the session, and its key, in
	// the database it had.
	if _, err := c.ExecContext(ctx, "USE nosuch"); mysqlErrNum(err) != 1049 {
		t.Fatalf("USE nosuch: %v, want error 1049", err)
	}
	const q3 = "SELECT max(id) FROM events"
	var maxID int
	if err := c.QueryRowContext(ctx, q3).Scan(&maxID); err != nil || maxID != 9 {
		t.Fatalf("after a failed USE: max %d, %v; want 9 from few", maxID, err)
	}
	if _, ok := cls.Known(admit.Key{Scope: engine.QuoteIdent("few"), SQL: q3}); !ok {
		t.Error("after a failed USE, a statement is not known in few")
	}
}
