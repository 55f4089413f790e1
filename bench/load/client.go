package load

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ipcx"
)

// opKind is one of the things a load client does in its loop.
type opKind int

const (
	opPoint opKind = iota // point lookup by id
	opAgg                 // small aggregate over a range of ids
	opFetch               // the fetch-rows result, read fully
	opWrite               // INSERT of one row with a fresh id (writers only)
	numOps
)

var opNames = [numOps]string{"point", "aggregate", "fetch", "write"}

// small reports whether k's latency counts as a small query's.
func (k opKind) small() bool { return k == opPoint || k == opAgg }

// Protocols of load clients.
const (
	protoFlight = "flight"
	protoMySQL  = "mysql"
)

// loadTable is the generated table clients read, and loadWrites the one
// writers insert into. loadWrites has no key on purpose: a write applied
// twice shows as a duplicate instead of a constraint error.
const (
	loadTable  = "load_rows"
	loadWrites = "load_writes"
)

// queries are the statements of the client loop for a table of rows rows.
type queries struct {
	rows, aggRows, fetchRows int64
}

func (q queries) createTable() string {
	return fmt.Sprintf("CREATE OR REPLACE TABLE %s AS SELECT i AS id, (i %% 100)::INTEGER AS grp, "+
		"(i * 7 %% 1000) / 10.0 AS amount, 'item_' || (i %% 5000) AS name FROM range(%d) t(i)", loadTable, q.rows)
}

func (q queries) createWrites() string {
	return fmt.Sprintf("CREATE OR REPLACE TABLE %s (id BIGINT, client INTEGER)", loadWrites)
}

func (q queries) point(r *rand.Rand) string {
	return fmt.Sprintf(q.pointTemplate(), r.Int64N(q.rows))
}

// pointTemplate is the point lookup with %d for its id.
func (q queries) pointTemplate() string {
	return "SELECT id, grp, amount, name FROM " + loadTable + " WHERE id = %d"
}

func (q queries) agg(r *rand.Rand) string {
	lo := r.Int64N(max(q.rows-q.aggRows, 1))
	return fmt.Sprintf("SELECT grp, count(*), sum(amount) FROM %s WHERE id >= %d AND id < %d GROUP BY grp", loadTable, lo, lo+q.aggRows)
}

func (q queries) fetch() string { return q.fetchN(q.fetchRows) }

func (q queries) fetchN(n int64) string {
	return fmt.Sprintf("SELECT id, grp, amount, name FROM %s LIMIT %d", loadTable, n)
}

func (q queries) insert(id int64, client int) string {
	return fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", loadWrites, id, client)
}

// conn is one client's connection over Flight SQL or MySQL. It
// belongs to one goroutine.
type conn interface {
	// query runs sql and reads its result to the end, calling onBatch for
	// each batch (Flight) or run of rows (MySQL) read.
	query(ctx context.Context, sql string, onBatch func(rows, bytes int64)) error
	exec(ctx context.Context, sql string) error
	close()
}

// target is where and as whom load clients connect.
type target struct {
	flight, mysql  string
	user, password string
	mem            memory.Allocator
}

// dial connects one client over proto and logs in; local, when not nil,
// is kept up to date with a MySQL connection's local address.
func (t target) dial(ctx context.Context, proto string, local *atomic.Pointer[string]) (conn, error) {
	if proto == protoMySQL {
		return t.dialMySQL(ctx, local)
	}
	c, err := client.Dial(ctx, client.Config{Addr: t.flight, User: t.user, Password: t.password, Allocator: t.mem})
	if err != nil {
		return nil, err
	}
	return flightConn{c}, nil
}

// dialMySQL connects over MySQL; local, when not nil, is set to the local
// address of each connection the driver dials.
func (t target) dialMySQL(ctx context.Context, local *atomic.Pointer[string]) (conn, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = t.user, t.password, "tcp", t.mysql, "main"
	cfg.Timeout = 30 * time.Second
	if local != nil {
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				a := c.LocalAddr().String()
				local.Store(&a)
			}
			return c, err
		}
	}
	// The driver logs each broken connection it drops; a restart
	// breaks hundreds, which the report counts instead.
	cfg.Logger = &mysql.NopLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql connector: %w", err)
	}
	// One connection, which database/sql replaces when it breaks.
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return mysqlConn{db}, nil
}

