package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

func init() {
	register("serve", "run the server: Flight SQL, MySQL protocol and HTTP over one DuckDB database", func() command { return &serveCmd{} })
}

type serveCmd struct {
	// started, when set, is called once the server listens (for tests,
	// which start it on port 0 and need the addresses).
	started func(*server.Server)
}

// userList collects --user, --password and --role in command-line order:
// each --password and --role belongs to the --user before it.
type userList struct {
	users []userFlags
}

type userFlags struct {
	name, password, role string
	hasPassword, hasRole bool
}

// register adds --user, --password and --role to fs.
func (u *userList) register(fs *flag.FlagSet) {
	fs.Func("user", "create a user; repeat for more. The --password and --role that follow a --user, before the next --user, are that user's (the password shows in the process list: prefer --users-file)", u.add)
	fs.Func("password", "password of the preceding --user (required for each; visible to every local user in the process list)", u.setPassword)
	fs.Func("role", "role of the preceding --user: admin (the default when a user has no --role), readwrite or readonly", u.setRole)
}

// add starts a new user.
func (u *userList) add(name string) error {
	if name == "" {
		return errors.New("empty user name")
	}
	u.users = append(u.users, userFlags{name: name})
	return nil
}

// setPassword gives the preceding --user its password.
func (u *userList) setPassword(pw string) error {
	last, err := u.last("--password")
	if err != nil {
		return err
	}
	if last.hasPassword {
		return fmt.Errorf("user %s has two --password flags; give each --user its own", last.name)
	}
	last.password, last.hasPassword = pw, true
	return nil
}

// setRole gives the preceding --user its role.
func (u *userList) setRole(role string) error {
	last, err := u.last("--role")
	if err != nil {
		return err
	}
	if last.hasRole {
		return fmt.Errorf("user %s has two --role flags; give each --user its own", last.name)
	}
	if _, err := auth.ParseRole(role); err != nil {
		return err
	}
	last.role, last.hasRole = role, true
	return nil
}

func (u *userList) last(flag string) (*userFlags, error) {
	if len(u.users) == 0 {
		return nil, fmt.Errorf("%s must follow the --user it belongs to", flag)
	}
	return &u.users[len(u.users)-1], nil
}

// serveFlags are serve's parsed flags.
type serveFlags struct {
	cfg      server.Config
	users    userList
	logLevel string
	drain    time.Duration
	lake     lakeFlags
	// lakeCache, lakeCacheMB and lakePartMB configure serving the lake.
	lakeCache   string
	lakeCacheMB int64
	lakePartMB  float64
	peers       string
	memory      string
	admission   bool
}

