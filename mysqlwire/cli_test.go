package mysqlwire

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// mysqlCLI runs the mysql command-line client against the server and
// returns its output. The test is skipped when the client is missing.
func mysqlCLI(t *testing.T, ts *testServer, user, password string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, lookErr := exec.LookPath("mysql")
	if lookErr != nil {
		t.Skip("mysql client not installed (apt-get install mariadb-client); skipping the CLI test")
	}
	_, port, _ := net.SplitHostPort(ts.addr)
	base := []string{"--batch", "--quick", "--protocol=TCP", "-h", "127.0.0.1", "-P", port, "-u", user}
	if password != "" {
		base = append(base, "-p"+password)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func TestMySQLCLI(t *testing.T) {
	ts := startServer(t, Options{})

	t.Run("query", func(t *testing.T) {
		out, stderr, err := mysqlCLI(t, ts, "u", "", "-e",
			"SELECT 1 AS a, 'x y' AS b, NULL AS c, 3.0::DOUBLE AS d, 0.1::DOUBLE AS e, 1e20::DOUBLE AS f, 2.5::FLOAT AS g, true AS h, DATE '2024-01-02' AS i")
		if err != nil {
			t.Fatalf("mysql: %v: %s", err, stderr)
		}
		want := "a\tb\tc\td\te\tf\tg\th\ti\n1\tx y\tNULL\t3.0\t0.1\t1e+20\t2.5\t1\t2024-01-02\n"
		if out != want {
			t.Errorf("output =\n%q\nwant\n%q", out, want)
		}
	})

	t.Run("statements and use", func(t *testing.T) {
		out, stderr, err := mysqlCLI(t, ts, "u", "", "-e",
			"CREATE SCHEMA cli; CREATE TABLE cli.t (id INT, s VARCHAR); INSERT INTO cli.t VALUES (1, 'tab\there'), (2, NULL); use cli; SELECT DATABASE(); SELECT * FROM t ORDER BY id; SHOW TABLES")
		if err != nil {
			t.Fatalf("mysql: %v: %s", err, stderr)
		}
		want := "DATABASE()\ncli\nid\ts\n1\ttab\\there\n2\tNULL\nTables_in_cli\nt\n"
		if out != want {
			t.Errorf("output =\n%q\nwant\n%q", out, want)
		}
	})

	t.Run("error", func(t *testing.T) {
		_, stderr, err := mysqlCLI(t, ts, "u", "", "-e", "SELEC 1")
		if err == nil || !strings.Contains(stderr, "ERROR 1064") {
			t.Errorf("mysql -e 'SELEC 1': err %v, stderr %q; want ERROR 1064", err, stderr)
		}
		_, stderr, err = mysqlCLI(t, ts, "u", "", "-e", "SELECT * FROM nosuch")
		if err == nil || !strings.Contains(stderr, "ERROR 1146") {
			t.Errorf("mysql unknown table: err %v, stderr %q; want ERROR 1146", err, stderr)
		}
	})

	t.Run("large result", func(t *testing.T) {
		start := time.Now()
		out, stderr, err := mysqlCLI(t, ts, "u", "", "-e", "SELECT range AS n, range * 2 AS m FROM range(1000000)")
		if err != nil {
			t.Fatalf("mysql: %v: %s", err, stderr)
		}
		lines := strings.Count(out, "\n")
		if lines != 1000001 {
			t.Errorf("got %d lines, want 1000001", lines)
		}
		t.Logf("mysql --batch --quick: 1M rows x 2 BIGINT in %v", time.Since(start))
	})
}

func TestMySQLCLI_Auth(t *testing.T) {
	ts := startServer(t, Options{Users: newUsers(t)})
	out, stderr, err := mysqlCLI(t, ts, "alice", "s3cret pass", "-e", "SELECT CURRENT_USER()")
	if err != nil || out != "CURRENT_USER()\nalice@%\n" {
		t.Errorf("login as alice: %q, %v, %s", out, err, stderr)
	}
	_, stderr, err = mysqlCLI(t, ts, "alice", "nope", "-e", "SELECT 1")
	if err == nil || !strings.Contains(stderr, "ERROR 1045") {
		t.Errorf("wrong password: err %v, stderr %q; want ERROR 1045", err, stderr)
	}
}
