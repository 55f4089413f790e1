package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

var users = []server.UserSpec{
	{Name: "ada", Password: "ada-secret-1", Role: auth.RoleAdmin},
	{Name: "rita", Password: "rita-secret-1", Role: auth.RoleReadOnly},
	{Name: "will", Password: "will-secret-1", Role: auth.RoleReadWrite},
}

// startServer starts quiver with users (unless none) and its HTTP port,
// its result buffers leak-checked.
func startServer(t *testing.T, withUsers bool, lim server.Limits) *server.Server {
	t.Helper()
	mem := testmem.Checked(t)
	cfg := server.Config{HTTPAddr: "127.0.0.1:0", Allocator: mem, Limits: lim}
	if lim.Memory == 0 {
		cfg.Limits.Memory = 1 << 30
	}
	if withUsers {
		cfg.Security.Users = users
	}
	return testutil.StartServer(t, cfg)
}

// page is a browser's view of the console: a cookie jar and the CSRF
// token its session gave.
type page struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func newPage(t *testing.T, srv *server.Server) *page {
	jar, _ := cookiejar.New(nil)
	return &page{t: t, base: "http://" + srv.HTTPAddr, hc: &http.Client{Jar: jar, Timeout: 2 * time.Minute}}
}

func (p *page) do(method, path string, body io.Reader, hdr map[string]string) *http.Response {
	p.t.Helper()
	req, err := http.NewRequest(method, p.base+path, body)
	if err != nil {
		p.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

func decode[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	defer resp.Body.Close()
	var v T
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", resp.Request.URL.Path, err)
	}
	return v
}

type session struct {
	Kind string  `json:"kind"`
	Auth bool    `json:"auth"`
	User *string `json:"user"`
	Role *string `json:"role"`
	CSRF *string `json:"csrf"`
}

type apiErr struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func (p *page) login(user, password string) *http.Response {
	req, _ := http.NewRequest("POST", p.base+"/api/login", nil)
	req.SetBasicAuth(user, password)
	resp, err := p.hc.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

func (p *page) mustLogin(user, password string) {
	p.t.Helper()
	resp := p.login(user, password)
	if resp.StatusCode != http.StatusOK {
		p.t.Fatalf("login %s: %s", user, resp.Status)
	}
	s := decode[session](p.t, resp)
	p.csrf = *s.CSRF
}

func (p *page) post(path string, v any) *http.Response {
	b, _ := json.Marshal(v)
	return p.do("POST", path, bytes.NewReader(b), map[string]string{"Content-Type": "application/json", "X-CSRF-Token": p.csrf})
}

type query struct {
	SQL    string `json:"sql"`
	Offset *int64 `json:"offset,omitempty"`
	Limit  *int64 `json:"limit,omitempty"`
}

// rows reads an Arrow stream answer, returning its rows and the first
// column's values of the first few.
func readRows(t *testing.T, resp *http.Response) (int64, []string) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.apache.arrow.stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("query: %s %s: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	r, err := ipc.NewReader(resp.Body)
	if err != nil {
		t.Fatalf("read arrow stream: %v", err)
	}
	defer r.Release()
	var n int64
	var first []string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()) && len(first) < 5; i++ {
			first = append(first, rec.Column(0).ValueStr(i))
		}
		n += rec.NumRows()
	}
	if err := r.Err(); err != nil {
		t.Fatalf("read arrow stream: %v", err)
	}
	return n, first
}

