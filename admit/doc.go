// Package admit decides when a query runs: now, after a wait in a fair
// queue, or never (the server is too busy, and the client is told so).
//
// Two resources are bounded, each split between two lanes:
//
//   - Run slots bound the queries that execute at once: DuckDB working on
//     them, and quiver converting their rows. A query holds a run slot only
//     while it works. While its client is slow to read (the result pipeline
//     is full and gRPC's or TCP's flow control holds it back) it pauses and
//     gives the slot back, so a client that reads at 1 MB/s takes no CPU
//     from anyone; it takes the slot again, ahead of new queries of its
//     lane, when the client has read.
//   - Open slots bound the results being produced at once, paused or not.
//     Each open result holds a DuckDB connection and at most a few record
//     batches, so this is what bounds the server's result memory; the
//     budget (Budget) sets it.
//
// Queries estimated small, from DuckDB's plan or from what the same SQL
// did before (Classifier), go in the small lane; everything else in the
// bulk lane. Some of each resource is reserved for the small lane: bulk
// queries may never take the last Reserved run slots or the last quarter
// of the open slots. So a point lookup never queues behind bulk fetches;
// at worst it waits for other small queries.
//
// Waiters are served the small lane first, and within a lane fairly
// between classes (an endpoint and a user, from Track), first come, first
// served within a class: a new query starts from the class that ran
// least lately, and a paused one resumes for the class running the
// fewest (see fair.go). A bulk query yields its processor between
// batches (Slot.Resume). A query that cannot start within the queue timeout
// (or whose context ends first) gets a [*BusyError], which the endpoints
// turn into RESOURCE_EXHAUSTED over Flight and error 1040 over MySQL, with
// a message that says what to do. A query never waits without bound, and
// the server never takes on more than its budget.
//
// A query holds a small-lane run slot for at most Config.SmallHold of run
// time; past it, it is demoted to the bulk lane (demote.go), so a query
// that only looked small cannot keep small ones out. Some queries never
// look small: a recursive CTE, whose cost no estimate sees (blind.go).
//
// Holds bounds what clients keep between statements (prepared
// statements, bound parameters, transactions, held results), per session,
// per user and against the budget's Held share (hold.go).
//
// A nil *Controller admits everything at once, so callers need no special
// case when admission control is off.
package admit
