package client_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/auth/authtest"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
)

// The endpoint tests run a cluster of plain Flight servers on 127.0.0.1:
// server 0 is the query's server (it answers Flight SQL queries with the
// FlightInfo a test registers) and servers 1 and 2 are replicas. Every
// server serves every ticket "FROM-TO": rows FROM..TO-1 of epSchema, in
// batches of its own size, so a retry on another server slices.

var epSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
}, nil)

const (
	epUser, epPassword = "ann", "secret"
	epToken            = "Bearer replicas-share-this"
)

// epServer is one server of the cluster.
type epServer struct {
	addr  string
	batch int64 // rows per batch

	mu sync.Mutex
	// breakAfter: the first DoGet of a ticket sends that many batches,
	// then fails with Unavailable.
	breakAfter map[string]int
	// fail: every DoGet of a ticket fails with that code.
	fail     map[string]codes.Code
	attempts map[string]int
	tokens   map[string]bool // authorization headers DoGet saw
	infos    map[string]*flight.FlightInfo
}

// epService is a server's Flight service: Flight SQL's, with DoGet and
// Handshake of its own.
type epService struct {
	flight.FlightServer
	s *epServer
}

// epSQL answers queries with the registered FlightInfos.
type epSQL struct {
	flightsql.BaseServer
	s *epServer
}

func (q *epSQL) GetFlightInfoStatement(_ context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	info := q.s.infos[cmd.GetQuery()]
	if info == nil {
		return nil, status.Errorf(codes.InvalidArgument, "unknown query %q", cmd.GetQuery())
	}
	return info, nil
}

func (v epService) Handshake(stream flight.FlightService_HandshakeServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	basic := "Basic " + base64.RawStdEncoding.EncodeToString([]byte(epUser+":"+epPassword))
	if got := md.Get("authorization"); len(got) != 1 || got[0] != basic {
		return status.Error(codes.Unauthenticated, "bad credentials")
	}
	if err := stream.SetHeader(metadata.Pairs("authorization", epToken)); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (v epService) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	s := v.s
	md, _ := metadata.FromIncomingContext(stream.Context())
	ticket := string(tkt.GetTicket())
	s.mu.Lock()
	for _, tok := range md.Get("authorization") {
		s.tokens[tok] = true
	}
	s.attempts[ticket]++
	first := s.attempts[ticket] == 1
	breakAfter, breaks := s.breakAfter[ticket]
	code := s.fail[ticket]
	s.mu.Unlock()
	if got := md.Get("authorization"); len(got) != 1 || got[0] != epToken {
		return status.Errorf(codes.Unauthenticated, "authorization %q", got)
	}
	if code != codes.OK {
		return status.Errorf(code, "ticket %s fails here", ticket)
	}
	from, to, err := parseTicket(ticket)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(epSchema))
	defer w.Close()
	sent := 0
	for lo := from; lo < to; lo += s.batch {
		if first && breaks && sent == breakAfter {
			return status.Error(codes.Unavailable, "replica going away")
		}
		rec := epRows(lo, min(lo+s.batch, to))
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
		sent++
	}
	return nil
}

// epRows are rows from..to-1: id i, name "n<i>".
func epRows(from, to int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, epSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("n" + strconv.FormatInt(i, 10))
	}
	return b.NewRecordBatch()
}

func epTicket(from, to int64) string { return fmt.Sprintf("%d-%d", from, to) }

func parseTicket(t string) (from, to int64, err error) {
	a, b, ok := strings.Cut(t, "-")
	if !ok {
		return 0, 0, fmt.Errorf("bad ticket %q", t)
	}
	if from, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, err
	}
	to, err = strconv.ParseInt(b, 10, 64)
	return from, to, err
}

// epCluster is three servers, an address nobody listens on and a client
// of server 0.
type epCluster struct {
	servers []*epServer
	closed  string
	scheme  string // of the servers' locations
	c       *client.Client
}

type epClusterConfig struct {
	tls       bool
	parallel  int
	allocator memory.Allocator
}