func TestConsole_LoginAndCSRF(t *testing.T) {
	srv := startServer(t, true, server.Limits{})
	p := newPage(t, srv)

	s := decode[session](t, p.do("GET", "/api/session", nil, nil))
	if !s.Auth || s.User != nil || s.CSRF != nil || s.Kind != "serve" {
		t.Fatalf("session before login: %+v", s)
	}
	if resp := p.post("/api/query", query{SQL: "SELECT 1"}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("query without a session: %s, want 401", resp.Status)
	}
	resp := p.login("ada", "wrong")
	if e := decode[apiErr](t, resp); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(e.Error, "authentication failed") {
		t.Fatalf("bad password: %s %+v", resp.Status, e)
	}
	resp = p.login("ada", "ada-secret-1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %s", resp.Status)
	}
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "quiver_session" {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Value == "" {
		t.Fatalf("session cookie: %+v, want HttpOnly and SameSite=Strict", ck)
	}
	// The cookie holds the same bearer token Flight accepts.
	fc, err := flightsql.NewClient(srv.FlightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	bearer := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+ck.Value)
	if _, err := fc.Execute(bearer, "SELECT 1"); err != nil {
		t.Fatalf("Flight with the console's token: %v", err)
	}
	s = decode[session](t, resp)
	p.csrf = *s.CSRF
	if *s.User != "ada" || *s.Role != "admin" {
		t.Fatalf("login answer: %+v", s)
	}

	for _, tc := range []struct {
		name string
		hdr  map[string]string
	}{
		{"no token", map[string]string{}},
		{"wrong token", map[string]string{"X-CSRF-Token": "0123456789abcdef0123456789abcdef"}},
		{"cross-site", map[string]string{"X-CSRF-Token": p.csrf, "Sec-Fetch-Site": "cross-site"}},
		// Browsers without Fetch Metadata still send Origin.
		{"foreign origin", map[string]string{"X-CSRF-Token": p.csrf, "Origin": "http://evil.example"}},
		{"foreign origin on the console's port", map[string]string{"X-CSRF-Token": p.csrf, "Origin": "http://evil.example:" + srv.HTTPAddr[strings.LastIndex(srv.HTTPAddr, ":")+1:]}},
		{"opaque origin", map[string]string{"X-CSRF-Token": p.csrf, "Origin": "null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hdr["Content-Type"] = "application/json"
			resp := p.do("POST", "/api/query", strings.NewReader(`{"sql":"CREATE TABLE csrf_victim(i INT)"}`), tc.hdr)
			e := decode[apiErr](t, resp)
			if resp.StatusCode != http.StatusForbidden || e.Code != "csrf" {
				t.Fatalf("%s: %s %+v, want 403 csrf", tc.name, resp.Status, e)
			}
		})
	}
	// A form without the token is refused too (the download).
	form := url.Values{"sql": {"SELECT 1"}, "format": {"csv"}}
	resp = p.do("POST", "/api/download", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("download without the CSRF field: %s", resp.Status)
	}
	resp.Body.Close()
	if n, first := readRows(t, p.post("/api/query", query{SQL: "SELECT count(*) FROM information_schema.tables WHERE table_name = 'csrf_victim'"})); n != 1 || first[0] != "0" {
		t.Fatalf("tables named csrf_victim: %v, want 0: every refused request must change nothing", first)
	}
	// The console's own page sends its own origin.
	resp = p.do("POST", "/api/query", strings.NewReader(`{"sql":"SELECT 1"}`), map[string]string{
		"Content-Type": "application/json", "X-CSRF-Token": p.csrf, "Origin": p.base, "Sec-Fetch-Site": "same-origin"})
	if n, _ := readRows(t, resp); n != 1 {
		t.Fatalf("a query from the console's own origin: %d rows", n)
	}

	// Logging out ends the session.
	if resp := p.post("/api/logout", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %s", resp.Status)
	}
	if resp := p.post("/api/query", query{SQL: "SELECT 1"}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("query after logout: %s, want 401", resp.Status)
	}
}

