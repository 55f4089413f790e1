package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// writeUsersFile makes a users file in a temporary directory with the
// given requests applied, and returns its path.
func writeUsersFile(t *testing.T, reqs ...auth.UserRequest) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	for _, req := range reqs {
		if _, err := auth.EditUsersFile(path, req.Apply); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// userAction runs the quiver.user action as c.
func userAction(c *client.Client, req auth.UserRequest) (auth.UserReply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return auth.UserReply{}, err
	}
	ctx := c.Context(context.Background())
	stream, err := c.SQL().Client.DoAction(ctx, &flight.Action{Type: auth.UserActionType, Body: body})
	if err != nil {
		return auth.UserReply{}, err
	}
	res, err := stream.Recv()
	if err != nil {
		return auth.UserReply{}, err
	}
	var reply auth.UserReply
	err = json.Unmarshal(res.GetBody(), &reply)
	return reply, err
}

// mysqlExec runs sql over the MySQL protocol as user.
func mysqlExec(srv *server.Server, user, password, query string) error {
	db, err := sql.Open("mysql", user+":"+password+"@tcp("+srv.MySQLAddr+")/main")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(query)
	return err
}

// TestServer_UsersFile runs a server over a users file: users log in over
// Flight and MySQL; an admin adds one through the quiver.user action, and
// nobody else may; a reload (SIGHUP's) changes roles without dropping
// sessions and ends those of deleted users. The audit log records it all.
func TestServer_UsersFile(t *testing.T) {
	path := writeUsersFile(t,
		auth.UserRequest{Op: auth.OpAdd, Name: "root", Password: "root-pw", Role: "admin"},
		auth.UserRequest{Op: auth.OpAdd, Name: "bi", Password: "bi-pw"})
	audit := &syncbuf.Buffer{}
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{
		UsersFile: path, AuditLog: slog.New(slog.NewTextHandler(audit, nil)).With("audit", true),
	}})
	root := testutil.Dial(t, srv, client.Config{User: "root", Password: "root-pw"})
	bi := testutil.Dial(t, srv, client.Config{User: "bi", Password: "bi-pw"})
	ctx := context.Background()
	if _, err := root.Exec(ctx, "CREATE TABLE facts (n INT)"); err != nil {
		t.Fatal(err)
	}
	_, err := bi.Exec(ctx, "CREATE TABLE mine (n INT)")
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bi (readonly) creates a table: got %v, want PermissionDenied", err)
	}

	t.Run("action", func(t *testing.T) {
		reply, err := userAction(root, auth.UserRequest{Op: auth.OpAdd, Name: "etl", Password: "etl-pw", Role: "readwrite"})
		if err != nil {
			t.Fatal(err)
		}
		if len(reply.Users) != 3 {
			t.Errorf("users after the add: got %v", reply.Users)
		}
		etl := testutil.Dial(t, srv, client.Config{User: "etl", Password: "etl-pw"})
		if _, err := etl.Exec(ctx, "INSERT INTO facts VALUES (1)"); err != nil {
			t.Errorf("etl inserts over Flight: %v", err)
		}
		if err := mysqlExec(srv, "etl", "etl-pw", "INSERT INTO facts VALUES (2)"); err != nil {
			t.Errorf("etl inserts over MySQL: %v", err)
		}
		_, err = userAction(bi, auth.UserRequest{Op: auth.OpRole, Name: "bi", Role: "admin"})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("bi makes itself admin: got %v, want PermissionDenied", err)
		}
		onDisk, err := auth.ReadUsersFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if u, _ := onDisk.Lookup("etl"); u.Role != auth.RoleReadWrite {
			t.Errorf("etl in the file: got %v, want readwrite", u)
		}
	})

	t.Run("reload", func(t *testing.T) {
		etl := testutil.Dial(t, srv, client.Config{User: "etl", Password: "etl-pw"})
		for _, req := range []auth.UserRequest{
			{Op: auth.OpRole, Name: "bi", Role: "readwrite"},
			{Op: auth.OpDel, Name: "etl"},
		} {
			if _, err := auth.EditUsersFile(path, req.Apply); err != nil {
				t.Fatal(err)
			}
		}
		if err := srv.ReloadUsers(); err != nil {
			t.Fatal(err)
		}
		// bi's session goes on, with the new role.
		if _, err := bi.Exec(ctx, "CREATE TABLE mine (n INT)"); err != nil {
			t.Errorf("bi, now readwrite, in the session it had: %v", err)
		}
		_, err := etl.Exec(ctx, "SELECT 1")
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("deleted etl's session: got %v, want Unauthenticated", err)
		}
		var me *mysql.MySQLError
		if err := mysqlExec(srv, "etl", "etl-pw", "SELECT 1"); !errors.As(err, &me) || me.Number != 1045 {
			t.Errorf("deleted etl over MySQL: got %v, want error 1045", err)
		}
	})

	// DDL over MySQL is audited like DDL over Flight.
	if err := mysqlExec(srv, "root", "root-pw", "CREATE TABLE via_mysql (n INT)"); err != nil {
		t.Fatal(err)
	}
	if err := mysqlExec(srv, "bi", "bi-pw", "DROP TABLE via_mysql"); err != nil {
		t.Fatal(err) // bi is readwrite since the reload
	}
	for _, want := range []string{
		`msg=statement audit=true user=root statement=CREATE need=readwrite endpoint=mysql`,
		`msg=statement audit=true user=bi statement=DROP need=readwrite endpoint=mysql`,
		`msg=login audit=true proto=flight user=root`,
		`msg=login audit=true proto=mysql user=etl`,
		`msg=statement audit=true user=root statement=CREATE need=readwrite`,
		`msg="statement refused" audit=true user=bi role=readonly statement=CREATE need=readwrite`,
		`msg="user added" audit=true user=etl role=readwrite by=root`,
		`msg="user change refused" audit=true user=bi op=role by=bi`,
		`msg="user role changed" audit=true user=bi role=readwrite was=readonly by="users file"`,
		`msg="user deleted" audit=true user=etl role=readwrite by="users file"`,
		`msg="login failed" audit=true proto=mysql user=etl`,
	} {
		if !strings.Contains(audit.String(), want) {
			t.Errorf("audit log lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("audit log:\n%s", audit)
	}
}

// TestServer_UsersFileConfig checks the configurations the users file
// refuses, and that a server whose users come from flags refuses the
// quiver.user action and the reload.
func TestServer_UsersFileConfig(t *testing.T) {
	path := writeUsersFile(t, auth.UserRequest{Op: auth.OpAdd, Name: "root", Password: "root-pw", Role: "admin"})
	_, err := server.Start(context.Background(), server.Config{DB: ":memory:", FlightAddr: "127.0.0.1:0", Security: server.Security{
		UsersFile: path, Users: []server.UserSpec{{Name: "a", Password: "b", Role: auth.RoleAdmin}},
	}})
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("--users-file and --user: got %v", err)
	}
	_, err = server.Start(context.Background(), server.Config{DB: ":memory:", FlightAddr: "127.0.0.1:0", Security: server.Security{
		UsersFile: filepath.Join(t.TempDir(), "missing"),
	}})
	if err == nil {
		t.Errorf("a missing users file: got no error")
	}

	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: []server.UserSpec{{Name: "root", Password: "root-pw", Role: auth.RoleAdmin}}}})
	root := testutil.Dial(t, srv, client.Config{User: "root", Password: "root-pw"})
	_, err = userAction(root, auth.UserRequest{Op: auth.OpList})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "--users-file") {
		t.Errorf("the action on a server with flag users: got %v, want FailedPrecondition naming --users-file", err)
	}
	if err := srv.ReloadUsers(); err == nil {
		t.Errorf("reload on a server without a users file: got no error")
	}
}