// flightConn is a load client over Flight SQL, through quiver's client.
type flightConn struct{ c *client.Client }

func (f flightConn) query(ctx context.Context, sql string, onBatch func(rows, bytes int64)) error {
	res, err := f.c.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer res.Release()
	for res.Next() {
		rec := res.RecordBatch()
		onBatch(rec.NumRows(), ipcx.RecordBytes(rec))
		yieldToOthers()
	}
	return res.Err()
}

func (f flightConn) exec(ctx context.Context, sql string) error {
	_, err := f.c.Exec(ctx, sql)
	return err
}

func (f flightConn) close() { f.c.Close() }

// mysqlConn is a load client over the MySQL protocol (text protocol,
// go-sql-driver/mysql), holding at most one connection.
type mysqlConn struct{ db *sql.DB }

// mysqlRun is how many rows mysqlConn.query reads between onBatch calls.
const mysqlRun = 4096

// yieldToOthers is called by a client reading a result after each batch
// (Flight) or each mysqlRun rows (MySQL): it yields the goroutine's Go
// processor. The clients of one process (the bench's, or each client
// process's share: Config.ClientProcs) share its Go runtime, where a
// goroutine that reads a large result runs until it blocks or is
// preempted, 10 ms later; a small query's reply, once it arrives, waits to run behind
// every such goroutine ahead of it, several times per query. A client on
// a machine of its own never waits behind another's decoding. At 1,000
// clients, nine alternated pairs of runs (README, "The bench's clients
// yield") gave the bench's clients a small-query p99 of 41 ms against 47
// ms (medians), their goroutines' run wait p99 29 ms against 59 ms, and
// 8% more rows fetched.
func yieldToOthers() { runtime.Gosched() }

func (m mysqlConn) query(ctx context.Context, q string, onBatch func(rows, bytes int64)) error {
	rows, err := m.db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	var n, b int64
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		n++
		for _, v := range raw {
			b += int64(len(v))
		}
		if n == mysqlRun {
			onBatch(n, b)
			n, b = 0, 0
			yieldToOthers()
		}
	}
	if n > 0 {
		onBatch(n, b)
	}
	return rows.Err()
}

func (m mysqlConn) exec(ctx context.Context, q string) error {
	_, err := m.db.ExecContext(ctx, q)
	return err
}

func (m mysqlConn) close() { m.db.Close() }

// errClass names an error for the report: the protocol and its code, like
// "flight ResourceExhausted" or "mysql 1040". rejected is true for the
// documented overload refusals: Flight RESOURCE_EXHAUSTED and MySQL
// errors 1040 (too many connections) and 1203 (too many connections for
// the user).
func errClass(proto string, err error) (class string, rejected bool) {
	if proto == protoMySQL {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return fmt.Sprintf("mysql %d", me.Number), me.Number == 1040 || me.Number == 1203
		}
		switch {
		case errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, sql.ErrConnDone):
			return "mysql invalid connection", false
		case errors.Is(err, context.DeadlineExceeded):
			return "mysql timeout", false
		}
		return "mysql network", false
	}
	if st, ok := status.FromError(err); ok {
		return "flight " + st.Code().String(), st.Code() == codes.ResourceExhausted
	}
	return "flight " + status.Code(err).String(), false
}

// opErr is one failed operation.
type opErr struct {
	at       time.Time
	class    string
	rejected bool
}