func startCluster(t *testing.T, cfg epClusterConfig) *epCluster {
	t.Helper()
	cl := &epCluster{scheme: "grpc+tcp://"}
	ccfg := client.Config{User: epUser, Password: epPassword, FetchParallel: cfg.parallel, Allocator: cfg.allocator}
	var opts []grpc.ServerOption
	if cfg.tls {
		ca := authtest.NewCA(t)
		cert, key := ca.WriteServerCert(t, t.TempDir())
		tc, err := auth.ServerTLSConfig(cert, key, "")
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
		cl.scheme = "grpc+tls://"
		ccfg.TLS, ccfg.CAFile = true, ca.CertFile
	}
	for i, batch := range []int64{1000, 700, 300} {
		s := &epServer{batch: batch, breakAfter: map[string]int{}, fail: map[string]codes.Code{},
			attempts: map[string]int{}, tokens: map[string]bool{}, infos: map[string]*flight.FlightInfo{}}
		var svc flight.FlightServer = &flight.BaseFlightServer{}
		if i == 0 {
			svc = flightsql.NewFlightServer(&epSQL{s: s})
		}
		srv := flight.NewServerWithMiddleware(nil, opts...)
		if err := srv.Init("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		srv.RegisterFlightService(epService{FlightServer: svc, s: s})
		go srv.Serve()
		t.Cleanup(srv.Shutdown)
		s.addr = srv.Addr().String()
		cl.servers = append(cl.servers, s)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl.closed = lis.Addr().String()
	lis.Close()
	ccfg.Addr = cl.servers[0].addr
	c, err := client.Dial(context.Background(), ccfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	cl.c = c
	return cl
}

// epSpec is an endpoint of a test: rows from..to-1, at locations named
// "0", "1", "2" (the servers), "closed" or "reuse", or any other URI.
type epSpec struct {
	from, to int64
	locs     []string
}

// register makes query return an info of eps on server 0.
func (cl *epCluster) register(query string, eps []epSpec) {
	info := &flight.FlightInfo{Schema: flight.SerializeSchema(epSchema, memory.DefaultAllocator), TotalRecords: -1, TotalBytes: -1}
	for _, ep := range eps {
		fe := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: []byte(epTicket(ep.from, ep.to))}}
		for _, l := range ep.locs {
			fe.Location = append(fe.Location, &flight.Location{Uri: cl.uri(l)})
		}
		info.Endpoint = append(info.Endpoint, fe)
	}
	s := cl.servers[0]
	s.mu.Lock()
	s.infos[query] = info
	s.mu.Unlock()
}

func (cl *epCluster) uri(loc string) string {
	switch loc {
	case "0", "1", "2":
		i, _ := strconv.Atoi(loc)
		return cl.scheme + cl.servers[i].addr
	case "closed":
		return cl.scheme + cl.closed
	case "reuse":
		return flight.LocationReuseConnection
	}
	return loc
}

func (cl *epCluster) attempts(server int, from, to int64) int {
	s := cl.servers[server]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[epTicket(from, to)]
}

// readIDs reads a result to its end and returns its ids in order,
// checking each row's name.
func readIDs(t *testing.T, res *client.Result) ([]int64, error) {
	t.Helper()
	var ids []int64
	for res.Next() {
		rec := res.RecordBatch()
		id := rec.Column(0).(*array.Int64)
		name := rec.Column(1).(*array.String)
		for i := range int(rec.NumRows()) {
			if got, want := name.Value(i), "n"+strconv.FormatInt(id.Value(i), 10); got != want {
				t.Fatalf("row %d: got name %q, want %q", id.Value(i), got, want)
			}
			ids = append(ids, id.Value(i))
		}
	}
	return ids, res.Err()
}

// checkOnce checks that ids holds every id in 0..n-1 exactly once, and,
// when ordered, in order.
func checkOnce(t *testing.T, ids []int64, n int64, ordered bool) {
	t.Helper()
	seen := make([]int, n)
	for i, id := range ids {
		if id < 0 || id >= n {
			t.Fatalf("id %d: out of range 0..%d", id, n-1)
		}
		seen[id]++
		if ordered && id != int64(i) {
			t.Fatalf("row %d: got id %d, want %d", i, id, i)
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("id %d: got %d times, want once", id, k)
		}
	}
}

// split is n rows in k endpoints; endpoint i's locations are locs(i).
func split(n, k int64, locs func(i int64) []string) []epSpec {
	var eps []epSpec
	for i := range k {
		eps = append(eps, epSpec{from: i * n / k, to: (i + 1) * n / k, locs: locs(i)})
	}
	return eps
}

// rotated lists the three servers starting at server i%3.
func rotated(i int64) []string {
	all := []string{"0", "1", "2"}
	r := int(i % 3)
	return append(all[r:], all[:r]...)
}

func TestResult_Next(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tls      bool
		parallel int
		rows     int64
		eps      func(cl *epCluster) []epSpec
		ordered  bool
		// check runs after the result is read; err is its error.
		check func(t *testing.T, cl *epCluster, err error)
	}{
		{name: "one endpoint keeps order", rows: 25000, ordered: true,
			eps: func(*epCluster) []epSpec { return []epSpec{{0, 25000, nil}} }},
		{name: "one endpoint on a replica breaks midway, order kept", rows: 25000, ordered: true,
			eps: func(cl *epCluster) []epSpec {
				cl.servers[1].breakAfter[epTicket(0, 25000)] = 7
				return []epSpec{{0, 25000, []string{"1", "2"}}}
			},
			check: func(t *testing.T, cl *epCluster, _ error) {
				if got := cl.attempts(2, 0, 25000); got != 1 {
					t.Errorf("server 2 attempts: got %d, want 1", got)
				}
			}},
		{name: "parallel 1 keeps order across endpoints", parallel: 1, rows: 30000, ordered: true,
			eps: func(*epCluster) []epSpec { return split(30000, 5, rotated) }},
		{name: "eight endpoints across three servers", rows: 80000,
			eps: func(*epCluster) []epSpec {
				eps := split(80000, 8, rotated)
				eps[0].locs = []string{"reuse"}
				return eps
			},
			check: func(t *testing.T, cl *epCluster, _ error) {
				for i, s := range cl.servers {
					s.mu.Lock()
					if len(s.tokens) != 1 || !s.tokens[epToken] {
						t.Errorf("server %d: got authorization %v, want only %q", i, s.tokens, epToken)
					}
					s.mu.Unlock()
				}
				for i := range int64(8) {
					from, to := i*10000, (i+1)*10000
					want := [3]int{}
					if i == 0 {
						want[0] = 1
					} else {
						want[i%3] = 1
					}
					for s := range 3 {
						if got := cl.attempts(s, from, to); got != want[s] {
							t.Errorf("endpoint %d at server %d: got %d attempts, want %d", i, s, got, want[s])
						}
					}
				}
			}},
		{name: "eight endpoints over TLS", tls: true, rows: 80000,
			eps: func(*epCluster) []epSpec { return split(80000, 8, rotated) },
			check: func(t *testing.T, cl *epCluster, _ error) {
				if got := cl.attempts(2, 20000, 30000); got != 1 {
					t.Errorf("server 2 attempts: got %d, want 1", got)
				}
			}},
		{name: "first location closed", rows: 40000,
			eps: func(*epCluster) []epSpec {
				return split(40000, 4, func(int64) []string { return []string{"closed", "bad://x", "1"} })
			},
			check: func(t *testing.T, cl *epCluster, _ error) {
				if got := cl.attempts(1, 0, 10000); got != 1 {
					t.Errorf("server 1 attempts: got %d, want 1", got)
				}
			}},
		{name: "no location answers but the query's connection", rows: 20000,
			eps: func(*epCluster) []epSpec {
				return split(20000, 2, func(int64) []string { return []string{"closed"} })
			},
			check: func(t *testing.T, cl *epCluster, _ error) {
				if got := cl.attempts(0, 0, 10000); got != 1 {
					t.Errorf("server 0 attempts: got %d, want 1", got)
				}
			}},
		{name: "streams break midway", rows: 60000,
			eps: func(cl *epCluster) []epSpec {
				eps := split(60000, 4, func(int64) []string { return []string{"1", "2"} })
				// Server 1 sends 700 rows a batch, server 2 300.
				for i, ep := range eps {
					cl.servers[1].breakAfter[epTicket(ep.from, ep.to)] = []int{0, 1, 4, 5}[i]
				}
				return eps
			},
			check: func(t *testing.T, cl *epCluster, _ error) {
				for _, ep := range split(60000, 4, rotated) {
					if got := cl.attempts(1, ep.from, ep.to) + cl.attempts(2, ep.from, ep.to); got != 2 {
						t.Errorf("endpoint %d-%d: got %d attempts, want 2", ep.from, ep.to, got)
					}
				}
			}},
		{name: "every location down", rows: 20000,
			eps: func(cl *epCluster) []epSpec {
				cl.servers[0].fail[epTicket(10000, 20000)] = codes.Unavailable
				return []epSpec{{0, 10000, []string{"1"}}, {10000, 20000, []string{"closed", "bad://x"}}}
			},
			check: func(t *testing.T, cl *epCluster, err error) {
				if err == nil {
					t.Fatal("got no error")
				}
				msg := err.Error()
				for _, want := range []string{"endpoint 2 of 2", cl.uri("closed"), "bad://x", cl.servers[0].addr} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q: does not name %q", msg, want)
					}
				}
				if got := status.Code(err); got != codes.Unavailable {
					t.Errorf("code: got %v, want Unavailable", got)
				}
			}},
		{name: "a SQL error is not retried", rows: 20000,
			eps: func(cl *epCluster) []epSpec {
				cl.servers[1].fail[epTicket(0, 20000)] = codes.InvalidArgument
				return []epSpec{{0, 20000, []string{"1", "2"}}}
			},
			check: func(t *testing.T, cl *epCluster, err error) {
				if got := status.Code(err); got != codes.InvalidArgument {
					t.Errorf("code: got %v (%v), want InvalidArgument", got, err)
				}
				if strings.Contains(fmt.Sprint(err), "every location") {
					t.Errorf("error %q: got wrapped as a failover", err)
				}
				if got := cl.attempts(2, 0, 20000) + cl.attempts(0, 0, 20000); got != 0 {
					t.Errorf("other locations: got %d attempts, want 0", got)
				}
			}},
		{name: "a SQL error ends a parallel result", rows: 40000,
			eps: func(cl *epCluster) []epSpec {
				// Endpoint 3's first location is server 0.
				cl.servers[0].fail[epTicket(30000, 40000)] = codes.PermissionDenied
				return split(40000, 4, rotated)
			},
			check: func(t *testing.T, cl *epCluster, err error) {
				if got := status.Code(err); got != codes.PermissionDenied {
					t.Errorf("code: got %v (%v), want PermissionDenied", got, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := testmem.Checked(t)
			cl := startCluster(t, epClusterConfig{tls: tc.tls, parallel: tc.parallel, allocator: mem})
			cl.register("q", tc.eps(cl))
			res, err := cl.c.Query(context.Background(), "q")
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			ids, err := readIDs(t, res)
			res.Release()
			if tc.check != nil {
				tc.check(t, cl, err)
			}
			if err != nil {
				if tc.check == nil {
					t.Fatalf("read: %v", err)
				}
				return
			}
			checkOnce(t, ids, tc.rows, tc.ordered)
		})
	}
}

