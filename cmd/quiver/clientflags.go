package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
)

// defaultServer is where client verbs connect when neither --server nor
// QUIVER_SERVER says.
const defaultServer = "127.0.0.1:31337"

// clientFlags are the connection flags every client verb takes (quiver
// load, query, bench): --server, --user, --password and --tls, with
// QUIVER_SERVER, QUIVER_USER and QUIVER_PASSWORD as their defaults, plus
// --tls-ca and, for mTLS, --tls-cert and --tls-key.
type clientFlags struct {
	server, user, password    string
	tls                       bool
	caFile, certFile, keyFile string
}

// register adds the flags to fs. The environment is read here, so a flag
// given on the command line wins over it.
func (f *clientFlags) register(fs *flag.FlagSet) {
	envStringVar(fs, &f.server, "server", "QUIVER_SERVER", defaultServer, "Flight SQL server HOST:PORT (env QUIVER_SERVER)")
	envStringVar(fs, &f.user, "user", "QUIVER_USER", "", "user to authenticate as (env QUIVER_USER)")
	envStringVar(fs, &f.password, "password", "QUIVER_PASSWORD", "", "password of --user (env QUIVER_PASSWORD)")
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS, verifying the server against the system roots or --tls-ca")
	fs.StringVar(&f.caFile, "tls-ca", "", "CA certificate (PEM) that signed the server's certificate; implies --tls")
	fs.StringVar(&f.certFile, "tls-cert", "", "client certificate (PEM) for mTLS; implies --tls")
	fs.StringVar(&f.keyFile, "tls-key", "", "client private key (PEM) for --tls-cert")
}

// envStringVar defines a string flag whose default is the environment
// variable env when it is set, else def. -h and the CLI reference show
// def: the variable's value may be a password, and the reference must
// not depend on the environment of whoever writes it.
func envStringVar(fs *flag.FlagSet, p *string, name, env, def, usage string) {
	v := os.Getenv(env)
	if v == "" {
		v = def
	}
	fs.StringVar(p, name, v, usage)
	fs.Lookup(name).DefValue = def
}

// config checks the flags and returns the client configuration. A bad
// combination is a usage error.
func (f *clientFlags) config() (client.Config, error) {
	if f.server == "" {
		return client.Config{}, usagef("--server is empty: give HOST:PORT or set QUIVER_SERVER")
	}
	if _, _, err := net.SplitHostPort(f.server); err != nil {
		return client.Config{}, usagef("bad --server %q: want HOST:PORT", f.server)
	}
	if f.password != "" && f.user == "" {
		return client.Config{}, usagef("--password needs --user (or QUIVER_USER)")
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return client.Config{}, usagef("--tls-cert and --tls-key go together")
	}
	return client.Config{
		Addr: f.server, User: f.user, Password: f.password,
		TLS:    f.tls || f.caFile != "" || f.certFile != "",
		CAFile: f.caFile, CertFile: f.certFile, KeyFile: f.keyFile,
	}, nil
}

// registerResultCompression adds --compression, the result compression a
// client asks the server for (quiver query and quiver shell), to fs.
func registerResultCompression(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "compression", "", "ask the server to compress results: lz4, zstd, none or auto")
}

// checkResultCompression checks the value of --compression.
func checkResultCompression(s string) error {
	switch s {
	case "", "none", "lz4", "zstd", "auto":
		return nil
	}
	return usagef("unknown --compression %q: use lz4, zstd, none or auto", s)
}

// serverError explains a failed call: the server's own message, without
// gRPC's framing, and what to do about it. what names the action ("load
// into t").
func (f *clientFlags) serverError(what string, err error) error {
	return f.statementError(what, "", err)
}

// statementError is serverError for a call that ran sql, whose kind
// (COPY … TO, say) makes some hints fit better than others.
func (f *clientFlags) statementError(what, sql string, err error) error {
	// The innermost status carries the server's message alone.
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: %w", what, err)
	}
	st := se.GRPCStatus()
	hint := ""
	switch st.Code() {
	case codes.Unavailable:
		hint = fmt.Sprintf("is quiver serve running at %s? Point --server (or QUIVER_SERVER) at it", f.server)
	case codes.Unauthenticated:
		hint = "check --user and --password (or QUIVER_USER and QUIVER_PASSWORD)"
	case codes.PermissionDenied:
		hint = permissionHint(st.Message(), sql)
	case codes.DeadlineExceeded, codes.Canceled:
		hint = "it was interrupted; run it again"
	case codes.ResourceExhausted:
		hint = "the server ran out of memory or a limit; try smaller batches"
	}
	if hint == "" {
		return fmt.Errorf("%s: %s", what, st.Message())
	}
	sep := "; "
	if strings.Contains(st.Message(), "\n") {
		sep = "\n" // after DuckDB's LINE 1: and its caret, not on their line
	}
	return fmt.Errorf("%s: %s%s%s", what, st.Message(), sep, hint)
}

// roleNeeded finds the role a refusal names: quiver's role check says
// "(they need the admin role)", an export's "needs the readwrite role".
var roleNeeded = regexp.MustCompile(`\bneeds? the (admin|readwrite) role\b`)

// permissionHint is what to do about a refusal, given the server's
// message: another role only where one would help. DuckDB's own
// refusals to reach files (its external access is off) hold for every
// user, so they get a way around instead: an export root, or files moved
// by the client. Other refusals (a lake table is read-only, an export
// target outside the root) say what to do themselves.
func permissionHint(msg, sql string) string {
	if m := roleNeeded.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("log in as a user with the %s role (--user, or QUIVER_USER)", m[1])
	}
	if !strings.Contains(msg, "disabled by configuration") && !strings.Contains(msg, "disabled through configuration") &&
		!strings.Contains(msg, "external access") && !strings.Contains(msg, "enable_external_access") {
		return ""
	}
	const none = "the server lets no user, whatever the role, reach files outside its own directories"
	switch copyDirection(sql) {
	case "TO":
		return none + "; write the result under the server's --export-root (quiver serve --export-root DIR, then COPY … TO 'DIR/file'), or to this machine with quiver query -o FILE"
	case "FROM":
		return none + "; load files from this machine with quiver load FILE --table T"
	}
	return none + "; load files from this machine with quiver load FILE --table T, and save results to it with quiver query -o FILE"
}

// copyDirection is "TO" or "FROM" for a COPY statement, judged from its
// words (for a hint, not for a check), and "" for anything else.
func copyDirection(sql string) string {
	words := strings.Fields(strings.ToUpper(sql))
	switch {
	case len(words) < 2 || words[0] != "COPY":
		return ""
	case strings.HasPrefix(words[1], "("):
		return "TO" // COPY (query) TO …: a query is only copied out
	}
	for _, w := range words[1:] {
		if w == "TO" || w == "FROM" {
			return w
		}
	}
	return ""
}