// clientStats is what one client did in a window. Its client's goroutine
// writes it; it is read after that goroutine ended.
type clientStats struct {
	ops       [numOps]int64 // completed in the window
	done      [numOps]int64 // completed, warm-up included
	fetchRows int64         // rows read in the window, finished fetches or not
	fetchB    int64
	small     []time.Duration // point and aggregate latencies
	// fetches are the fetches' times, those the window's end cut short
	// with the time they had taken (fetchCut of them); killed ones are
	// left out.
	fetches  []time.Duration
	fetchCut int
	errs     []opErr
	// examples holds the first message of each error class.
	examples map[string]string
	// cutShort counts the small queries the window's end cut short.
	cutShort int
	// cut is the operation the window's end cut short, if any, and cutAt
	// how long it had run by then.
	cut   opKind
	cutAt time.Duration
	// errOps counts the failed operations by kind.
	errOps [numOps]int64
	// acked are the ids of the writes the server acknowledged.
	acked []int64
	// okAfterRestart is the start of the first operation that succeeded
	// once the restarted server's old process had exited.
	okAfterRestart time.Time
}

// user is one simulated user: its own connection, looping over the
// operations until its context ends, reconnecting when it breaks.
type user struct {
	id    int
	proto string
	// slowRate, when not 0, paces fetches to this many bytes/s.
	slowRate int64
	writer   bool
	// idle clients run small queries only.
	idle   bool
	target target
	q      queries
	ids    *idSource
	rnd    *rand.Rand

	conn conn
	st   clientStats

	// kill state: mu guards cancel (of the running operation), inFetch
	// and killed.
	mu      sync.Mutex
	cancel  context.CancelFunc
	inFetch bool
	killed  bool

	// opStart is when the running operation started (Unix ns; 0: none)
	// and opNow its kind, and local the local address of the client's
	// latest MySQL connection: what the window's end reports of a client
	// that has been in one operation for long (stuckOps).
	opStart atomic.Int64
	opNow   atomic.Int32
	local   atomic.Pointer[string]
}

func newUser(id int, proto string, t target, q queries, ids *idSource) *user {
	return &user{id: id, proto: proto, target: t, q: q, ids: ids,
		rnd: rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano()))),
		st:  clientStats{examples: map[string]string{}}}
}

// connect dials the client's connection, if it has none.
func (c *user) connect(ctx context.Context) error {
	if c.conn != nil {
		return nil
	}
	conn, err := c.target.dial(ctx, c.proto, &c.local)
	if err != nil {
		return err
	}
	c.conn = conn
	return nil
}

// drop closes the client's connection; the next operation dials again.
func (c *user) drop() {
	if c.conn != nil {
		c.conn.close()
		c.conn = nil
	}
}

// run loops over the operations until ctx ends. w says what the window
// knows of restarts.
func (c *user) run(ctx context.Context, w *window, kinds []opKind) {
	var b backoff
	for ctx.Err() == nil {
		if err := c.connect(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.failed(err)
			b.wait(ctx, c.rnd)
			continue
		}
		for _, k := range kinds {
			if ctx.Err() != nil {
				return
			}
			if c.conn == nil {
				break // killed: dial again, as a new client
			}
			ok := c.do(ctx, w, k)
			if !ok {
				b.wait(ctx, c.rnd)
				break
			}
			b.reset()
		}
	}
}

