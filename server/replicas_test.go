package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/lake"
)

// freeAddrs returns n free loopback addresses; replicas must know each
// other's before they start.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports, err := testsvc.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, n)
	for i, p := range ports {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return out
}

// TestReplicas_S3KillMidFetch runs three quiver serve processes over one
// Iceberg lake on a real S3 server with its REST catalog, sharing a token
// key and a user. A scan planned by replica 0 is fetched from all three
// with the token replica 0 issued: endpoint i lists replica i mod 3 first.
// The client fetches the endpoints one at a time, and replica 1 is killed
// with SIGKILL after the first batch of endpoint 0, so endpoint 1, whose
// first location it is, must fail over to the next; the client still gets
// every row exactly once. (Failover in the middle of an endpoint's stream,
// skipping the rows already delivered, is tested in the client package.)
// The mysql CLI then joins the lake with a local table on a surviving
// replica.
func TestReplicas_S3KillMidFetch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts SeaweedFS and three quiver processes")
	}
	bin := testsvc.QuiverBinary(t)
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
	}
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{TableBuckets: []string{"quiver-tables"}})
	t.Setenv("AWS_ACCESS_KEY_ID", sw.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", sw.SecretKey)
	t.Setenv("AWS_REGION", sw.Region)
	const rows = 600_000
	cfg := lake.Config{Warehouse: "s3://quiver-tables", CatalogURI: sw.CatalogURL, RESTCredential: sw.AccessKey + ":" + sw.SecretKey,
		S3: lake.S3Config{Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey}}
	lakeTableIn(t, cfg, rows, 50_000, 10_000)

	ctx := context.Background()
	flights, mysqls := freeAddrs(t, 3), freeAddrs(t, 3)
	key := "5f1c7a0e9b3d4c2a8e6f1b0d7c9a3e5f2b4d6c8a0e1f3b5d7c9e2a4b6d8f0a1c"
	var procs []*serveproc.Proc
	for i := range 3 {
		var peers []string
		for j, a := range flights {
			if j != i {
				peers = append(peers, a)
			}
		}
		p, err := serveproc.Start(ctx, bin, filepath.Join(t.TempDir(), "q.duckdb"), true,
			"--flight", flights[i], "--mysql", mysqls[i], "--advertise", flights[i], "--peers", strings.Join(peers, ","),
			"--lake", "s3://quiver-tables", "--catalog", sw.CatalogURL, "--catalog-credential", sw.AccessKey+":"+sw.SecretKey,
			"--s3-endpoint", sw.S3URL, "--s3-path-style", "--lake-part-mb", "0.25",
			"--token-key", key, "--user", "etl", "--password", "s3cret")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		procs = append(procs, p)
	}

	mem := testmem.Checked(t)
	c, err := client.Dial(ctx, client.Config{Addr: flights[0], User: "etl", Password: "s3cret", Allocator: mem, FetchParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const query = "SELECT id, name FROM lake.quiver.events"
	info, err := c.SQL().Execute(c.Context(ctx), query)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) < 3 {
		t.Fatalf("endpoints: got %d, want at least 3", len(info.Endpoint))
	}
	first := map[string]int{}
	for _, ep := range info.Endpoint {
		if len(ep.Location) != 3 {
			t.Fatalf("endpoint locations: got %v, want the three replicas", ep.Location)
		}
		first[ep.Location[0].Uri]++
	}
	if len(first) != 3 {
		t.Errorf("first locations: %v, want every replica first on some endpoint", first)
	}
	t.Logf("%d endpoints, first locations %v", len(info.Endpoint), first)

	r, err := c.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, rows)
	n, killed := 0, false
	for r.Next() {
		ids := r.RecordBatch().Column(0).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			id := ids.Value(i)
			if id < 0 || id >= rows || seen[id] {
				t.Fatalf("id %d twice or out of range", id)
			}
			seen[id] = true
		}
		n += ids.Len()
		if !killed && n > 0 {
			procs[1].Kill()
			killed = true
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("fetch after a replica was killed: %v", err)
	}
	r.Release()
	if n != rows {
		t.Fatalf("rows: got %d, want %d", n, rows)
	}

	// The mysql CLI joins the lake with a table of the replica's own.
	mysqlBin, err := exec.LookPath("mysql")
	if err != nil {
		t.Skip("mysql client not installed")
	}
	_, port, _ := net.SplitHostPort(mysqls[2])
	run := func(sql string) string {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, mysqlBin, "--batch", "--protocol=TCP", "-h", "127.0.0.1", "-P", port, "-u", "etl", "-ps3cret", "-e", sql)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("mysql -e %q: %v\n%s", sql, err, errOut.String())
		}
		return out.String()
	}
	run("CREATE TABLE wanted AS SELECT range * 1000 AS id, 'w' || range AS tag FROM range(600)")
	got := run("SELECT count(*) AS n, min(tag) AS t FROM lake.quiver.events e JOIN wanted w USING (id)")
	if want := fmt.Sprintf("n\tt\n%d\tw0\n", 600); got != want {
		t.Errorf("mysql join: got %q, want %q", got, want)
	}
}
