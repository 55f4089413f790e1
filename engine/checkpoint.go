package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// A force checkpoint (FORCE CHECKPOINT, CALL force_checkpoint(), or
// SELECT … FROM force_checkpoint()) is the one statement of DuckDB that
// waits on other connections' transactions, and it waits in a way that stops
// the whole database. Measured on DuckDB 1.5.6 with a file database,
// another connection holding a transaction open (TestStmt_ForceCheckpoint
// and TestStmt_ForceCheckpointCanceled keep the waits, the blocking and the
// plain CHECKPOINT true; the interrupted checkpoint was made slow with
// debug_checkpoint_sleep_ms):
//
//   - The transaction keeps it waiting once it wrote to the database's
//     storage or catalog: nextval, UPDATE, DELETE, DDL. One that only
//     INSERTed (rows still in its local storage) does not.
//   - While it waits it holds the lock that starts write transactions, so
//     every statement that opens a transaction on the database blocks
//     inside DuckDB before it runs: a SELECT from a table, an INSERT, DDL
//     (a SELECT 1 that reads no table still runs). An interrupt cannot
//     reach them; they run when the checkpoint stops waiting. With an
//     abandoned transaction and no query timeout, that is never.
//   - The wait itself polls for interrupts: duckdb_interrupt ends it
//     within milliseconds, and the blocked statements then run. It spins
//     meanwhile, 0.6–0.85 of a core.
//   - Once it has the lock, the checkpoint runs to completion whatever
//     the interrupt (a 2.5 s checkpoint interrupted after 200 ms finished,
//     then reported the interrupt), and the database stays sound.
//   - A plain CHECKPOINT never waits: with such a transaction open it
//     fails at once ("there are other write transactions active").
//   - DDL does not wait on another connection's open transaction either:
//     conflicts surface at commit.
//
// So the engine does the waiting itself, where nobody else is held: before
// a force checkpoint runs, its connection tries a plain CHECKPOINT, again
// and again with a pause between tries, until one succeeds (no other write
// transaction holds the database) or the statement's context ends. Only
// then does the statement run, and it finds the lock free. Unrelated
// readers and writers run throughout; the wait is the statement's alone,
// bounded by its context (the query timeout).
//
// The price is DuckDB's guarantee against starvation: its wait stops new
// writers so that the checkpoint gets its turn, the tries do not, so under
// a steady stream of writes a try may keep meeting one, and the statement
// waits for a gap. With two clients inserting and creating tables without
// pause, the checkpoint ran 0.45 s after the transaction it waited for was
// rolled back (TestServer_AbandonedTxnFreeze in package flightsql).
//
// What is left: a write that starts in the moment between the successful
// try and the statement's own start makes the statement wait in DuckDB as
// before, for as long as that write's transaction lasts. A force
// checkpoint inside a script, a view or a macro, or one whose SQL takes
// parameters, is not recognized and runs as DuckDB runs it; so does one
// naming another database than the connection's (the tries checkpoint the
// connection's own). Those are bounded by the query timeout, and by the
// server rolling back transactions that clients abandon.

// checkpointWord is what the text of every direct call of a force
// checkpoint holds, in any case: DuckDB's parser has no escapes in
// identifiers (U&"…" is not implemented).
const checkpointWord = "checkpoint"

// The pauses between a waiting force checkpoint's tries: doubling from
// the first to the last. A try that fails costs DuckDB microseconds, so
// the pause bounds how late the checkpoint runs after the writer ends,
// not the load.
const (
	checkpointPollMin = 5 * time.Millisecond
	checkpointPollMax = 100 * time.Millisecond
)

// forcesCheckpoint reports whether sql, one statement just prepared on c,
// runs a force checkpoint anywhere in its plan. Only SQL that mentions a
// checkpoint is planned again to find out (an EXPLAIN costs two to three
// times a prepare: 0.9 ms against 0.35 ms for SELECT 1 here), so other
// statements pay one scan of their text. A statement that cannot be explained (one with
// parameters) is taken not to.
func (c *Conn) forcesCheckpoint(ctx context.Context, sql string) bool {
	if c.inCheckpointCheck || !containsFold(sql, checkpointWord) {
		return false
	}
	c.inCheckpointCheck = true
	defer func() { c.inCheckpointCheck = false }()
	plan, err := c.ExplainJSON(ctx, sql)
	if err != nil {
		return false
	}
	nodes, err := duckdbsql.ReadExplain(plan)
	if err != nil {
		return false
	}
	return anyNode(nodes, "FORCE_CHECKPOINT")
}

// anyNode reports whether a node of the plan, at any depth, is named name.
func anyNode(nodes []duckdbsql.Operator, name string) bool {
	for _, n := range nodes {
		if n.Name == name || anyNode(n.Children, name) {
			return true
		}
	}
	return false
}

// containsFold reports whether s holds word (lower-case ASCII) in any
// case, without copying s.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		j := 0
		for j < len(word) && s[i+j]|0x20 == word[j] {
			j++
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

// awaitCheckpoint returns once a plain CHECKPOINT on c succeeds, or fails
// for any reason but other write transactions (the force checkpoint that
// follows then reports it, e.g. inside a transaction), or with a
// KindCanceled error when ctx ends first.
func (c *Conn) awaitCheckpoint(ctx context.Context) error {
	start := time.Now()
	defer func() { checkpointWaitSeconds.Add(time.Since(start).Seconds()) }()
	pause := checkpointPollMin
	for {
		if !c.checkpointBlocked() {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			checkpointWaitsTimedOut.Inc()
			return &Error{Kind: KindCanceled, Msg: fmt.Sprintf(
				"force checkpoint canceled after waiting %v for other connections' write transactions to end: %v",
				time.Since(start).Round(time.Millisecond), ctx.Err())}
		case <-t.C:
		}
		pause = min(2*pause, checkpointPollMax)
	}
}

// checkpointBlocked tries a plain CHECKPOINT on c and reports whether
// other write transactions refused it. It bypasses Prepare: it is no
// force checkpoint, and must not be checked for one.
func (c *Conn) checkpointBlocked() bool {
	var res duckdb.Result
	defer duckdb.DestroyResult(&res)
	if duckdb.Query(c.conn, "CHECKPOINT", &res) != duckdb.StateError {
		return false
	}
	return strings.Contains(duckdb.ResultError(&res), "other write transactions")
}
