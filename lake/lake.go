// Package lake writes Kafka data into Apache Iceberg tables, exactly once.
//
// It is a thin layer over the iceberg-go library: every table, snapshot,
// manifest and metadata file is written by iceberg-go, never by hand. What
// this package adds is the policy a Kafka ingest needs:
//
//   - [Open] connects to a catalog (SQLite, PostgreSQL or MySQL through
//     iceberg-go's SQL catalog, or a REST catalog) over a warehouse on local
//     disk or S3.
//   - [Lake.Table] creates a table on first use, or loads it and adds the
//     columns that new data brings; changes that would break readers are
//     refused.
//   - [Table.Commit] appends data and records Kafka offsets in the same
//     snapshot, fenced against the offsets already committed, so a batch of
//     records is in the table once or not at all, even with zombie writers
//     and retries.
//   - [Table.Orphans] finds data files that no snapshot references, such as
//     those of a commit that crashed, for a later clean-up.
//
// # Catalog compatibility
//
// The SQLite catalog is iceberg-go's SQL catalog under the catalog name
// "quiver" by default, so other Iceberg implementations open the same file.
// For a warehouse file:///data/lake the default catalog is
// sqlite:////data/lake/catalog.db (the URI form SQLAlchemy uses: three
// slashes, then the path, which here starts with its own slash), and
// pyiceberg reads it with
//
//	SqlCatalog("quiver", uri="sqlite:////data/lake/catalog.db", warehouse="file:///data/lake")
package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun/driver/pgdriver"

	// A pure-Go SQLite driver, registered as "sqlite". A cgo SQLite would
	// link a second copy of the SQLite C symbols next to DuckDB's.
	_ "modernc.org/sqlite"
)

// DefaultCatalogName is the catalog name used when [Config.CatalogName] is
// empty. SQL catalogs store it in every row, so every reader of the catalog
// database must use the same name.
const DefaultCatalogName = "quiver"

// Config says where a lake lives and how to reach it.
type Config struct {
	// Warehouse is the root under which new tables are created:
	// file:///absolute/dir or s3://bucket/prefix.
	Warehouse string

	// CatalogURI names the catalog that maps table names to their current
	// metadata:
	//
	//	sqlite:///relative/path.db or sqlite:////absolute/path.db
	//	postgresql://user:password@host:5432/db?sslmode=disable
	//	mysql://user:password@host:3306/db
	//	http://host:8181 or https://host/prefix   (REST catalog)
	//
	// Empty means, for a file:// warehouse, a SQLite database catalog.db in
	// the warehouse directory. An S3 warehouse needs an explicit catalog.
	CatalogURI string

	// CatalogName is the name of the catalog; empty means "quiver".
	CatalogName string

	// RESTCredential is an OAuth2 client credential, "id:secret", for a
	// REST catalog. Optional.
	RESTCredential string
	// RESTToken is a bearer token for a REST catalog. Optional.
	RESTToken string

	// S3 configures access to an S3 or S3-compatible object store. Empty
	// fields fall back to the standard AWS environment variables.
	S3 S3Config

	// Properties are extra catalog properties passed to iceberg-go as they
	// are, for settings this Config does not name. They win over the
	// properties derived from the other fields.
	Properties map[string]string

	// ConnectTimeout bounds the checks Open makes that the catalog and the
	// warehouse are reachable. Zero means 15 seconds.
	ConnectTimeout time.Duration
}

// S3Config is the object-store part of a [Config].
type S3Config struct {
	// Endpoint is the URL of an S3-compatible service such as MinIO; empty
	// means AWS (or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL if set).
	Endpoint string
	// Region; empty means AWS_REGION or AWS_DEFAULT_REGION.
	Region string
	// PathStyle asks for path-style addressing (http://host/bucket/key),
	// which most S3-compatible services need. When false, iceberg-go still
	// uses path style for a custom endpoint and virtual-host style for AWS.
	PathStyle bool
	// AccessKeyID; empty means AWS_ACCESS_KEY_ID.
	AccessKeyID string
	// SecretAccessKey; empty means AWS_SECRET_ACCESS_KEY.
	SecretAccessKey string
	// SessionToken; empty means AWS_SESSION_TOKEN.
	SessionToken string
}

