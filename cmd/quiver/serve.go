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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
	"io"
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
	cfg       server.Config
	users     userList
	logLevel  string
	logFormat string
	drain     time.Duration
	lake      lakeFlags
	// lakeCache, lakeCacheMB and lakePartMB configure serving the lake.
	lakeCache   string
	lakeCacheMB int64
	lakePartMB  float64
	peers       string
	memory      string
	admission   bool
	ingest      string
	conf        configFlags
	// paramBytes, sessionParamBytes and userParamBytes are the
	// --max-*param-bytes sizes, read by admit.ParseBytes.
	paramBytes, sessionParamBytes, userParamBytes string
	// adminReserved is --admin-reserved-connections; 0 means none.
	adminReserved int
	// mysqlTLS is --mysql-require-tls, whose default follows --tls-cert.
	mysqlTLS optionalBool
}

// optionalBool is a boolean flag that knows whether it was given, for a
// default that depends on other flags.
type optionalBool struct{ set, value bool }

func (b *optionalBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, not %q", s)
	}
	b.set, b.value = true, v
	return nil
}

// IsBoolFlag lets the flag stand alone: --mysql-require-tls means true.
func (b *optionalBool) IsBoolFlag() bool { return true }

// newServeFlags declares serve's flags.
func newServeFlags() (*flag.FlagSet, *serveFlags) {
	fs := newFlagSet("serve")
	f := &serveFlags{}
	cfg, users := &f.cfg, &f.users
	fs.StringVar(&cfg.DB, "db", "./data/quiver.duckdb", "database file, or :memory:")
	fs.StringVar(&cfg.FlightAddr, "flight", "127.0.0.1:31337", "Flight SQL listen address (port 0 picks one)")
	fs.StringVar(&cfg.MySQLAddr, "mysql", "127.0.0.1:9030", "MySQL-protocol listen address; empty disables it")
	fs.StringVar(&cfg.HTTPAddr, "http", "127.0.0.1:9090", "HTTP listen address for the web console, /metrics and /healthz (HTTPS with --tls-cert); empty disables it. With users, /metrics there asks for a login of any role: Basic credentials, a bearer token or the console's cookie")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "also serve /metrics on this address without login, for scrapers such as Prometheus: give it an interface only they reach (HTTPS with --tls-cert; loopback only without users)")
	users.register(fs)
	fs.StringVar(&cfg.Security.UsersFile, "users-file", "", "users file (Argon2id hashes, mode 0600) that quiver user manages; read again on SIGHUP. Missing or empty: created with an admin user named admin, whose password comes from QUIVER_PASSWORD or a prompt")
	fs.StringVar(&cfg.Security.TLSCert, "tls-cert", "", "TLS certificate file (PEM) for every port: Flight, MySQL and HTTP (then HTTPS)")
	fs.StringVar(&cfg.Security.TLSKey, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&cfg.Security.TLSClientCA, "tls-client-ca", "", "require client certificates signed by this CA (mTLS) on the Flight port; the MySQL and HTTP ports check one only when a client gives it")
	fs.Var(&f.mysqlTLS, "mysql-require-tls", "refuse MySQL logins that do not switch to TLS (error 3159), as MySQL's require_secure_transport (default: true with --tls-cert; --mysql-require-tls=false allows plaintext)")
	fs.StringVar(&cfg.Security.TokenKey, "token-key", "", "hex bearer-token signing key (default: a key file next to the database)")
	fs.StringVar(&cfg.Security.TokenKeyFile, "token-key-file", "", "file holding the hex bearer-token signing key, created when missing; replicas given the same file accept each other's tokens and refuse each other's logged-out ones (kept in FILE.revoked)")
	fs.DurationVar(&cfg.Security.TokenTTL, "token-ttl", 24*time.Hour, "bearer token lifetime")
	fs.IntVar(&cfg.Threads, "threads", 0, "DuckDB worker threads (0: all cores)")
	fs.StringVar(&cfg.MemoryLimit, "memory-limit", "", "DuckDB's memory limit, e.g. 4GB (default: its share of --memory)")
	fs.StringVar(&f.memory, "memory", "", "memory budget, e.g. 8GB: 40% for DuckDB, 50% for quiver's own buffers (the Go runtime's soft limit), and how many results may be open at once (default: half the machine's memory)")
	fs.BoolVar(&f.admission, "admission", true, "admission control: bound the statements running at once and queue the rest (false: every statement runs at once)")
	fs.IntVar(&cfg.Limits.MaxRunning, "max-running", 0, "statements running at once, half of them kept for small ones (0: twice the CPUs, at least 4)")
	fs.DurationVar(&cfg.Limits.QueueTimeout, "queue-timeout", 30*time.Second, "how long a statement waits for its turn before it is refused (RESOURCE_EXHAUSTED; MySQL error 1040)")
	fs.DurationVar(&cfg.Limits.SmallHold, "small-hold", 250*time.Millisecond, "the most run time a statement keeps a small-lane slot; past it, it is moved to the bulk lane so that small statements keep their slots (it runs on; 0 or negative: never)")
	fs.DurationVar(&cfg.Limits.BulkYield, "bulk-yield", 0, "experimental: how long a bulk result waits, before each batch, for the small queries in flight to finish, so they get the cores, e.g. 50ms (0: never; see the README on what it does at 300 clients)")
	fs.DurationVar(&cfg.Limits.QueryTimeout, "query-timeout", 0, "cancel a statement that runs longer, its wait included (0: never); a session may lower it, never raise it, with the Flight session option query_timeout or MySQL's max_execution_time")
	fs.IntVar(&cfg.Limits.Shape.Depth, "max-statement-depth", engine.MaxStatementDepth, "refuse a statement nested deeper, before DuckDB parses it: each bracket, CASE and operator of a chain (a + b + …) is a level; DuckDB's parse and binding of deep statements cannot be interrupted")
	fs.IntVar(&cfg.Limits.Shape.Subqueries, "max-subquery-depth", engine.MaxSubqueryDepth, "refuse a statement whose subqueries nest deeper in its expressions (SELECT (SELECT …)), before DuckDB binds it: its binding takes time exponential in them")
	fs.IntVar(&cfg.Limits.Shape.Terms, "max-statement-terms", engine.MaxStatementTerms, "refuse a statement with more AND, OR, UNION, EXCEPT, INTERSECT and WITH terms, before DuckDB parses it in time quadratic in them")
	fs.IntVar(&cfg.Limits.MaxConnections, "max-connections", server.DefaultMaxConnections, "logged-in client connections per endpoint (Flight, MySQL); past it a login is refused: RESOURCE_EXHAUSTED over Flight, error 1040 over MySQL")
	fs.IntVar(&f.adminReserved, "admin-reserved-connections", server.DefaultAdminReserved, "of --max-connections, how many only admins may take, so that an admin can always log in (at most half of --max-connections when left at its default)")
	fs.IntVar(&cfg.Limits.MaxUserConnections, "max-user-connections", 0, "logged-in connections one user may hold per endpoint, admins excepted; past it MySQL logins get error 1203 (0: half of what --admin-reserved-connections leaves of --max-connections)")
	fs.IntVar(&cfg.Limits.MaxHandshakes, "max-handshakes", 0, "connections per endpoint still logging in (TLS, greeting, password), which do not count against --max-connections; when one more comes, the oldest is closed (0: as many as --max-connections)")
	fs.DurationVar(&cfg.Limits.HandshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout, "close a connection that has not logged in this long after it came (a Flight connection logs in with its first authenticated call)")
	fs.DurationVar(&cfg.Limits.IdleTimeout, "idle-timeout", 0, "close connections that make no call for this long, and Flight prepared statements unused that long (0: 30m for Flight, 8h for MySQL as its wait_timeout)")
	fs.DurationVar(&cfg.Limits.TxnIdleTimeout, "txn-idle-timeout", flightsql.DefaultTxnIdleTimeout, "roll back a Flight SQL transaction that makes no call for this long, and refuse its handle after (a transaction whose client connection closes is rolled back at once)")
	h := &cfg.Limits.Holds
	fs.IntVar(&h.Prepared, "max-prepared", admit.DefaultPrepared, "prepared statements one session (a Flight or MySQL connection) may hold; past it, RESOURCE_EXHAUSTED (MySQL error 1461)")
	fs.IntVar(&h.UserPrepared, "max-user-prepared", admit.DefaultUserPrepared, "prepared statements one user may hold in all their sessions")
	fs.IntVar(&h.Txns, "max-txns", admit.DefaultTxns, "Flight transactions one session may hold open, each with a DuckDB connection")
	fs.IntVar(&h.UserTxns, "max-user-txns", admit.DefaultUserTxns, "Flight transactions one user may hold open in all their sessions")
	fs.IntVar(&h.Held, "max-held", admit.DefaultHeld, "results of Flight scripts one session may hold unfetched, each with a DuckDB connection")
	fs.IntVar(&h.UserHeld, "max-user-held", admit.DefaultUserHeld, "results of Flight scripts one user may hold unfetched in all their sessions")
	fs.StringVar(&f.paramBytes, "max-param-bytes", "64MiB", "parameters that may be bound to one prepared statement (Flight DoPut, MySQL execute and long data)")
	fs.StringVar(&f.sessionParamBytes, "max-session-param-bytes", "256MiB", "parameters one session may hold bound to its prepared statements")
	fs.StringVar(&f.userParamBytes, "max-user-param-bytes", "512MiB", "parameters one user may hold bound in all their sessions; everything held, all users together, is bounded by a sixth of --memory's share for quiver")
	fs.IntVar(&cfg.BatchRows, "batch-rows", 0, "rows per result batch (0: 65536)")
	fs.BoolVar(&cfg.ExternalAccess, "allow-external-access", false, "let SQL read and write the server's file system (off: only the database directory)")
	fs.StringVar(&cfg.ExportRoot, "export-root", "", "directory, created when missing, or s3://bucket/prefix (reached with the --s3-* flags and AWS variables), under which readwrite and admin users may write files with COPY (query) TO '/abs/path/under/it' or 's3://bucket/prefix/path' (FORMAT parquet|csv|json); every user may read a local root (default: none, no exports)")
	fs.StringVar(&cfg.Backup.To, "backup-to", "", "take backups of the database on a schedule to file:///dir or s3://bucket/prefix (reached with the --s3-* flags and AWS variables); see quiver backup")
	fs.DurationVar(&cfg.Backup.Every, "backup-every", time.Hour, "time between scheduled backups (with --backup-to)")
	fs.IntVar(&cfg.Backup.Keep, "backup-keep", 0, "complete backups to keep at --backup-to, removing older ones after each backup (0: keep all)")
	fs.BoolVar(&cfg.Demo, "demo", false, "load the demo dataset (customers, products, 600k orders) into an empty database")
	fs.StringVar(&cfg.Compression, "compression", "none", "result compression for clients that do not ask: none, lz4, zstd or auto (JDBC and other gRPC-Java or gRPC-.NET clients, which cannot decompress, get none)")
	fs.DurationVar(&f.drain, "drain", 30*time.Second, "on shutdown, how long running streams may finish")
	f.lake.registerCatalog(fs)
	fs.StringVar(&f.lakeCache, "lake-cache", "", "directory for local copies of an s3:// lake's data files (default: lake-cache next to the database)")
	fs.Int64Var(&f.lakeCacheMB, "lake-cache-mb", 8192, "cap on the lake cache, in MiB")
	fs.Float64Var(&f.lakePartMB, "lake-part-mb", 64, "data per endpoint when a lake scan is split over several endpoints, in MiB")
	fs.StringVar(&cfg.Advertise, "advertise", "", "HOST:PORT clients reach this server's Flight port at, listed on result endpoints (default: the Flight address when --peers is given)")
	fs.StringVar(&f.peers, "peers", "", "comma-separated HOST:PORT Flight addresses of other replicas serving the same lake, or @FILE with one per line; listed on result endpoints so clients spread fetches and fail over")
	fs.StringVar(&f.ingest, "ingest", "", "TOML file of Kafka pipelines to run into the served database, one [[pipeline]] table each, whose keys are quiver ingest's flags (see the README); their rows are visible to every endpoint as each batch commits")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", logFormatUsage)
	f.conf.register(fs)
	return fs, f
}