// TestServer_LoginRateLimit checks failed MySQL logins are limited per
// user: past the burst, even the right password is refused with error
// 1129 until the bucket refills, and other users are not affected.
func TestServer_LoginRateLimit(t *testing.T) {
	path := writeUsersFile(t,
		auth.UserRequest{Op: auth.OpAdd, Name: "root", Password: "root-pw", Role: "admin"},
		auth.UserRequest{Op: auth.OpAdd, Name: "bi", Password: "bi-pw"})
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{UsersFile: path}})
	var me *mysql.MySQLError
	for i := range auth.DefaultUserLimit.Burst {
		if err := mysqlExec(srv, "bi", "guess", "SELECT 1"); !errors.As(err, &me) || me.Number != 1045 {
			t.Fatalf("wrong password %d: got %v, want error 1045", i, err)
		}
	}
	err := mysqlExec(srv, "bi", "bi-pw", "SELECT 1")
	if !errors.As(err, &me) || me.Number != 1129 || !strings.Contains(me.Message, "Too many failed logins") {
		t.Errorf("right password after %d failures: got %v, want error 1129", auth.DefaultUserLimit.Burst, err)
	}
	if err := mysqlExec(srv, "root", "root-pw", "SELECT 1"); err != nil {
		t.Errorf("another user: %v", err)
	}
	// Flight shares the buckets.
	_, err = client.Dial(context.Background(), client.Config{Addr: srv.FlightAddr, User: "bi", Password: "bi-pw"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("bi over Flight: got %v, want ResourceExhausted", err)
	}
}
