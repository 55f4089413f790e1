package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/testutil"
)

// inNamespace runs script with sh -e in new namespaces of the kinds
// unshare's flags name (--net gives a loopback of its own, --mount mounts
// nobody else sees), so that a documented command that names fixed ports
// or system directories can run as written without touching the machine.
// It skips the test where namespaces cannot be made: they need root.
func inNamespace(t *testing.T, flags []string, env []string, script string) (stdout, stderr string, err error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for namespaces (make test runs as root in CI)")
	}
	if out, err := exec.Command("unshare", append(flags, "true")...).CombinedOutput(); err != nil {
		t.Skipf("namespaces unavailable here: unshare %s: %v: %s", strings.Join(flags, " "), err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", append(flags, "sh", "-ec", script)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// goEnv returns go env's value of key in env.
func goEnv(t *testing.T, env []string, key string) string {
	t.Helper()
	cmd := exec.Command("go", "env", key)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

// TestReadme_InstallAsWritten runs the docs' make install commands
// exactly as written, from the repository's root, in a mount namespace:
// /usr/local is an overlay whose writes land in a temporary directory,
// and GOPATH is a temporary one (the module and build caches stay
// where they are), so neither the machine's /usr/local nor its GOPATH
// changes. The quiver each installs must run. Like make build, it
// rewrites the repository's bin/.
func TestReadme_InstallAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds quiver and quiver-bench with make")
	}
	cmds := readme.Commands(t, "make install")
	if len(cmds) < 2 {
		t.Fatalf("found %d make install commands, want the GOPATH one and the PREFIX one", len(cmds))
	}
	root := testsvc.RepoRoot(t)
	// The build date the Makefile stamps is pinned for both commands, so
	// the second finds the binaries the first linked instead of linking
	// them again for a new second.
	date := "DATE=" + time.Now().UTC().Format(time.RFC3339)
	for _, line := range cmds {
		name := strings.TrimSpace(strings.TrimPrefix(line, "make install"))
		if name == "" {
			name = "GOPATH"
		}
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			gopath := filepath.Join(tmp, "gopath")
			env := []string{"GOPATH=" + gopath, "GOBIN=", "GOMODCACHE=" + goEnv(t, nil, "GOMODCACHE"), "GOCACHE=" + goEnv(t, nil, "GOCACHE"), date}
			dir := goEnv(t, env, "GOBIN")
			if dir == "" {
				dir = filepath.Join(gopath, "bin")
			}
			if prefix, ok := strings.CutPrefix(line, "make install PREFIX="); ok {
				dir = filepath.Join(prefix, "bin")
			}
			ov := filepath.Join(tmp, "usr-local")
			script := strings.Join([]string{
				"mkdir -p " + shellQuote(ov),
				"mount -t tmpfs tmpfs " + shellQuote(ov),
				"mkdir " + shellQuote(ov+"/upper") + " " + shellQuote(ov+"/work"),
				"mount -t overlay overlay -o lowerdir=/usr/local,upperdir=" + ov + "/upper,workdir=" + ov + "/work /usr/local",
				"cd " + shellQuote(root),
				line,
				shellQuote(filepath.Join(dir, "quiver")) + " version",
			}, "\n")
			start := time.Now()
			out, errOut, err := inNamespace(t, []string{"--mount", "--propagation", "private"}, env, script)
			if err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", line, err, out, errOut)
			}
			t.Logf("%s: %s", line, time.Since(start).Round(time.Second))
			for _, want := range []string{"installed " + filepath.Join(dir, "quiver") + "\n", "\nquiver "} {
				if !strings.Contains(out, want) {
					t.Errorf("%s: output lacks %q:\n%s", line, want, out)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "quiver")); err == nil && strings.HasPrefix(dir, "/usr/local") {
				t.Errorf("%s: %s is on the machine's own /usr/local, outside the namespace", line, filepath.Join(dir, "quiver"))
			}
		})
	}
}

