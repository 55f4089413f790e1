package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"golang.org/x/term"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	register("user", "manage users: add, passwd, del, role, list, in a users file or on a running server", func() command { return &userCmd{} })
}

// Environment variables passwords come from, so that none is ever on a
// command line.
const (
	// envNewPassword is the password quiver user add and passwd set.
	envNewPassword = "QUIVER_NEW_PASSWORD"
	// envPassword is the password a client logs in with; quiver user
	// add and passwd on a users file, and quiver serve for the first
	// admin, take it as the password to set when envNewPassword is unset.
	envPassword = "QUIVER_PASSWORD"
)

// firstAdminName is the admin quiver serve --users-file creates in a
// users file that has no users.
const firstAdminName = "admin"

// userCmd is quiver user: it edits a users file (--users-file), or, without
// one, asks a running server to (the quiver.user Flight action, which needs
// an admin).
type userCmd struct{}

const userUsage = `usage:
  quiver user add NAME [--role readonly|readwrite|admin]  (default readonly)
  quiver user passwd NAME
  quiver user del NAME
  quiver user role NAME ROLE
  quiver user list
each with --users-file FILE to edit a users file, or else --server HOST:PORT
--user ADMIN (QUIVER_PASSWORD: the admin's password) to change a running
server's. The password to set comes from QUIVER_NEW_PASSWORD, else (with
--users-file) QUIVER_PASSWORD, else a prompt on the terminal, else the first
line of standard input; never from the command line.`

// reference gives the CLI reference the flags, which every operation
// shares.
func (*userCmd) reference() []referencePage {
	return []referencePage{{title: "user add|passwd|del|role|list", args: []string{"list"}}}
}

func (c *userCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(std.Err, userUsage)
		if len(args) == 0 {
			return usagef("name an operation: add, passwd, del, role or list")
		}
		return flag.ErrHelp
	}
	op := args[0]
	fs := newFlagSet("user " + op)
	file := fs.String("users-file", "", "users file to edit (created with mode 0600 when missing); without it, the server at --server is changed")
	role := fs.String("role", "", "role of the user to add: readonly (the default), readwrite or admin")
	var cf clientFlags
	cf.register(fs)
	pos, err := parseFlags(std, fs, args[1:])
	if err != nil {
		return err
	}
	req, err := userRequest(op, pos, *role)
	if err != nil {
		return err
	}
	if *file != "" {
		var conn []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "server", "user", "password", "tls", "tls-ca", "tls-cert", "tls-key":
				conn = append(conn, "--"+f.Name)
			}
		})
		if len(conn) > 0 {
			return usagef("%s change a running server and --users-file edits the file: give one or the other", strings.Join(conn, ", "))
		}
	}
	if *file == "" {
		if err := askLoginPassword(std, &cf); err != nil {
			return err
		}
	}
	if req.Op == auth.OpAdd || req.Op == auth.OpPasswd {
		if req.Password, err = newPassword(std, req.Name, *file != ""); err != nil {
			return err
		}
	}
	var reply auth.UserReply
	where := "in " + *file
	if *file != "" {
		reply, err = editUsersFile(*file, req)
	} else {
		where = "on " + cf.server
		reply, err = userAction(ctx, &cf, req)
	}
	if err != nil {
		return err
	}
	if req.Op == auth.OpList {
		w := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tROLE")
		for _, u := range reply.Users {
			fmt.Fprintf(w, "%s\t%s\n", u.Name, u.Role)
		}
		return w.Flush()
	}
	fmt.Fprintf(std.Err, "quiver user: %s %s\n", done(req, reply), where)
	if *file != "" {
		fmt.Fprintln(std.Err, "quiver user: a quiver serve --users-file running on it reads it again on SIGHUP")
	}
	return nil
}

// userRequest checks an operation's arguments.
func userRequest(op string, pos []string, role string) (auth.UserRequest, error) {
	want := map[string]int{auth.OpAdd: 1, auth.OpPasswd: 1, auth.OpDel: 1, auth.OpRole: 2, auth.OpList: 0}
	n, ok := want[op]
	switch {
	case !ok:
		return auth.UserRequest{}, usagef("unknown operation %q: want add, passwd, del, role or list", op)
	case len(pos) != n:
		return auth.UserRequest{}, usagef("%s takes %d argument(s), got %d\n%s", op, n, len(pos), userUsage)
	case role != "" && op != auth.OpAdd:
		return auth.UserRequest{}, usagef("--role goes with add; to change a role: quiver user role NAME ROLE")
	}
	req := auth.UserRequest{Op: op, Role: role}
	if n > 0 {
		req.Name = pos[0]
	}
	if op == auth.OpRole {
		req.Role = pos[1]
	}
	if req.Role != "" {
		if _, err := auth.ParseRole(req.Role); err != nil {
			return auth.UserRequest{}, usagef("%v", err)
		}
	}
	return req, nil
}

// done says what a request did.
func done(req auth.UserRequest, reply auth.UserReply) string {
	role := ""
	for _, u := range reply.Users {
		if u.Name == req.Name {
			role = u.Role
		}
	}
	switch req.Op {
	case auth.OpAdd:
		return fmt.Sprintf("added %s (%s)", req.Name, role)
	case auth.OpPasswd:
		return fmt.Sprintf("changed the password of %s", req.Name)
	case auth.OpDel:
		return fmt.Sprintf("deleted %s", req.Name)
	case auth.OpRole:
		return fmt.Sprintf("%s is now %s", req.Name, role)
	}
	return req.Op
}