func TestConsole_Queries(t *testing.T) {
	srv := startServer(t, true, server.Limits{})
	admin, reader, writer := newPage(t, srv), newPage(t, srv), newPage(t, srv)
	admin.mustLogin("ada", "ada-secret-1")
	reader.mustLogin("rita", "rita-secret-1")
	writer.mustLogin("will", "will-secret-1")
	i64 := func(v int64) *int64 { return &v }

	n, first := readRows(t, reader.post("/api/query", query{SQL: "SELECT i FROM range(300000) t(i)"}))
	if n != 300000 || first[0] != "0" {
		t.Fatalf("300,000 rows: got %d, first %v", n, first)
	}
	n, first = readRows(t, reader.post("/api/query", query{SQL: "SELECT i FROM range(300000) t(i);  ", Offset: i64(123000), Limit: i64(1000)}))
	if n != 1000 || first[0] != "123000" {
		t.Fatalf("window at 123,000: got %d rows, first %v", n, first)
	}

	errCases := []struct {
		name   string
		p      *page
		q      query
		status int
		code   string
		want   []string
	}{
		{"bad SQL keeps DuckDB's caret", reader, query{SQL: "SELEC 1"}, 400, "sql", []string{"Parser Error", "LINE 1: SELEC 1", "^"}},
		{"unknown table", reader, query{SQL: "SELECT * FROM nowhere"}, 400, "sql", []string{"Table with name nowhere does not exist", "LINE 1"}},
		{"read-only user's write", reader, query{SQL: "CREATE TABLE t(i INT)"}, 403, "denied", []string{"read"}},
		{"read-only user's script", reader, query{SQL: "SELECT 1; CREATE TABLE x(i INT)"}, 403, "denied", nil},
		{"empty", reader, query{SQL: "  "}, 400, "sql", []string{"no SQL"}},
		{"window over a write", writer, query{SQL: "CREATE TABLE w(i INT)", Offset: i64(0), Limit: i64(10)}, 400, "window", []string{"cannot be fetched in windows"}},
		{"window too large", reader, query{SQL: "SELECT 1", Limit: i64(1 << 40)}, 400, "window", nil},
		{"parameters", reader, query{SQL: "SELECT ?"}, 400, "sql", []string{"parameters"}},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tc.p.post("/api/query", tc.q)
			e := decode[apiErr](t, resp)
			if resp.StatusCode != tc.status || e.Code != tc.code {
				t.Fatalf("%q: %s %+v, want %d %s", tc.q.SQL, resp.Status, e, tc.status, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Error, w) {
					t.Errorf("%q: error %q lacks %q", tc.q.SQL, e.Error, w)
				}
			}
		})
	}
	// A malformed body.
	resp := reader.do("POST", "/api/query", strings.NewReader("{not json"), map[string]string{"X-CSRF-Token": reader.csrf})
	if e := decode[apiErr](t, resp); resp.StatusCode != 400 || e.Code != "request" {
		t.Fatalf("malformed body: %s %+v", resp.Status, e)
	}

	// A writer's statements without rows say what they changed.
	type changed struct {
		Statement   string `json:"statement"`
		RowsChanged int64  `json:"rows_changed"`
	}
	if c := decode[changed](t, writer.post("/api/query", query{SQL: "CREATE TABLE pets(name VARCHAR, legs INT)"})); c.Statement != "CREATE" {
		t.Fatalf("CREATE: %+v", c)
	}
	if c := decode[changed](t, writer.post("/api/query", query{SQL: "INSERT INTO pets VALUES ('cat', 4), ('hen', 2)"})); c.Statement != "INSERT" || c.RowsChanged != 2 {
		t.Fatalf("INSERT: %+v", c)
	}
	if n, first := readRows(t, reader.post("/api/query", query{SQL: "SELECT name FROM pets ORDER BY legs"})); n != 2 || first[0] != "hen" {
		t.Fatalf("pets: %d %v", n, first)
	}

	// The schema tree has the table and its columns.
	type tree struct {
		Catalogs []struct {
			Name    string `json:"name"`
			Schemas []struct {
				Name   string `json:"name"`
				Tables []struct {
					Name    string `json:"name"`
					Columns []struct{ Name, Type string }
				} `json:"tables"`
			} `json:"schemas"`
		} `json:"catalogs"`
	}
	tr := decode[tree](t, reader.do("GET", "/api/schema", nil, nil))
	var cols []string
	for _, c := range tr.Catalogs {
		for _, s := range c.Schemas {
			for _, tb := range s.Tables {
				if tb.Name == "pets" {
					for _, col := range tb.Columns {
						cols = append(cols, col.Name+" "+col.Type)
					}
				}
			}
		}
	}
	if strings.Join(cols, ",") != "name VARCHAR,legs INTEGER" {
		t.Fatalf("schema tree's pets: %v (tree %+v)", cols, tr)
	}
}