// Lake is an open catalog over a warehouse. It is safe for concurrent use.
type Lake struct {
	// cat is the catalog the lake works through: base, or for an S3
	// warehouse base wrapped so that all its S3 traffic shares one
	// connection pool (see sharedIO).
	cat       catalog.Catalog
	base      catalog.Catalog
	aws       *aws.Config // shared by all S3 file IO; nil for a local warehouse
	name      string
	warehouse string
	props     iceberg.Properties
}

// Open connects to the catalog of cfg and checks that it answers. For a
// file:// warehouse it creates the directory if needed; for an S3 warehouse
// it checks that the bucket can be reached.
func Open(ctx context.Context, cfg Config) (*Lake, error) {
	name := cfg.CatalogName
	if name == "" {
		name = DefaultCatalogName
	}
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}

	wh, err := parseWarehouse(cfg.Warehouse)
	if err != nil {
		return nil, err
	}

	props := iceberg.Properties{"warehouse": wh.uri}
	for k, v := range s3Properties(cfg.S3) {
		props[k] = v
	}

	catURI := cfg.CatalogURI
	if catURI == "" {
		if wh.localDir == "" {
			return nil, fmt.Errorf("iceberg: a catalog URI is required for warehouse %s: set it to sqlite:///path.db, postgresql://…, mysql://… or http(s)://… (a REST catalog)", wh.uri)
		}
		catURI = "sqlite:///" + filepath.ToSlash(filepath.Join(wh.localDir, "catalog.db"))
	}
	for k, v := range cfg.Properties {
		props[k] = v
	}

	if wh.localDir != "" {
		if err := os.MkdirAll(wh.localDir, 0o755); err != nil {
			return nil, fmt.Errorf("iceberg: create warehouse directory: %w", err)
		}
	}

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// One AWS config, and with it one HTTP connection pool, for all the
	// S3 file IO of the lake; see sharedIO.
	var awsCfg *aws.Config
	if wh.localDir == "" {
		if awsCfg, err = newSharedAWSConfig(ctx, props); err != nil {
			return nil, fmt.Errorf("iceberg: S3 configuration for warehouse %s: %w", wh.uri, err)
		}
	}

	cat, err := openCatalog(withAWS(cctx, awsCfg), name, catURI, cfg, props)
	if err != nil {
		return nil, err
	}
	l := &Lake{cat: cat, base: cat, aws: awsCfg, name: name, warehouse: wh.uri, props: props}
	if awsCfg != nil {
		l.cat = &sharedIO{Catalog: cat, aws: awsCfg}
	}

	// A REST catalog owns its warehouse and may hand out credentials of
	// its own, so the bucket is checked only for the other catalogs.
	if wh.localDir == "" && !isREST(catURI) {
		if err := checkWarehouse(withAWS(cctx, awsCfg), wh, props); err != nil {
			_ = l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Close releases the catalog's connections and the idle S3 connections.
func (l *Lake) Close() error {
	defer closeIdle(l.aws)
	if c, ok := l.base.(catalog.Closer); ok {
		return c.Close()
	}
	return nil
}

// Catalog returns the underlying iceberg-go catalog, for operations this
// package does not wrap. The tables it loads are iceberg-go's own, whose
// S3 file IO opens a new connection pool for each operation unless the
// context carries an AWS config (iceberg-go's utils.WithAwsConfig).
func (l *Lake) Catalog() catalog.Catalog { return l.base }

// Warehouse returns the warehouse URI the lake was opened with.
func (l *Lake) Warehouse() string { return l.warehouse }

type warehouse struct {
	uri      string // normalised, without a trailing slash
	scheme   string
	bucket   string
	localDir string // for file:// only
}

func parseWarehouse(s string) (warehouse, error) {
	if s == "" {
		return warehouse{}, errors.New("iceberg: the warehouse is not set: use file:///absolute/dir or s3://bucket/prefix")
	}
	u, err := url.Parse(s)
	if err != nil {
		return warehouse{}, fmt.Errorf("iceberg: warehouse %q is not a URI: %w", s, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return warehouse{}, fmt.Errorf("iceberg: warehouse %q names host %q: use file:///absolute/dir (three slashes)", s, u.Host)
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return warehouse{}, fmt.Errorf("iceberg: warehouse %q needs an absolute path: use file:///absolute/dir", s)
		}
		dir := filepath.Clean(filepath.FromSlash(u.Path))
		return warehouse{uri: "file://" + filepath.ToSlash(dir), scheme: "file", localDir: dir}, nil
	case "s3", "s3a", "s3n":
		if u.Host == "" {
			return warehouse{}, fmt.Errorf("iceberg: warehouse %q has no bucket: use s3://bucket/prefix", s)
		}
		return warehouse{uri: strings.TrimRight(s, "/"), scheme: u.Scheme, bucket: u.Host}, nil
	case "":
		return warehouse{}, fmt.Errorf("iceberg: warehouse %q has no scheme: use file:///absolute/dir or s3://bucket/prefix", s)
	default:
		return warehouse{}, fmt.Errorf("iceberg: unsupported warehouse scheme %q in %q: use file:///absolute/dir or s3://bucket/prefix", u.Scheme, s)
	}
}

// s3Properties maps an S3Config, completed from the environment, to
// iceberg-go's file IO properties. Only set values are returned.
func s3Properties(c S3Config) map[string]string {
	first := func(vals ...string) string {
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return ""
	}
	p := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	set(iceio.S3EndpointURL, first(c.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL")))
	set(iceio.S3Region, first(c.Region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION")))
	set(iceio.S3AccessKeyID, first(c.AccessKeyID, os.Getenv("AWS_ACCESS_KEY_ID")))
	set(iceio.S3SecretAccessKey, first(c.SecretAccessKey, os.Getenv("AWS_SECRET_ACCESS_KEY")))
	set(iceio.S3SessionToken, first(c.SessionToken, os.Getenv("AWS_SESSION_TOKEN")))
	if c.PathStyle {
		p[iceio.S3ForceVirtualAddressing] = "false"
	}
	return p
}

func openCatalog(ctx context.Context, name, uri string, cfg Config, props iceberg.Properties) (catalog.Catalog, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("iceberg: catalog URI %q is not a URI: %w", redact(uri), err)
	}
	switch u.Scheme {
	case "sqlite":
		path, err := sqlitePath(uri)
		if err != nil {
			return nil, err
		}
		if dir := filepath.Dir(path); dir != "" {
			if _, err := os.Stat(dir); err != nil {
				return nil, fmt.Errorf("iceberg: directory of the SQLite catalog %s: %w", path, err)
			}
		}
		// WAL lets readers run beside a writer; the busy timeout makes
		// writers from other processes wait for the lock instead of
		// failing; immediate transactions take the write lock up front so
		// two writers never deadlock upgrading a read lock.
		dsn := path + "?_busy_timeout=10000&_txlock=immediate&_journal_mode=WAL"
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("iceberg: open SQLite catalog %s: %w", path, err)
		}
		return newSQLCatalog(ctx, name, db, sqlcat.SQLite, props, "SQLite catalog "+path)
	case "postgres", "postgresql":
		db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(uri)))
		return newSQLCatalog(ctx, name, db, sqlcat.Postgres, props, "PostgreSQL catalog "+redact(uri))
	case "mysql":
		dsn, err := mysqlDSN(u)
		if err != nil {
			return nil, err
		}
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, fmt.Errorf("iceberg: open MySQL catalog %s: %w", redact(uri), err)
		}
		return newSQLCatalog(ctx, name, db, sqlcat.MySQL, props, "MySQL catalog "+redact(uri))
	case "http", "https":
		opts := []rest.Option{
			rest.WithWarehouseLocation(props.Get("warehouse", "")),
			rest.WithAdditionalProps(props),
		}
		if cfg.RESTCredential != "" {
			opts = append(opts, rest.WithCredential(cfg.RESTCredential))
		}
		if cfg.RESTToken != "" {
			opts = append(opts, rest.WithOAuthToken(cfg.RESTToken))
		}
		cat, err := rest.NewCatalog(ctx, name, uri, opts...)
		if err != nil {
			return nil, fmt.Errorf("iceberg: cannot reach the REST catalog at %s (check the URI, that the server runs, and its credentials): %w", redact(uri), err)
		}
		return cat, nil
	case "":
		return nil, fmt.Errorf("iceberg: catalog URI %q has no scheme: use sqlite:///path.db, postgresql://…, mysql://… or http(s)://…", redact(uri))
	default:
		return nil, fmt.Errorf("iceberg: unsupported catalog scheme %q: use sqlite:///path.db, postgresql://…, mysql://… or http(s)://…", u.Scheme)
	}
}

// sqlitePath returns the file path of a sqlite:/// URI, read the way
// SQLAlchemy (and so pyiceberg) reads it: what follows the third slash is
// the path, relative unless it starts with a slash of its own.
func sqlitePath(uri string) (string, error) {
	const prefix = "sqlite:///"
	if !strings.HasPrefix(uri, prefix) {
		return "", fmt.Errorf("iceberg: SQLite catalog URI %q must look like sqlite:///relative.db or sqlite:////absolute/path.db", uri)
	}
	path := strings.TrimPrefix(uri, prefix)
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i] // options for other clients, such as SQLAlchemy's
	}
	if path == "" || path == ":memory:" {
		return "", fmt.Errorf("iceberg: SQLite catalog URI %q names no file; an in-memory catalog would lose every table on close", uri)
	}
	return filepath.FromSlash(path), nil
}

