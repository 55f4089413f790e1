package flightsql

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
)

// TestClassKey checks that the classifier knows a Flight statement by its
// text in the session's catalog and schema: the same text under other
// session options is another key, and sessions with the same options
// share one.
func TestClassKey(t *testing.T) {
	const q = "SELECT * FROM events"
	with := func(opts map[string]string) context.Context {
		m := map[string]*flight.SessionOptionValue{}
		for k, v := range opts {
			sv, err := flight.NewSessionOptionValue(v)
			if err != nil {
				t.Fatal(err)
			}
			m[k] = &sv
		}
		return session.NewSessionContext(context.Background(), session.NewStatelessServerSession(m))
	}
	keys := map[string]context.Context{
		"no session":        context.Background(),
		"no options":        with(nil),
		"schema dev":        with(map[string]string{"schema": "dev"}),
		"schema prod":       with(map[string]string{"schema": "prod"}),
		"catalog lake":      with(map[string]string{"catalog": "lake"}),
		"lake.dev":          with(map[string]string{"catalog": "lake", "schema": "dev"}),
		"catalog lake.dev":  with(map[string]string{"catalog": "lake.dev"}),
		"schema dev, again": with(map[string]string{"schema": "dev"}),
	}
	got := map[string]string{}
	for name, ctx := range keys {
		k := classKey(ctx, q)
		if k.SQL != q {
			t.Errorf("%s: SQL %q, want %q", name, k.SQL, q)
		}
		got[name] = k.Scope
	}
	same := [][2]string{{"no session", "no options"}, {"schema dev", "schema dev, again"}}
	for _, p := range same {
		if got[p[0]] != got[p[1]] {
			t.Errorf("%s and %s: scopes %q and %q, want the same", p[0], p[1], got[p[0]], got[p[1]])
		}
	}
	distinct := []string{"no session", "schema dev", "schema prod", "catalog lake", "lake.dev", "catalog lake.dev"}
	seen := map[string]string{}
	for _, name := range distinct {
		if other, ok := seen[got[name]]; ok {
			t.Errorf("%s and %s share the scope %q", name, other, got[name])
		}
		seen[got[name]] = name
	}
}