// newServeFlags declares serve's flags.
func newServeFlags() (*flag.FlagSet, *serveFlags) {
	fs := newFlagSet("serve")
	f := &serveFlags{}
	cfg, users := &f.cfg, &f.users
	fs.StringVar(&cfg.DB, "db", "./data/quiver.duckdb", "database file, or :memory:")
	fs.StringVar(&cfg.FlightAddr, "flight", "127.0.0.1:31337", "Flight SQL listen address (port 0 picks one)")
	fs.StringVar(&cfg.MySQLAddr, "mysql", "127.0.0.1:9030", "MySQL-protocol listen address; empty disables it")
	fs.StringVar(&cfg.HTTPAddr, "http", "127.0.0.1:9090", "HTTP listen address for the web console, /metrics and /healthz; empty disables it")
	users.register(fs)
	fs.StringVar(&cfg.Security.UsersFile, "users-file", "", "users file (Argon2id hashes, mode 0600) that quiver user manages; read again on SIGHUP. Missing or empty: created with an admin user named admin, whose password comes from QUIVER_PASSWORD or a prompt")
	fs.StringVar(&cfg.Security.TLSCert, "tls-cert", "", "TLS certificate file (PEM) for the Flight port")
	fs.StringVar(&cfg.Security.TLSKey, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&cfg.Security.TLSClientCA, "tls-client-ca", "", "require client certificates signed by this CA (mTLS)")
	fs.StringVar(&cfg.Security.TokenKey, "token-key", "", "hex bearer-token signing key (default: a key file next to the database)")
	fs.StringVar(&cfg.Security.TokenKeyFile, "token-key-file", "", "file holding the hex bearer-token signing key, created when missing; replicas given the same key accept each other's tokens")
	fs.DurationVar(&cfg.Security.TokenTTL, "token-ttl", 24*time.Hour, "bearer token lifetime")
	fs.IntVar(&cfg.Threads, "threads", 0, "DuckDB worker threads (0: all cores)")
	fs.StringVar(&cfg.MemoryLimit, "memory-limit", "", "DuckDB's memory limit, e.g. 4GB (default: its share of --memory)")
	fs.StringVar(&f.memory, "memory", "", "memory budget, e.g. 8GB: 40% for DuckDB, 50% for quiver's own buffers (the Go runtime's soft limit), and how many results may be open at once (default: half the machine's memory)")
	fs.BoolVar(&f.admission, "admission", true, "admission control: bound the statements running at once and queue the rest (false: every statement runs at once)")
	fs.IntVar(&cfg.Limits.MaxRunning, "max-running", 0, "statements running at once, half of them kept for small ones (0: twice the CPUs, at least 4)")
	fs.DurationVar(&cfg.Limits.QueueTimeout, "queue-timeout", 30*time.Second, "how long a statement waits for its turn before it is refused (RESOURCE_EXHAUSTED; MySQL error 1040)")
	fs.DurationVar(&cfg.Limits.BulkYield, "bulk-yield", 0, "experimental: how long a bulk result waits, before each batch, for the small queries in flight to finish, so they get the cores, e.g. 50ms (0: never; see the README on what it does at 300 clients)")
	fs.DurationVar(&cfg.Limits.QueryTimeout, "query-timeout", 0, "cancel a statement that runs longer, its wait included (0: never); sessions set their own with the Flight session option query_timeout or MySQL's max_execution_time")
	fs.IntVar(&cfg.Limits.MaxConnections, "max-connections", server.DefaultMaxConnections, "client connections per endpoint (Flight, MySQL); past it, Flight connections are closed and MySQL logins get error 1040")
	fs.DurationVar(&cfg.Limits.IdleTimeout, "idle-timeout", 0, "close connections that make no call for this long, and Flight prepared statements unused that long (0: 30m for Flight, 8h for MySQL as its wait_timeout)")
	fs.DurationVar(&cfg.Limits.TxnIdleTimeout, "txn-idle-timeout", flightsql.DefaultTxnIdleTimeout, "roll back a Flight SQL transaction that makes no call for this long, and refuse its handle after (a transaction whose client connection closes is rolled back at once)")
	fs.IntVar(&cfg.BatchRows, "batch-rows", 0, "rows per result batch (0: 65536)")
	fs.BoolVar(&cfg.ExternalAccess, "allow-external-access", false, "let SQL read and write the server's file system (off: only the database directory)")
	fs.StringVar(&cfg.ExportRoot, "export-root", "", "directory, created when missing, or s3://bucket/prefix (reached with the --s3-* flags and AWS variables), under which readwrite and admin users may write files with COPY (query) TO '/abs/path/under/it' or 's3://bucket/prefix/path' (FORMAT parquet|csv|json); every user may read a local root (default: none, no exports)")
	fs.BoolVar(&cfg.Demo, "demo", false, "load the demo dataset (customers, products, 600k orders) into an empty database")
	fs.StringVar(&cfg.Compression, "compression", "none", "result compression for clients that do not ask: none, lz4, zstd or auto (JDBC and other gRPC-Java or gRPC-.NET clients, which cannot decompress, get none)")
	fs.DurationVar(&f.drain, "drain", 30*time.Second, "on shutdown, how long running streams may finish")
	f.lake.registerCatalog(fs)
	fs.StringVar(&f.lakeCache, "lake-cache", "", "directory for local copies of an s3:// lake's data files (default: lake-cache next to the database)")
	fs.Int64Var(&f.lakeCacheMB, "lake-cache-mb", 8192, "cap on the lake cache, in MiB")
	fs.Float64Var(&f.lakePartMB, "lake-part-mb", 64, "data per endpoint when a lake scan is split over several endpoints, in MiB")
	fs.StringVar(&cfg.Advertise, "advertise", "", "HOST:PORT clients reach this server's Flight port at, listed on result endpoints (default: the Flight address when --peers is given)")
	fs.StringVar(&f.peers, "peers", "", "comma-separated HOST:PORT Flight addresses of other replicas serving the same lake, or @FILE with one per line; listed on result endpoints so clients spread fetches and fail over")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	return fs, f
}