// mysqlDSN turns mysql://user:pass@host:port/db?params into the driver's
// user:pass@tcp(host:port)/db?params form.
func mysqlDSN(u *url.URL) (string, error) {
	c := mysql.NewConfig()
	if u.User != nil {
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1:3306"
	} else if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "3306")
	}
	c.Net, c.Addr = "tcp", host
	c.DBName = strings.TrimPrefix(u.Path, "/")
	if c.DBName == "" {
		return "", fmt.Errorf("iceberg: MySQL catalog URI %s names no database: use mysql://user:password@host:3306/db", redact(u.String()))
	}
	c.ParseTime = true
	for k, vs := range u.Query() {
		if len(vs) > 0 {
			if c.Params == nil {
				c.Params = map[string]string{}
			}
			c.Params[k] = vs[0]
		}
	}
	return c.FormatDSN(), nil
}

func newSQLCatalog(ctx context.Context, name string, db *sql.DB, dialect sqlcat.SupportedDialect, props iceberg.Properties, what string) (catalog.Catalog, error) {
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("iceberg: cannot reach the %s (check the URI, that the server runs, and its credentials): %w", what, err)
	}
	// iceberg-go creates its catalog tables with CREATE TABLE IF NOT EXISTS,
	// which PostgreSQL does not make safe for several processes starting at
	// once on an empty database: the losers fail with a duplicate type or
	// key or relation, and a second try finds the tables made.
	var cat *sqlcat.Catalog
	var err error
	for attempt := 0; ; attempt++ {
		cat, err = sqlcat.NewCatalog(name, db, dialect, props)
		if err == nil || attempt == 4 || !isSQLState(err, "23505", "42710", "42P07", "40001") {
			break
		}
		select {
		case <-time.After(time.Duration(50*(attempt+1)) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("iceberg: open the %s: %w", what, err)
	}
	return &ownedSQLCatalog{Catalog: cat, db: db}, nil
}

// isSQLState reports whether err is a PostgreSQL error with one of the
// given SQLSTATE codes.
func isSQLState(err error, codes ...string) bool {
	var pe pgdriver.Error
	if !errors.As(err, &pe) {
		return false
	}
	for _, c := range codes {
		if pe.Field('C') == c {
			return true
		}
	}
	return false
}

// ownedSQLCatalog closes the database handle that iceberg-go's NewCatalog
// leaves to its caller.
type ownedSQLCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

// Close releases the catalog and its database connections.
func (c *ownedSQLCatalog) Close() error {
	return errors.Join(c.Catalog.Close(), c.db.Close())
}

// checkWarehouse makes sure an object-store warehouse can be reached: a
// missing bucket or bad credentials are reported now, not at the first
// commit. It lists the top level of the bucket, stopping at the first entry.
func checkWarehouse(ctx context.Context, wh warehouse, props iceberg.Properties) error {
	fsys, err := iceio.LoadFS(ctx, props, wh.uri)
	if err != nil {
		return fmt.Errorf("iceberg: open warehouse %s: %w", wh.uri, err)
	}
	lister, ok := fsys.(iceio.ListableIO)
	if !ok {
		return nil
	}
	calls := 0
	err = lister.WalkDir(wh.scheme+"://"+wh.bucket, func(_ string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if calls++; calls > 1 {
			return fs.SkipAll
		}
		return nil
	})
	if err == nil {
		return nil
	}
	what := "check the endpoint, region and credentials"
	if errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "NoSuchBucket") {
		what = "the bucket does not exist"
	}
	return fmt.Errorf("iceberg: cannot reach bucket %q of warehouse %s (%s): %w", wh.bucket, wh.uri, what, err)
}

func isREST(uri string) bool {
	return strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://")
}

// redact hides the password of a URI for error messages.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