func TestConsole_Downloads(t *testing.T) {
	srv := startServer(t, true, server.Limits{})
	p := newPage(t, srv)
	p.mustLogin("rita", "rita-secret-1")
	const sql = "SELECT i, i * 2 AS twice, 'row ' || i AS label FROM range(50000) t(i)"
	get := func(format string) (*http.Response, []byte) {
		form := url.Values{"sql": {sql}, "format": {format}, "csrf": {p.csrf}}
		resp := p.do("POST", "/api/download", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	for _, tc := range []struct {
		format string
		check  func([]byte) (int64, error)
	}{
		{"parquet", func(b []byte) (int64, error) {
			rd, err := file.NewParquetReader(bytes.NewReader(b))
			if err != nil {
				return 0, err
			}
			defer rd.Close()
			fr, err := pqarrow.NewFileReader(rd, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				return 0, err
			}
			tbl, err := fr.ReadTable(context.Background())
			if err != nil {
				return 0, err
			}
			defer tbl.Release()
			if got := tbl.Schema().Field(2).Name; got != "label" {
				return 0, fmt.Errorf("third column %q", got)
			}
			return tbl.NumRows(), nil
		}},
		{"csv", func(b []byte) (int64, error) {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if lines[0] != "i,twice,label" || lines[2] != "1,2,row 1" {
				return 0, fmt.Errorf("csv starts %q", lines[:3])
			}
			return int64(len(lines) - 1), nil
		}},
		{"json", func(b []byte) (int64, error) {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if lines[1] != `{"i":1,"twice":2,"label":"row 1"}` {
				return 0, fmt.Errorf("json line 2: %q", lines[1])
			}
			return int64(len(lines)), nil
		}},
		{"arrow", func(b []byte) (int64, error) {
			fr, err := ipc.NewFileReader(bytes.NewReader(b))
			if err != nil {
				return 0, err
			}
			defer fr.Close()
			var n int64
			for i := 0; i < fr.NumRecords(); i++ {
				rec, err := fr.RecordBatch(i)
				if err != nil {
					return 0, err
				}
				n += rec.NumRows()
			}
			return n, nil
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			resp, body := get(tc.format)
			if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment; filename=\"result.") {
				t.Fatalf("%s: %s %q: %.200s", tc.format, resp.Status, resp.Header.Get("Content-Disposition"), body)
			}
			n, err := tc.check(body)
			if err != nil || n != 50000 {
				t.Fatalf("%s: %d rows, %v", tc.format, n, err)
			}
		})
	}
	if resp, body := get("xlsx"); resp.StatusCode != 400 || !strings.Contains(string(body), "want parquet, csv, json or arrow") {
		t.Fatalf("unknown format: %s %s", resp.Status, body)
	}
	// Types arrow-go's CSV and Parquet writers refuse download in every
	// format: DuckDB writes them.
	const odd = "SELECT INTERVAL 3 DAY + INTERVAL 4 SECOND AS iv, {'a': i, 'b': [i, i + 1]} AS st, MAP {'k': i} AS m, [i::VARCHAR] AS l, 1::UHUGEINT AS u FROM range(3) t(i)"
	for _, format := range []string{"csv", "json", "parquet", "arrow"} {
		form := url.Values{"sql": {odd}, "format": {format}, "csrf": {p.csrf}}
		resp := p.do("POST", "/api/download", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(b) == 0 {
			t.Fatalf("odd types as %s: %s, %d bytes, %v: %.300s", format, resp.Status, len(b), err, b)
		}
		switch format {
		case "csv":
			if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 4 || !strings.Contains(lines[1], "{'a': 0, 'b': [0, 1]}") {
				t.Fatalf("odd types as csv: %q", lines)
			}
		case "parquet":
			rd, err := file.NewParquetReader(bytes.NewReader(b))
			if err != nil || rd.NumRows() != 3 {
				t.Fatalf("odd types as parquet: %v", err)
			}
			rd.Close()
		}
	}

	// A statement that fails answers its error, not a file.
	form := url.Values{"sql": {"SELECT * FROM nowhere"}, "format": {"parquet"}, "csrf": {p.csrf}}
	resp := p.do("POST", "/api/download", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if e := decode[apiErr](t, resp); resp.StatusCode != 400 || resp.Header.Get("Content-Disposition") != "" || !strings.Contains(e.Error, "nowhere") {
		t.Fatalf("failed download: %s %q %+v", resp.Status, resp.Header.Get("Content-Disposition"), e)
	}
}

// TestConsole_CancelAndDisconnect cancels a running query of another
// endpoint (Flight) and of the console from the live view, checks that a
// non-admin cannot cancel others' queries, and that a browser that goes
// away mid-stream leaves nothing running.
func TestConsole_CancelAndDisconnect(t *testing.T) {
	srv := startServer(t, true, server.Limits{})
	admin, reader := newPage(t, srv), newPage(t, srv)
	admin.mustLogin("ada", "ada-secret-1")
	reader.mustLogin("rita", "rita-secret-1")

	type live struct {
		Queries []struct {
			ID, Endpoint, User, SQL, State string
		} `json:"queries"`
		Metrics   map[string][]json.RawMessage `json:"metrics"`
		Admission *struct{ Running, Open, Queued int }
	}
	const slow = "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3"
	find := func(p *page, endpoint string) (id string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			l := decode[live](t, p.do("GET", "/api/live", nil, nil))
			for _, q := range l.Queries {
				if q.Endpoint == endpoint && q.SQL == slow {
					return q.ID
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("the %s query never showed in /api/live", endpoint)
		return ""
	}

	// A Flight query, canceled by the admin from the console.
	fc := testutil.Dial(t, srv, client.Config{User: "rita", Password: "rita-secret-1"})
	flightErr := make(chan error, 1)
	go func() {
		_, err := testutil.CountRows(context.Background(), fc, slow)
		flightErr <- err
	}()
	id := find(admin, "flight")
	// rita sees her own query's text, and may not cancel … wait: she may,
	// it is hers; a second reader may not.
	other := newPage(t, srv)
	other.mustLogin("will", "will-secret-1")
	if resp := other.post("/api/cancel", map[string]string{"id": id}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("will cancels rita's query: %s, want 403", resp.Status)
	}
	if resp := admin.post("/api/cancel", map[string]string{"id": id}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("admin cancel: %s", resp.Status)
	}
	select {
	case err := <-flightErr:
		if err == nil || !strings.Contains(err.Error(), "canceled by admin ada") {
			t.Fatalf("Flight query after the admin's cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the canceled Flight query did not end")
	}
	if resp := admin.post("/api/cancel", map[string]string{"id": id}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("cancel of an ended query: %s, want 404", resp.Status)
	}
	// Malformed cancels.
	if resp := admin.post("/api/cancel", map[string]string{"id": "seven"}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("cancel of id \"seven\": %s, want 400", resp.Status)
	}
	resp := admin.do("POST", "/api/cancel", strings.NewReader("{"), map[string]string{"X-CSRF-Token": admin.csrf})
	if e := decode[apiErr](t, resp); resp.StatusCode != http.StatusBadRequest || e.Code != "request" {
		t.Fatalf("cancel with a malformed body: %s %+v", resp.Status, e)
	}

	// A console query, canceled by its own user.
	consoleResp := make(chan *http.Response, 1)
	go func() { consoleResp <- reader.post("/api/query", query{SQL: slow}) }()
	id = find(reader, "http")
	if resp := reader.post("/api/cancel", map[string]string{"id": id}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("own cancel: %s", resp.Status)
	}
	resp = <-consoleResp
	if e := decode[apiErr](t, resp); resp.StatusCode != http.StatusConflict || e.Code != "canceled" || !strings.Contains(e.Error, "canceled by rita") {
		t.Fatalf("canceled console query: %s %+v", resp.Status, e)
	}

	// A browser that reads a little of a large result and goes away.
	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(query{SQL: "SELECT i, i::VARCHAR AS s FROM range(50000000) t(i)"})
	req, _ := http.NewRequestWithContext(ctx, "POST", reader.base+"/api/query", bytes.NewReader(b))
	req.Header.Set("X-CSRF-Token", reader.csrf)
	resp, err := reader.hc.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("large query: %v %v", resp, err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for srv.Admission != nil && !srv.Admission.Idle() || len(srv.Admission.Queries()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a closed result still holds the server: %+v, %+v", srv.Admission.Stats(), srv.Admission.Queries())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConsole_BrokenStream: an error after the result began cuts the
// stream, and the page can fetch the error.
func TestConsole_BrokenStream(t *testing.T) {
	srv := startServer(t, true, server.Limits{})
	p := newPage(t, srv)
	p.mustLogin("rita", "rita-secret-1")
	var id string
	// DuckDB sometimes loses an error raised on a worker thread and
	// reports an interrupt instead, which quiver says so; the statement
	// is run again then, as that message advises, up to three times.
	for attempt := 1; ; attempt++ {
		resp := p.post("/api/query", query{SQL: "SELECT CASE WHEN i < 1500000 THEN i ELSE error('broke at ' || i) END AS v FROM range(3000000) t(i)"})
		if resp.StatusCode != 200 {
			t.Fatalf("the error came before the stream began (%s): the test needs a later one", resp.Status)
		}
		id = resp.Header.Get("X-Query-Id")
		r, err := ipc.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
		}
		if r.Err() == nil {
			t.Fatal("a broken result read as a whole one")
		}
		r.Release()
		resp.Body.Close()
		e := decode[apiErr](t, p.do("GET", "/api/query/error?id="+id, nil, nil))
		if strings.Contains(e.Error, "DuckDB lost its error") && attempt < 3 {
			continue
		}
		if !strings.Contains(e.Error, "broke at") {
			t.Fatalf("kept error: %+v", e)
		}
		break
	}
	// Another user cannot read it.
	q := newPage(t, srv)
	q.mustLogin("ada", "ada-secret-1")
	if resp := q.do("GET", "/api/query/error?id="+id, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another user's error: %s", resp.Status)
	}
}

// TestConsole_NoUsers: without users the console needs no login, serves
// only loopback, and refuses requests naming another host (DNS
// rebinding); writes still need the CSRF token.
func TestConsole_NoUsers(t *testing.T) {
	srv := startServer(t, false, server.Limits{})
	p := newPage(t, srv)
	s := decode[session](t, p.do("GET", "/api/session", nil, nil))
	if s.Auth || s.User == nil || *s.Role != "admin" || s.CSRF == nil {
		t.Fatalf("session without users: %+v", s)
	}
	req, _ := http.NewRequest("GET", p.base+"/api/session", nil)
	req.Host = "attacker.example:9090"
	resp, err := p.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e := decode[apiErr](t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(e.Error, "attacker.example") {
		t.Fatalf("rebound host: %s %+v", resp.Status, e)
	}
	if resp := p.post("/api/query", query{SQL: "SELECT 1"}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("no CSRF token: %s", resp.Status)
	}
	p.csrf = *s.CSRF
	if n, _ := readRows(t, p.post("/api/query", query{SQL: "SELECT 42"})); n != 1 {
		t.Fatal("query without users")
	}
}

// TestConsole_Page serves the page's files compressed, with a strict
// content policy, and the whole first load under 1 MB on the wire.
func TestConsole_Page(t *testing.T) {
	srv := startServer(t, false, server.Limits{})
	p := newPage(t, srv)
	tr := &http.Transport{DisableCompression: true}
	hc := &http.Client{Transport: tr}
	var total int
	for _, path := range []string{"/", "/app.js", "/app.css", "/vendor/Arrow.es2015.min.js", "/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css"} {
		req, _ := http.NewRequest("GET", p.base+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: %s, encoding %q: %.200s", path, resp.Status, resp.Header.Get("Content-Encoding"), b)
		}
		if path == "/" && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("page's content policy: %q", resp.Header.Get("Content-Security-Policy"))
		}
		total += len(b)
	}
	t.Logf("first load: %d bytes compressed", total)
	if total >= 1<<20 {
		t.Fatalf("first load is %d bytes, want under 1 MB", total)
	}
	if resp := p.do("GET", "/nope.js", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("unknown file: %s", resp.Status)
	}
	if resp := p.do("GET", "/api/nope", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("unknown API: %s", resp.Status)
	}
}