func (c *serveCmd) Run(ctx context.Context, args []string) error {
	fs, f := newServeFlags()
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	cfg, logLevel, drain := f.cfg, f.logLevel, f.drain
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if cfg.DB == "" {
		return usagef("--db must be a file or :memory:")
	}
	if !flightsql.ValidCompression(cfg.Compression) {
		return usagef("unknown --compression %q: use none, lz4, zstd or auto", cfg.Compression)
	}
	if cfg.Security.Users, err = f.users.specs(); err != nil {
		return err
	}
	if len(cfg.Security.Users) > 0 && cfg.Security.UsersFile != "" {
		return usagef("give --users-file or --user, not both")
	}
	if cfg.Logger, err = newLogger(logLevel); err != nil {
		return err
	}
	if len(cfg.Security.Users) > 0 {
		cfg.Logger.Warn("--password puts passwords in the process list, where every local user can read them; keep users in a file instead: quiver user add NAME --users-file FILE, then quiver serve --users-file FILE")
	}
	if cfg.Security.UsersFile != "" {
		if err := firstAdmin(cfg.Security.UsersFile); err != nil {
			return err
		}
	}
	if f.lake.lake != "" {
		lcfg, err := f.lake.config()
		if err != nil {
			return err
		}
		if f.lakeCacheMB <= 0 || f.lakePartMB*(1<<20) < 1 {
			return usagef("--lake-cache-mb and --lake-part-mb must be positive")
		}
		cfg.Lake = &server.LakeConfig{Iceberg: lcfg, CacheDir: f.lakeCache, CacheBytes: f.lakeCacheMB << 20, PartBytes: int64(f.lakePartMB * (1 << 20))}
	} else if f.lake.catalog != "" {
		return usagef("--catalog needs --lake: the warehouse the catalog's tables live in")
	}
	// An s3:// export root reaches its store with the same settings.
	cfg.ExportS3 = lake.S3Config{Endpoint: f.lake.s3Endpoint, Region: f.lake.s3Region, PathStyle: f.lake.s3PathStyle}
	if cfg.Peers, err = parsePeers(f.peers); err != nil {
		return err
	}
	if f.memory != "" {
		if cfg.Limits.Memory, err = admit.ParseBytes(f.memory); err != nil {
			return usagef("--memory: %v", err)
		}
	}
	if cfg.Limits.MaxRunning < 0 || cfg.Limits.MaxConnections < 1 || cfg.Limits.QueueTimeout <= 0 || cfg.Limits.QueryTimeout < 0 || cfg.Limits.IdleTimeout < 0 || cfg.Limits.BulkYield < 0 || cfg.Limits.TxnIdleTimeout <= 0 {
		return usagef("--max-running, --max-connections, --queue-timeout and --txn-idle-timeout must be positive, --query-timeout, --idle-timeout and --bulk-yield not negative")
	}
	cfg.Limits.Off = !f.admission

	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// Quiver's share of the budget is the Go runtime's soft limit, unless
	// GOMEMLIMIT sets one.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(srv.Budget.Go)
	}
	// SIGHUP reads the users file again. Without one, SIGHUP keeps its
	// default: it ends the process.
	hup := make(chan os.Signal, 1)
	if cfg.Security.UsersFile != "" {
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	printHints(srv, cfg)
	if c.started != nil {
		c.started(srv)
	}
wait:
	for {
		select {
		case <-ctx.Done():
			cfg.Logger.Info("shutting down", "drain", drain)
			break wait
		case err = <-srv.Err():
			cfg.Logger.Error("listener failed", "err", err)
			break wait
		case <-hup:
			if err := srv.ReloadUsers(); err != nil {
				cfg.Logger.Error("SIGHUP: users not reloaded; the users loaded before stay", "err", err)
			} else {
				cfg.Logger.Info("SIGHUP: users reloaded", "file", cfg.Security.UsersFile)
			}
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	srv.Shutdown(sctx)
	return err
}

// specs checks that every user has a password and returns the users, each
// with its role: admin where no --role followed it.
func (u userList) specs() ([]server.UserSpec, error) {
	specs := make([]server.UserSpec, len(u.users))
	for i, f := range u.users {
		if !f.hasPassword {
			return nil, usagef("user %s has no --password: put one after its --user", f.name)
		}
		role := auth.RoleAdmin
		if f.hasRole {
			r, err := auth.ParseRole(f.role)
			if err != nil {
				return nil, usagef("%v", err)
			}
			role = r
		}
		specs[i] = server.UserSpec{Name: f.name, Password: f.password, Role: role}
	}
	return specs, nil
}

// printHints tells a person how to connect.
func printHints(srv *server.Server, cfg server.Config) {
	host, port, _ := strings.Cut(srv.FlightAddr, ":")
	if strings.Contains(srv.FlightAddr, "]") { // IPv6
		i := strings.LastIndex(srv.FlightAddr, ":")
		host, port = srv.FlightAddr[:i], srv.FlightAddr[i+1:]
	}
	scheme := "grpc"
	jdbcTLS := "useEncryption=false"
	if cfg.Security.TLSCert != "" {
		scheme, jdbcTLS = "grpc+tls", "useEncryption=true"
	}
	user := ""
	switch {
	case len(cfg.Security.Users) > 0:
		user = cfg.Security.Users[0].Name
	case cfg.Security.UsersFile != "":
		user = "USER"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nquiver is ready (database %s)\n", cfg.DB)
	cli := cliName()
	fmt.Fprintf(&b, "  quiver CLI : %s query --server %s \"SELECT 42\"\n", cli, srv.FlightAddr)
	fmt.Fprintf(&b, "  Python ADBC: adbc_driver_flightsql.dbapi.connect(\"%s://%s\")\n", scheme, srv.FlightAddr)
	fmt.Fprintf(&b, "  JDBC       : jdbc:arrow-flight-sql://%s:%s/?%s\n", host, port, jdbcTLS)
	if srv.MySQLAddr != "" {
		mh, mp, _ := strings.Cut(srv.MySQLAddr, ":")
		fmt.Fprintf(&b, "  MySQL      : mysql -h %s -P %s", mh, mp)
		if user != "" {
			fmt.Fprintf(&b, " -u %s -p", user)
		}
		b.WriteString("\n")
	}
	if srv.HTTPAddr != "" {
		fmt.Fprintf(&b, "  console    : http://%s/\n", srv.HTTPAddr)
		fmt.Fprintf(&b, "  metrics    : http://%s/metrics\n", srv.HTTPAddr)
	}
	if user == "" {
		fmt.Fprintf(&b, "  auth       : off (loopback only); add users with %s user add NAME --users-file FILE and serve with --users-file FILE to require it\n", cli)
	}
	if cfg.Demo {
		b.WriteString("  demo data  : customers, products, orders; e.g. SELECT status, count(*), sum(quantity) FROM orders GROUP BY 1\n")
	}
	fmt.Fprint(stderr, b.String())
}

// cliName is how to run this binary as the hints print it: quiver when
// the PATH finds this binary under that name (make install), else the
// path it was started by (./bin/quiver after make run).
func cliName() string {
	self, err := os.Executable()
	if err != nil {
		return "quiver"
	}
	if p, err := exec.LookPath("quiver"); err == nil {
		a, aerr := os.Stat(p)
		b, berr := os.Stat(self)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return "quiver"
		}
	}
	if strings.ContainsRune(os.Args[0], os.PathSeparator) {
		return os.Args[0]
	}
	return self
}

// parsePeers reads --peers: HOST:PORT,HOST:PORT or @FILE with one address
// per line (blank lines and # comments ignored).
func parsePeers(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	text := v
	if file, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("--peers %s: %v", v, err)
		}
		text = string(b)
	}
	var out []string
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' }) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, _, err := net.SplitHostPort(line); err != nil {
			return nil, usagef("--peers: %q is not HOST:PORT", line)
		}
		out = append(out, line)
	}
	return out, nil
}