// settledGoroutines is the number of goroutines once it stops changing.
func settledGoroutines() int {
	n, same := runtime.NumGoroutine(), 0
	for same < 10 {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}

// waitGoroutines waits until no more than n goroutines run.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: got %d, want at most %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestResult_Release(t *testing.T) {
	const rows = 400000
	for _, tc := range []struct {
		name string
		// cancel cancels the query's context before Release.
		cancel bool
	}{
		{name: "release halfway"},
		{name: "cancel halfway", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := testmem.Checked(t)
			cl := startCluster(t, epClusterConfig{allocator: mem})
			cl.register("q", split(rows, 8, rotated))
			// Once in full, so that the client holds its connections.
			res, err := cl.c.Query(context.Background(), "q")
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			ids, err := readIDs(t, res)
			res.Release()
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			checkOnce(t, ids, rows, false)
			before := settledGoroutines()

			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tc.cancel {
				ctx, cancel = context.WithCancel(ctx)
			}
			defer cancel()
			res, err = cl.c.Query(ctx, "q")
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			n := int64(0)
			for n < rows/2 && res.Next() {
				n += res.RecordBatch().NumRows()
			}
			if n < rows/2 {
				t.Fatalf("read %d rows: %v", n, res.Err())
			}
			if tc.cancel {
				cancel()
				for res.Next() {
				}
				if res.Err() == nil {
					t.Error("cancelled: got no error")
				}
			}
			res.Release()
			mem.AssertSize(t, 0)
			waitGoroutines(t, before)
		})
	}
}
