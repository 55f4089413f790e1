package client

// Fetching a result's endpoints.
//
// A FlightInfo lists endpoints; each has a ticket and the locations (replicas)
// that can serve it. One endpoint, or Config.FetchParallel 1, is read on the
// caller's goroutine, endpoint after endpoint, in order. Several are read by a
// pool of workers, each DoGet-ing one endpoint at a time and queueing its
// batches for Result.Next on a channel as deep as the pool is wide, so a
// result of any size holds at most 2×workers+1 batches in the client: one per
// worker waiting to queue, the queue, and the one Next handed out.
//
// An endpoint is tried at each of its locations in turn, then on the query's
// own connection if no location named it. A location that cannot be reached
// or whose stream breaks (codes.Unavailable) passes the endpoint to the next;
// any other error (a SQL error, a cancelled call) ends the result as is. A
// ticket's stream is deterministic, so a retry skips the rows already handed
// out, and every row arrives exactly once.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/ipcx"
)

// defaultFetchParallel caps the workers of a multi-endpoint result when
// Config.FetchParallel is unset.
const defaultFetchParallel = 4

// fetchWorkers is how many workers fetch a result of n endpoints; 1 means
// sequentially, in order, on the caller's goroutine.
func (c *Client) fetchWorkers(n int) int {
	w := c.fetchParallel
	if w <= 0 {
		w = defaultFetchParallel
	}
	return max(min(w, n), 1)
}

// locations holds a Client's connections to the locations its results'
// endpoints name: one per address and security, dialed on first use with
// the Client's own TLS settings and closed by Client.Close.
type locations struct {
	// addr is Config.Addr: a location naming it is the query's connection.
	addr string
	// The TLS settings of Config, to dial grpc+tls locations.
	caFile, certFile, keyFile string
	insecureSkipVerify        bool

	mu     sync.Mutex
	conns  map[string]flight.Client // by "grpc+tls://host:port" or "grpc+tcp://host:port"
	closed bool
}

func newLocations(cfg Config) *locations {
	return &locations{addr: cfg.Addr, caFile: cfg.CAFile, certFile: cfg.CertFile, keyFile: cfg.KeyFile,
		insecureSkipVerify: cfg.InsecureSkipVerify, conns: map[string]flight.Client{}}
}

// errClientClosed fails a fetch from a location after Client.Close.
var errClientClosed = errors.New("the client is closed")

// conn returns the connection to t, dialing it the first time.
func (l *locations) conn(t target) (flight.Client, error) {
	key := "grpc+tcp://" + t.addr
	if t.tls {
		key = "grpc+tls://" + t.addr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errClientClosed
	}
	if fc := l.conns[key]; fc != nil {
		return fc, nil
	}
	creds := insecure.NewCredentials()
	if t.tls {
		tc, err := auth.ClientTLSConfig(l.caFile, l.certFile, l.keyFile, l.insecureSkipVerify)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tc)
	}
	fc, err := flight.NewClientWithMiddlewareCtx(context.Background(), t.addr, nil, nil,
		append(DialOptions(), grpc.WithTransportCredentials(creds))...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.loc, err)
	}
	l.conns[key] = fc
	return fc, nil
}

// close closes every location's connection; later fetches from a location
// fail with errClientClosed.
func (l *locations) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var errs []error
	for key, fc := range l.conns {
		if err := fc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close connection to %s: %w", key, err))
		}
	}
	clear(l.conns)
	return errors.Join(errs...)
}

// target is one place to fetch an endpoint from.
type target struct {
	// loc is the location's URI as listed; empty for the query's
	// connection.
	loc string
	// own: fetch on the query's connection.
	own  bool
	addr string
	tls  bool
	// err says why loc cannot be used (a bad URI or scheme).
	err error
}

// targets lists where ep can be fetched from, in the order to try them:
// its locations, then the query's connection unless a location named it.
func (c *Client) targets(ep *flight.FlightEndpoint) []target {
	var ts []target
	own := false
	for _, l := range ep.GetLocation() {
		t := c.locs.resolve(l.GetUri())
		if t.own {
			if own {
				continue
			}
			own = true
		}
		ts = append(ts, t)
	}
	if !own {
		ts = append(ts, target{own: true})
	}
	return ts
}