// do runs one operation and records it; it reports whether it succeeded.
func (c *user) do(ctx context.Context, w *window, k opKind) bool {
	opCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	c.cancel, c.inFetch, c.killed = cancel, k == opFetch, false
	c.mu.Unlock()

	start := time.Now()
	c.opNow.Store(int32(k))
	c.opStart.Store(start.UnixNano())
	defer c.opStart.Store(0)
	var id int64
	var err error
	switch k {
	case opPoint:
		err = c.conn.query(opCtx, c.q.point(c.rnd), func(int64, int64) {})
	case opAgg:
		err = c.conn.query(opCtx, c.q.agg(c.rnd), func(int64, int64) {})
	case opFetch:
		p := newPacer(c.slowRate)
		err = c.conn.query(opCtx, c.q.fetch(), func(rows, bytes int64) {
			if w.measured(time.Now()) {
				c.st.fetchRows += rows
				c.st.fetchB += bytes
			}
			p.pace(opCtx, bytes)
		})
	case opWrite:
		id = c.ids.next()
		err = c.conn.exec(opCtx, c.q.insert(id, c.id))
	}
	took := time.Since(start)
	// An operation counts when it ends in the measured window; one that
	// ended in the warm-up counts only for the client's own summary.
	measured := w.measured(start.Add(took))

	c.mu.Lock()
	killed := c.killed
	c.cancel, c.inFetch, c.killed = nil, false, false
	c.mu.Unlock()
	if k == opWrite && err == nil {
		// Acknowledged, so committed, even if the window ended meanwhile.
		c.st.acked = append(c.st.acked, id)
	}
	switch {
	case killed:
		// Killed by the chaos step: the client went away mid-stream and
		// comes back as a new one.
		c.drop()
		return true
	case ctx.Err() != nil:
		// The window ended. A small query cut short counts with the
		// time it had taken so far, a lower bound: leaving it out would
		// drop the slowest ones.
		c.st.cut, c.st.cutAt = k, took
		switch {
		case !measured:
		case k.small():
			c.st.small = append(c.st.small, took)
			c.st.cutShort++
		case k == opFetch:
			c.st.fetches = append(c.st.fetches, took)
			c.st.fetchCut++
		}
		return true
	case err != nil:
		c.st.errOps[k]++
		c.failed(err)
		return false
	}
	c.st.done[k]++
	if !measured {
		return true
	}
	c.st.ops[k]++
	switch {
	case k.small():
		c.st.small = append(c.st.small, took)
	case k == opFetch:
		c.st.fetches = append(c.st.fetches, took)
	}
	// Got through again: the new process served it. (It may have begun
	// to serve before the bench saw it ready.)
	if g := w.oldGone(); !g.IsZero() && start.Add(took).After(g) && c.st.okAfterRestart.IsZero() {
		c.st.okAfterRestart = start
	}
	return true
}

// failed records err. A Flight client keeps its gRPC channel, which
// reconnects by itself (and a bearer token outlives a restart), unless
// its credentials were refused; a MySQL client's database/sql replaces a
// broken connection by itself.
func (c *user) failed(err error) {
	class, rejected := errClass(c.proto, err)
	c.st.errs = append(c.st.errs, opErr{at: time.Now(), class: class, rejected: rejected})
	if _, ok := c.st.examples[class]; !ok {
		c.st.examples[class] = firstLine(err.Error())
	}
	if c.proto == protoFlight && status.Code(err) == codes.Unauthenticated {
		c.drop()
	}
}

// kill cancels the client's running fetch, as if the client process died
// mid-stream; it reports whether there was one.
func (c *user) kill() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inFetch || c.cancel == nil || c.killed {
		return false
	}
	c.killed = true
	c.cancel()
	return true
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// backoff spaces a failing client's retries: 50 ms doubling to 2 s, with
// jitter, so that a server coming back is not met by every client at once.
type backoff struct{ n int }

func (b *backoff) wait(ctx context.Context, r *rand.Rand) {
	d := min(50*time.Millisecond<<min(b.n, 6), 2*time.Second)
	b.n++
	d = d/2 + time.Duration(r.Int64N(int64(d/2)+1))
	sleepCtx(ctx, d)
}

func (b *backoff) reset() { b.n = 0 }

// pacer slows a reader down to rate bytes/s (0: no pacing).
type pacer struct {
	rate  int64
	start time.Time
	bytes int64
}

func newPacer(rate int64) *pacer { return &pacer{rate: rate, start: time.Now()} }

// pace notes n more bytes read and sleeps until the reader is back under
// its rate, or ctx ends.
func (p *pacer) pace(ctx context.Context, n int64) {
	if p.rate <= 0 {
		return
	}
	p.bytes += n
	due := p.start.Add(time.Duration(float64(p.bytes) / float64(p.rate) * float64(time.Second)))
	sleepCtx(ctx, time.Until(due))
}

// idSource hands out the unique ids writers insert.
type idSource struct {
	mu sync.Mutex
	n  int64
}

func (s *idSource) next() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.n
}
