package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth/authtest"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/server"
)

// TestReadme_ServeRolesAsWritten runs the README's serve example with
// mixed roles exactly as written (in a scratch directory holding the
// certificate files it names, on its own ports) and checks each user gets
// the role the README says: admin and etl write, bi only reads.
func TestReadme_ServeRolesAsWritten(t *testing.T) {
	var line string
	for _, c := range readme.Commands(t, "quiver serve") {
		if strings.Contains(c, "--role") {
			line = c
		}
	}
	if line == "" {
		t.Fatal("the README shows no serve command with --role")
	}
	t.Logf("README: %s", line)
	dir := t.TempDir()
	t.Chdir(dir)
	ca := authtest.NewCA(t)
	cert, key := ca.WriteServerCert(t, dir)
	if err := os.Rename(cert, "cert.pem"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(key, "key.pem"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}

	args := strings.Fields(line)[2:]
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *server.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- (&serveCmd{started: func(s *server.Server) { started <- s }}).Run(ctx, discard(), args)
	}()
	var srv *server.Server
	select {
	case srv = <-started:
	case err := <-done:
		t.Fatalf("serve as the README shows it: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start in 60 s")
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})

	flightAddr := "127.0.0.1:" + srv.FlightAddr[strings.LastIndex(srv.FlightAddr, ":")+1:]
	if err := mysql.RegisterTLSConfig("readme-roles", &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if db, err := sql.Open("mysql", "bi:r3ad@tcp("+srv.MySQLAddr+")/main?tls=false"); err != nil {
		t.Fatal(err)
	} else {
		var me *mysql.MySQLError
		if err := db.Ping(); !errors.As(err, &me) || me.Number != 3159 {
			t.Errorf("a plaintext MySQL login: %v, want error 3159 (TLS required)", err)
		}
		db.Close()
	}
	users := []struct {
		name, password string
		create         bool // may CREATE TABLE
	}{
		{"admin", "s3cret", true},
		{"etl", "etlpw", true},
		{"bi", "r3ad", false},
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer ccancel()
			c, err := client.Dial(cctx, client.Config{Addr: flightAddr, User: u.name, Password: u.password, TLS: true, CAFile: ca.CertFile})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			_, err = c.Exec(cctx, "CREATE TABLE made_by_"+u.name+" (i INT)")
			switch {
			case u.create && err != nil:
				t.Errorf("Flight CREATE as %s: %v, want it to run", u.name, err)
			case !u.create && status.Code(err) != codes.PermissionDenied:
				t.Errorf("Flight CREATE as %s: %v, want PermissionDenied", u.name, err)
			}
			if r, err := c.Query(cctx, "SELECT 1"); err != nil {
				t.Errorf("Flight SELECT as %s: %v", u.name, err)
			} else {
				r.Release()
			}

			// With --tls-cert, MySQL logins must use TLS.
			db, err := sql.Open("mysql", u.name+":"+u.password+"@tcp("+srv.MySQLAddr+")/main?tls=readme-roles")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, err = db.Exec("CREATE TABLE mysql_by_" + u.name + " (i INT)")
			var me *mysql.MySQLError
			switch {
			case u.create && err != nil:
				t.Errorf("MySQL CREATE as %s: %v, want it to run", u.name, err)
			case !u.create && !(errors.As(err, &me) && me.Number == 1227):
				t.Errorf("MySQL CREATE as %s: %v, want error 1227", u.name, err)
			}
		})
	}
}

// TestReadme_ServeCommandsParse checks every serve command in the README
// is accepted as written.
func TestReadme_ServeCommandsParse(t *testing.T) {
	cmds := readme.Commands(t, "quiver serve")
	if len(cmds) < 2 {
		t.Fatalf("found %d serve commands in the README, want at least 2", len(cmds))
	}
	for _, c := range cmds {
		fs, f := newServeFlags()
		if _, err := parseFlags(discard(), fs, strings.Fields(c)[2:]); err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		if _, err := f.users.specs(); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}