// editUsersFile applies req to the users file at path.
func editUsersFile(path string, req auth.UserRequest) (auth.UserReply, error) {
	if req.Op == auth.OpList {
		st, err := auth.ReadUsersFile(path)
		if err != nil {
			return auth.UserReply{}, err
		}
		return auth.Reply(st), nil
	}
	st, err := auth.EditUsersFile(path, req.Apply)
	if err != nil {
		return auth.UserReply{}, err
	}
	return auth.Reply(st), nil
}

// askLoginPassword asks, on a terminal, for the password of the user
// that --user names when neither --password nor QUIVER_PASSWORD gave it.
func askLoginPassword(std cli.Stdio, cf *clientFlags) error {
	if cf.user == "" || cf.password != "" || !cli.IsTerminal(std.In) {
		return nil
	}
	pw, err := promptPassword(std, fmt.Sprintf("password of %s: ", cf.user))
	if err != nil {
		return err
	}
	cf.password = pw
	return nil
}

// userAction sends req to the server as the quiver.user action.
func userAction(ctx context.Context, cf *clientFlags, req auth.UserRequest) (auth.UserReply, error) {
	cfg, err := cf.config()
	if err != nil {
		return auth.UserReply{}, err
	}
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return auth.UserReply{}, cf.serverError("connect", err)
	}
	defer c.Close()
	body, err := json.Marshal(req)
	if err != nil {
		return auth.UserReply{}, err
	}
	stream, err := c.SQL().Client.DoAction(c.Context(ctx), &flight.Action{Type: auth.UserActionType, Body: body})
	if err != nil {
		return auth.UserReply{}, cf.serverError("user "+req.Op, err)
	}
	res, err := stream.Recv()
	if err != nil {
		return auth.UserReply{}, cf.serverError("user "+req.Op, err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	var reply auth.UserReply
	if err := json.Unmarshal(res.GetBody(), &reply); err != nil {
		return auth.UserReply{}, fmt.Errorf("user %s: the server's reply: %w", req.Op, err)
	}
	return reply, nil
}

// newPassword returns the password to set for name: QUIVER_NEW_PASSWORD,
// else (fileMode) QUIVER_PASSWORD, else asked twice on the terminal, else
// the first line of std.In.
func newPassword(std cli.Stdio, name string, fileMode bool) (string, error) {
	if pw := os.Getenv(envNewPassword); pw != "" {
		return pw, nil
	}
	if pw := os.Getenv(envPassword); pw != "" && fileMode {
		return pw, nil
	}
	if !cli.IsTerminal(std.In) {
		return readLinePassword(std.In)
	}
	pw, err := promptPassword(std, fmt.Sprintf("new password of %s: ", name))
	if err != nil {
		return "", err
	}
	again, err := promptPassword(std, "again: ")
	if err != nil {
		return "", err
	}
	if pw != again {
		return "", errors.New("the passwords differ; nothing changed")
	}
	return pw, nil
}

// firstAdmin makes sure the users file at path has a user, before quiver
// serve loads it: a missing or empty file gets an admin named admin, with
// the password from QUIVER_PASSWORD or asked on the terminal.
func firstAdmin(std cli.Stdio, path string) error {
	st, err := auth.ReadUsersFile(path)
	switch {
	case err == nil && st.Len() > 0:
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	pw := os.Getenv(envPassword)
	if pw == "" {
		if !cli.IsTerminal(std.In) {
			return fmt.Errorf("users file %s has no users: set %s to the first admin's password, or add users with: quiver user add NAME --role admin --users-file %s", path, envPassword, path)
		}
		if pw, err = promptPassword(std, fmt.Sprintf("users file %s has no users; password of its first admin, %s: ", path, firstAdminName)); err != nil {
			return err
		}
		again, err := promptPassword(std, "again: ")
		if err != nil {
			return err
		}
		if pw != again {
			return errors.New("the passwords differ; no users file was written")
		}
	}
	_, err = auth.EditUsersFile(path, func(s *auth.Store) error {
		if s.Len() > 0 {
			return nil // another process was first
		}
		return auth.UserRequest{Op: auth.OpAdd, Name: firstAdminName, Password: pw, Role: auth.RoleAdmin.String()}.Apply(s)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Err, "quiver: users file %s created with the admin %s; add users with quiver user add\n", path, firstAdminName)
	return nil
}

// promptPassword asks for a password on the terminal std.In without
// echo.
func promptPassword(std cli.Stdio, prompt string) (string, error) {
	f, ok := std.In.(*os.File)
	if !ok {
		return "", errors.New("read password: standard input is not a terminal")
	}
	fmt.Fprint(std.Err, prompt)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(std.Err)
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if len(b) == 0 {
		return "", errors.New("empty password")
	}
	return string(b), nil
}

// readLinePassword reads a password from the first line of r.
func readLinePassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", fmt.Errorf("read password from standard input (or set %s): %w", envNewPassword, err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", fmt.Errorf("empty password on standard input; set %s or type it at a terminal", envNewPassword)
	}
	return pw, nil
}