// TestReadme_ServeDemoAsWritten runs the README's quiver serve --demo
// command exactly as written, in a scratch directory, in a network
// namespace of its own, where the default ports it listens on are free
// whatever runs beside the test; quiver query, in the same namespace,
// must find the demo's orders.
func TestReadme_ServeDemoAsWritten(t *testing.T) {
	var cmds []string
	for _, c := range readme.Commands(t, "quiver serve ") {
		if strings.Contains(c, " --demo") && !strings.Contains(c, "--flight") {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) == 0 {
		t.Fatal("the docs show no quiver serve --demo command on the default ports")
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testsvc.QuiverBinary(t), filepath.Join(bin, "quiver")); err != nil {
		t.Fatal(err)
	}
	for _, line := range cmds {
		dir := t.TempDir()
		script := strings.Join([]string{
			"ip link set lo up",
			"cd " + shellQuote(dir),
			"mkdir -p data",
			line + " 2>serve.log &",
			"pid=$!",
			// The demo's rows are in before it says it is ready.
			"i=0; until grep -q 'quiver is ready' serve.log; do kill -0 $pid; i=$((i+1)); [ $i -lt 1200 ]; sleep 0.1; done",
			`quiver query "SELECT count(*) AS n FROM orders"`,
			"kill -INT $pid; wait $pid",
		}, "\n")
		out, errOut, err := inNamespace(t, []string{"--net"}, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, script)
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s\nserve.log:\n%s", line, err, out, errOut, log)
		}
		if !strings.Contains(out, "600000") {
			t.Errorf("%s: the demo's orders: got %q, want 600000 rows", line, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "data", "quiver.duckdb")); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// TestReadme_MySQLDumpIntoMariaDBAsWritten runs the docs' restore of a
// quiver dump into MariaDB exactly as written, on a pseudo-terminal for
// -p's prompt: in network, mount and process namespaces of its own,
// where /etc/hosts maps db.example to 127.0.0.1 and a fresh MariaDB
// listens on the default port with the root password typed at the
// prompt. The dump is mysqldump's of a quiver server (the docs' dump
// command itself runs in TestReadme_MySQLToolsAsWritten); afterwards
// MariaDB must hold its rows.
func TestReadme_MySQLDumpIntoMariaDBAsWritten(t *testing.T) {
	var line string
	for _, c := range readme.Commands(t, "mysql ") {
		if strings.Contains(c, "-h db.example") {
			line = c
		}
	}
	if line == "" {
		t.Fatal("the docs show no restore into MariaDB at db.example")
	}
	for _, bin := range []string{"mysql", "mysqldump", "mariadb-install-db", "/usr/sbin/mariadbd"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (make deps installs mariadb-client and mariadb-server)", bin)
		}
	}
	flags := []string{"--net", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child"}
	if os.Geteuid() != 0 {
		t.Skip("needs root for namespaces (make test runs as root in CI)")
	}
	if out, err := exec.Command("unshare", append(flags, "true")...).CombinedOutput(); err != nil {
		t.Skipf("namespaces unavailable here: %v: %s", err, out)
	}
	const password = "docs-pw"
	dir := t.TempDir()
	t.Chdir(dir)
	srv, stop := startServe(t, "--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "127.0.0.1:0", "--http", "",
		"--user", "admin", "--password", password, "--log-level", "error")
	t.Cleanup(stop)
	c := testutil.Dial(t, srv, client.Config{User: "admin", Password: password})
	if _, err := c.Exec(context.Background(), "CREATE TABLE orders AS SELECT i AS id, ['new', 'paid'][i % 2 + 1] AS status FROM range(100) t(i)"); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(srv.MySQLAddr, ":")
	dump := exec.Command("mysqldump", "-h", host, "-P", port, "-u", "admin", "-p"+password, "--single-transaction", "main")
	out, err := dump.Output()
	if err != nil {
		t.Fatalf("mysqldump: %v", err)
	}
	if err := os.WriteFile("shop.sql", out, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("hosts", []byte("127.0.0.1 localhost\n127.0.0.1 db.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mdb := filepath.Join(dir, "mariadb")
	script := strings.Join([]string{
		"mount --bind " + shellQuote(filepath.Join(dir, "hosts")) + " /etc/hosts",
		"ip link set lo up",
		"mkdir -p " + shellQuote(mdb),
		"mariadb-install-db --user=root --datadir=" + shellQuote(mdb+"/data") + " --auth-root-authentication-method=normal >/dev/null",
		"/usr/sbin/mariadbd --user=root --datadir=" + shellQuote(mdb+"/data") + " --socket=" + shellQuote(mdb+"/sock") +
			" --bind-address=127.0.0.1 --port=3306 --pid-file=" + shellQuote(mdb+"/pid") + " --skip-name-resolve >" + shellQuote(mdb+"/log") + " 2>&1 &",
		"i=0; until mysqladmin --socket=" + shellQuote(mdb+"/sock") + " -uroot ping >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 600 ]; sleep 0.1; done",
		"mysql --socket=" + shellQuote(mdb+"/sock") + ` -uroot -e "CREATE USER IF NOT EXISTS root@'127.0.0.1'; ALTER USER root@'127.0.0.1' IDENTIFIED BY '` + password + `'; GRANT ALL ON *.* TO root@'127.0.0.1'; CREATE DATABASE shop;"`,
		"cd " + shellQuote(dir),
		line,
		`echo "rows: $(mysql -h db.example -u root -p` + password + ` -N -e 'SELECT count(*) FROM shop.orders')"`,
	}, "\n")
	p := startOnPTY(t, "unshare", append(flags, "sh", "-ec", script), "", "")
	p.expect("password:")
	p.send(password, keyEnter)
	p.expect("rows: 100")
	p.exit()
}