// resolve parses a location URI.
func (l *locations) resolve(uri string) target {
	t := target{loc: uri}
	if uri == flight.LocationReuseConnection {
		t.own = true
		return t
	}
	u, err := url.Parse(uri)
	if err != nil {
		t.err = fmt.Errorf("parse location: %w", err)
		return t
	}
	switch u.Scheme {
	case "grpc", "grpc+tcp":
	case "grpc+tls":
		t.tls = true
	case "arrow-flight-reuse-connection":
		t.own = true
		return t
	default:
		t.err = fmt.Errorf("location scheme %q is not grpc, grpc+tcp or grpc+tls", u.Scheme)
		return t
	}
	if u.Host == "" {
		t.err = errors.New("location has no host")
		return t
	}
	t.addr = u.Host
	t.own = u.Host == l.addr
	return t
}

// name is how errors call t.
func (t target) name(c *Client) string {
	switch {
	case t.loc == "":
		return "the query's connection " + c.locs.addr
	case t.own && t.loc != flight.LocationReuseConnection:
		return t.loc + " (the query's connection)"
	}
	return t.loc
}

// endpointReader reads one endpoint, passing it from location to location
// when one fails. It belongs to one goroutine.
type endpointReader struct {
	ctx     context.Context
	c       *Client
	ep      *flight.FlightEndpoint
	idx, n  int // endpoint idx of n, for errors
	mem     memory.Allocator
	targets []target
	tried   int     // targets opened so far
	errs    []error // why each tried target failed
	rdr     *ipc.Reader
	cancel  context.CancelFunc // ends rdr's call
	sent    int64              // rows handed out
	skip    int64              // rows of rdr's stream already handed out
	done    bool
}

func newEndpointReader(ctx context.Context, c *Client, eps []*flight.FlightEndpoint, idx int, mem memory.Allocator) *endpointReader {
	return &endpointReader{ctx: ctx, c: c, ep: eps[idx], idx: idx, n: len(eps), mem: mem, targets: c.targets(eps[idx])}
}