func (c *serveCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	fs, f := newServeFlags()
	pos, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	filePipelines, err := f.conf.apply(fs, true)
	if err != nil {
		return err
	}
	if f.conf.print {
		return printConfig(std.Out, fs)
	}
	running := effective(fs)
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
	if cfg.Logger, err = newLogger(std.Err, logLevel, f.logFormat); err != nil {
		return err
	}
	logStart(cfg.Logger, "serve")
	cfg.Announce = announcer(std.Err, f.logFormat, cfg.Logger)
	if len(cfg.Security.Users) > 0 {
		cfg.Logger.Warn("--password puts passwords in the process list, where every local user can read them; keep users in a file instead: quiver user add NAME --users-file FILE, then quiver serve --users-file FILE")
	}
	if cfg.Security.UsersFile != "" {
		if err := firstAdmin(std, cfg.Security.UsersFile); err != nil {
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
	if err := checkBackupSchedule(cfg.Backup); err != nil {
		return err
	}
	if cfg.Peers, err = parsePeers(f.peers); err != nil {
		return err
	}
	if f.memory != "" {
		if cfg.Limits.Memory, err = admit.ParseBytes(f.memory); err != nil {
			return usagef("--memory: %v", err)
		}
	}
	for _, b := range []struct {
		flag, v string
		dst     *int64
	}{{"--max-param-bytes", f.paramBytes, &cfg.Limits.Holds.ParamBytes},
		{"--max-session-param-bytes", f.sessionParamBytes, &cfg.Limits.Holds.SessionParamBytes},
		{"--max-user-param-bytes", f.userParamBytes, &cfg.Limits.Holds.UserParamBytes}} {
		if *b.dst, err = admit.ParseBytes(b.v); err != nil {
			return usagef("%s: %v", b.flag, err)
		}
	}
	if h := cfg.Limits.Holds; h.Prepared < 1 || h.UserPrepared < 1 || h.Txns < 1 || h.UserTxns < 1 || h.Held < 1 || h.UserHeld < 1 {
		return usagef("--max-prepared, --max-user-prepared, --max-txns, --max-user-txns, --max-held and --max-user-held must be positive")
	}
	if cfg.Limits.MaxRunning < 0 || cfg.Limits.MaxConnections < 1 || cfg.Limits.QueueTimeout <= 0 || cfg.Limits.QueryTimeout < 0 || cfg.Limits.IdleTimeout < 0 || cfg.Limits.BulkYield < 0 || cfg.Limits.TxnIdleTimeout <= 0 {
		return usagef("--max-running, --max-connections, --queue-timeout and --txn-idle-timeout must be positive, --query-timeout, --idle-timeout and --bulk-yield not negative")
	}
	if sh := cfg.Limits.Shape; sh.Depth < 1 || sh.Subqueries < 1 || sh.Terms < 1 {
		return usagef("--max-statement-depth, --max-subquery-depth and --max-statement-terms must be positive")
	}
	if err := f.connLimits(fs); err != nil {
		return err
	}
	cfg.Limits.Off = !f.admission
	if cfg.Limits.SmallHold <= 0 {
		cfg.Limits.SmallHold = -1 // admit: never demote
	}
	if f.mysqlTLS.set {
		if f.mysqlTLS.value && cfg.Security.TLSCert == "" {
			return usagef("--mysql-require-tls needs --tls-cert and --tls-key")
		}
		cfg.Security.MySQLAllowPlaintext = !f.mysqlTLS.value
	}
	if f.ingest != "" {
		fps, err := readIngestFile(f.ingest)
		if err != nil {
			return err
		}
		filePipelines = append(filePipelines, fps...)
	}
	if len(filePipelines) > 0 {
		var closeLakes func()
		if cfg.Ingest, closeLakes, err = startPipelines(ctx, filePipelines, cfg.Logger); err != nil {
			return err
		}
		defer closeLakes()
	}

	srv, err := server.Start(ctx, cfg)
	if errors.Is(err, ingest.ErrConfig) {
		return usagef("--ingest: %s", strings.ReplaceAll(err.Error(), ingest.ErrConfig.Error()+": ", ""))
	}
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// Quiver's share of the budget is the Go runtime's soft limit, unless
	// GOMEMLIMIT sets one.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(srv.Budget.Go)
	}
	// SIGHUP reads the users file again, and the configuration file, to
	// say which of its changed keys need a restart. Without either,
	// SIGHUP keeps its default: it ends the process.
	hup := make(chan os.Signal, 1)
	if cfg.Security.UsersFile != "" || f.conf.file != "" {
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	if f.logFormat == "json" {
		// Every line of a JSON log is an object: the hints become one.
		cfg.Logger.Info("quiver is ready", "database", cfg.DB, "flight", srv.FlightAddr, "mysql", srv.MySQLAddr,
			"http", srv.HTTPAddr, "metrics", srv.MetricsAddr)
	} else {
		printHints(std.Err, srv, cfg)
	}
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
			f.conf.logConfigChanges(cfg.Logger, running, func() *flag.FlagSet { fs, _ := newServeFlags(); return fs }, args)
			if cfg.Security.UsersFile == "" {
				break
			}
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

// connLimits checks the connection flags and puts the admins' reserve in
// the configuration.
func (f *serveFlags) connLimits(fs *flag.FlagSet) error {
	l := &f.cfg.Limits
	if f.adminReserved < 0 || l.MaxUserConnections < 0 || l.MaxHandshakes < 0 || l.HandshakeTimeout <= 0 {
		return usagef("--admin-reserved-connections, --max-user-connections and --max-handshakes must not be negative, --handshake-timeout positive")
	}
	explicit := false
	fs.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "admin-reserved-connections" })
	switch {
	case !explicit:
		// The default: server.Limits makes it fit --max-connections.
	case f.adminReserved >= l.MaxConnections:
		return usagef("--admin-reserved-connections %d must be less than --max-connections %d", f.adminReserved, l.MaxConnections)
	case f.adminReserved == 0:
		l.AdminReservedConnections = -1 // none
	default:
		l.AdminReservedConnections = f.adminReserved
	}
	return nil
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
func printHints(w io.Writer, srv *server.Server, cfg server.Config) {
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
	fmt.Fprintf(&b, "  SQL shell  : %s shell --server %s\n", cli, srv.FlightAddr)
	fmt.Fprintf(&b, "  Python ADBC: adbc_driver_flightsql.dbapi.connect(\"%s://%s\")\n", scheme, srv.FlightAddr)
	fmt.Fprintf(&b, "  JDBC       : jdbc:arrow-flight-sql://%s:%s/?%s\n", host, port, jdbcTLS)
	if srv.MySQLAddr != "" {
		// The mysql command is suggested only where it is installed: a
		// fresh machine has none, and the shell above needs nothing.
		if _, err := exec.LookPath("mysql"); err == nil {
			mh, mp, _ := strings.Cut(srv.MySQLAddr, ":")
			fmt.Fprintf(&b, "  MySQL      : mysql -h %s -P %s", mh, mp)
			if user != "" {
				fmt.Fprintf(&b, " -u %s -p", user)
			}
			if cfg.Security.TLSCert != "" && !cfg.Security.MySQLAllowPlaintext {
				b.WriteString(" --ssl")
			}
			b.WriteString("\n")
		} else {
			fmt.Fprintf(&b, "  MySQL      : %s, for MySQL clients and tools (no mysql command is installed here)\n", srv.MySQLAddr)
		}
	}
	web := "http"
	if cfg.Security.TLSCert != "" {
		web = "https"
	}
	if srv.HTTPAddr != "" {
		fmt.Fprintf(&b, "  console    : %s://%s/\n", web, srv.HTTPAddr)
	}
	switch {
	case srv.MetricsAddr != "":
		fmt.Fprintf(&b, "  metrics    : %s://%s/metrics\n", web, srv.MetricsAddr)
	case srv.HTTPAddr != "" && user != "":
		fmt.Fprintf(&b, "  metrics    : %s://%s/metrics (log in: curl -u %s)\n", web, srv.HTTPAddr, user)
	case srv.HTTPAddr != "":
		fmt.Fprintf(&b, "  metrics    : %s://%s/metrics\n", web, srv.HTTPAddr)
	}
	if user == "" {
		fmt.Fprintf(&b, "  auth       : off (loopback only); add users with %s user add NAME --users-file FILE and serve with --users-file FILE to require it\n", cli)
	}
	if cfg.Demo {
		b.WriteString("  demo data  : customers, products, orders; e.g. SELECT status, count(*), sum(quantity) FROM orders GROUP BY 1\n")
	}
	fmt.Fprint(w, b.String())
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