// next returns the endpoint's next batch, which the caller owns, or nil at
// its end.
func (e *endpointReader) next() (arrow.RecordBatch, error) {
	for !e.done {
		if e.rdr == nil {
			if err := e.open(); err != nil {
				return nil, err
			}
			continue
		}
		if e.rdr.Next() {
			rec := e.rdr.RecordBatch()
			n := rec.NumRows()
			switch {
			case e.skip >= n:
				e.skip -= n
				continue
			case e.skip > 0:
				rec = rec.NewSlice(e.skip, n)
				e.skip = 0
			default:
				rec.Retain()
			}
			e.sent += rec.NumRows()
			return rec, nil
		}
		err := e.rdr.Err()
		e.closeStream()
		if err == nil || errors.Is(err, io.EOF) {
			e.done = true
			return nil, nil
		}
		if err := e.failed(err); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// open starts the endpoint's stream at the next target that answers.
func (e *endpointReader) open() error {
	for e.tried < len(e.targets) {
		t := e.targets[e.tried]
		e.tried++
		fc := e.c.sql.Client
		if !t.own {
			err := t.err
			if err == nil {
				fc, err = e.c.locs.conn(t)
			}
			if err != nil {
				if err := e.failed(err); err != nil {
					return err
				}
				continue
			}
		}
		ctx, cancel := context.WithCancel(e.ctx)
		rdr, err := e.doGet(ctx, fc)
		if err != nil {
			cancel()
			if err := e.failed(err); err != nil {
				return err
			}
			continue
		}
		e.rdr, e.cancel, e.skip = rdr, cancel, e.sent
		return nil
	}
	return e.giveUp()
}

func (e *endpointReader) doGet(ctx context.Context, fc flight.Client) (*ipc.Reader, error) {
	stream, err := fc.DoGet(ctx, e.ep.GetTicket())
	if err != nil {
		return nil, err
	}
	return ipcx.NewFlightReader(stream, e.mem)
}

// failed notes that the last target tried failed with err, and returns
// the error that ends the endpoint, or nil to try the next target.
func (e *endpointReader) failed(err error) error {
	t := e.targets[e.tried-1]
	if !e.retryable(t, err) {
		return err
	}
	e.errs = append(e.errs, fmt.Errorf("%s: %w", t.name(e.c), err))
	if e.tried == len(e.targets) {
		return e.giveUp()
	}
	return nil
}

// retryable reports whether err, from t, lets another location serve the
// endpoint: t could not be reached or its stream broke, and the caller
// has not given up.
func (e *endpointReader) retryable(t target, err error) bool {
	if e.ctx.Err() != nil {
		return false
	}
	if t.err != nil || errors.Is(err, errClientClosed) {
		return true
	}
	return status.Code(err) == codes.Unavailable
}

// giveUp is the error when no target is left. An endpoint with a single
// place to fetch it from fails with that place's error as is.
func (e *endpointReader) giveUp() error {
	e.done = true
	if len(e.targets) == 1 && len(e.errs) == 1 {
		return errors.Unwrap(e.errs[0])
	}
	return fmt.Errorf("fetch endpoint %d of %d: every location failed: %w", e.idx+1, e.n, locationErrors(e.errs))
}

func (e *endpointReader) closeStream() {
	if e.rdr != nil {
		e.rdr.Release()
		e.rdr = nil
		e.cancel()
	}
}

// close ends the endpoint's stream, if still open.
func (e *endpointReader) close() {
	e.closeStream()
	e.done = true
}

// locationErrors are why each location of an endpoint failed.
type locationErrors []error

func (le locationErrors) Error() string {
	msgs := make([]string, len(le))
	for i, err := range le {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (le locationErrors) Unwrap() []error { return le }

// fetchPool fetches the endpoints of a result in parallel and queues their
// batches. The Result that started it owns its workers and stops them.
type fetchPool struct {
	cancel  context.CancelFunc
	batches chan arrow.RecordBatch // closed when the last worker is done
	wg      sync.WaitGroup
	live    atomic.Int32
	next    atomic.Int64 // the next endpoint to fetch
	failed  atomic.Bool
	err     error // the first error; set before failed
	errOnce sync.Once
	stopped bool
}

// startFetch starts workers goroutines fetching eps.
func startFetch(ctx context.Context, c *Client, eps []*flight.FlightEndpoint, mem memory.Allocator, workers int) *fetchPool {
	ctx, cancel := context.WithCancel(ctx)
	p := &fetchPool{cancel: cancel, batches: make(chan arrow.RecordBatch, workers)}
	p.live.Store(int32(workers))
	p.wg.Add(workers)
	for range workers {
		go p.work(ctx, c, eps, mem)
	}
	return p
}

// work fetches endpoints until none is left or the pool stops.
func (p *fetchPool) work(ctx context.Context, c *Client, eps []*flight.FlightEndpoint, mem memory.Allocator) {
	defer p.wg.Done()
	defer func() {
		if p.live.Add(-1) == 0 {
			close(p.batches)
		}
	}()
	for {
		i := int(p.next.Add(1) - 1)
		if i >= len(eps) {
			return
		}
		if err := p.fetch(ctx, newEndpointReader(ctx, c, eps, i, mem)); err != nil {
			p.fail(err)
			return
		}
	}
}

// fetch queues the batches of one endpoint.
func (p *fetchPool) fetch(ctx context.Context, e *endpointReader) error {
	defer e.close()
	for {
		rec, err := e.next()
		if err != nil || rec == nil {
			return err
		}
		select {
		case p.batches <- rec:
		case <-ctx.Done():
			rec.Release()
			return ctx.Err()
		}
	}
}

// fail records the pool's first error and stops the other workers.
func (p *fetchPool) fail(err error) {
	p.errOnce.Do(func() {
		p.err = err
		p.failed.Store(true)
	})
	p.cancel()
}

// recv returns the next queued batch, which the caller owns; nil at the
// end of the result or on an error, which err then returns.
func (p *fetchPool) recv() arrow.RecordBatch {
	if p.failed.Load() {
		return nil
	}
	rec, ok := <-p.batches
	if !ok {
		return nil
	}
	if p.failed.Load() {
		rec.Release()
		return nil
	}
	return rec
}

// error is the error that ended the fetch, if any.
func (p *fetchPool) error() error {
	if p.failed.Load() {
		return p.err
	}
	return nil
}

// stop stops the workers, waits for them and releases every queued batch.
func (p *fetchPool) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.cancel()
	for rec := range p.batches {
		rec.Release()
	}
	p.wg.Wait()
}
