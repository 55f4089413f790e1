package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	// Importing the S3 file IO also registers it with iceberg-go's IO
	// registry for the s3, s3a and s3n schemes.
	s3io "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// One S3 connection pool per lake.
//
// iceberg-go builds its S3 file IO anew each time a table asks for its
// file system (io.LoadFS, called through the table's FS function on every
// read, write and commit, and by the SQL catalog for each metadata file).
// Each new IO gets a new AWS S3 client, and unless the AWS config already
// has an HTTP client, a new HTTP transport with a connection pool of its
// own. The connections of those pools stay open, idle, until the
// transport's idle timeout (90 s): about six per commit, hundreds in a
// process that commits every few seconds.
//
// The S3 IO of iceberg-go v0.7.0 takes its base AWS config from the
// context when one is there (utils.WithAwsConfig; explicit s3.* region
// and key properties still override it), and copies it shallowly, so the
// HTTP client of that config is shared by every IO built from it. Open
// therefore builds one AWS config with one HTTP client, and sharedIO puts
// it into the context of every catalog call and of every call to a
// table's FS function, by wrapping the catalog and the tables it returns.
//
// With a config in the context, iceberg-go no longer builds one from the
// properties of each table's IO: their endpoint, path style, compat mode,
// region and keys still apply, but a table-level s3.proxy-uri or
// s3.connect-timeout (as a REST catalog may hand out) does not; the
// lake's own properties, from which the shared config is built, do.

// S3 transport settings, the same as iceberg-go's own for its S3 clients.
const (
	s3MaxIdleConns        = 256
	s3MaxIdleConnsPerHost = 256
	s3MaxConnsPerHost     = 2048
	s3IdleConnTimeout     = 90 * time.Second
)

// newSharedAWSConfig returns the AWS config iceberg-go would build for
// props, completed with an HTTP client that all S3 file IO of a lake
// shares.
//
// The client is frozen (a plain *http.Client, no longer an AWS
// BuildableClient): each S3 client the SDK builds from a BuildableClient
// gets a copy of it, with a connection pool of its own, as soon as it has
// a setting to apply to it (AWS_DEFAULTS_MODE=standard, for one, or a
// service read timeout), which would bring the leak back.
func newSharedAWSConfig(ctx context.Context, props iceberg.Properties) (*aws.Config, error) {
	cfg, err := s3io.ParseAWSConfig(ctx, props)
	if err != nil {
		return nil, err
	}
	var client *awshttp.BuildableClient
	switch c := cfg.HTTPClient.(type) {
	case nil:
		client = awshttp.NewBuildableClient()
	case *awshttp.BuildableClient:
		// Made for a proxy, a connect timeout or a CA bundle.
		client = c
	default:
		return cfg, nil
	}
	cfg.HTTPClient = client.WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = s3MaxIdleConns
		t.MaxIdleConnsPerHost = s3MaxIdleConnsPerHost
		t.MaxConnsPerHost = s3MaxConnsPerHost
		t.IdleConnTimeout = s3IdleConnTimeout
	}).Freeze()
	return cfg, nil
}

// closeIdle closes the idle connections of cfg's HTTP client.
func closeIdle(cfg *aws.Config) {
	if cfg == nil {
		return
	}
	if c, ok := cfg.HTTPClient.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// withAWS returns ctx carrying cfg for iceberg-go's S3 file IO, unless
// cfg is nil or ctx already carries a config of the caller's.
func withAWS(ctx context.Context, cfg *aws.Config) context.Context {
	if cfg == nil || utils.GetAwsConfig(ctx) != nil {
		return ctx
	}
	return utils.WithAwsConfig(ctx, cfg)
}

// sharedIO is a catalog whose operations, and the file IO of whose tables,
// use one AWS config and so one S3 connection pool.
//
// The tables it returns are rebuilt with table.New around the catalog's
// own, with the same metadata, file IO (called with the shared config)
// and metrics reporter. They plan scans locally, iceberg-go's default:
// a REST catalog's server-side scan planning is not offered through them.
type sharedIO struct {
	catalog.Catalog
	aws *aws.Config
}

func (c *sharedIO) wrap(tbl *table.Table, err error) (*table.Table, error) {
	if err != nil || tbl == nil {
		return tbl, err
	}
	fsF := tbl.FS
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) { return fsF(withAWS(ctx, c.aws)) },
		c, table.WithMetricsReporter(tbl.MetricsReporter())), nil
}

func (c *sharedIO) CreateTable(ctx context.Context, ident table.Identifier, sch *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	return c.wrap(c.Catalog.CreateTable(withAWS(ctx, c.aws), ident, sch, opts...))
}

func (c *sharedIO) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return c.wrap(c.Catalog.LoadTable(withAWS(ctx, c.aws), ident))
}

func (c *sharedIO) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	return c.wrap(c.Catalog.RenameTable(withAWS(ctx, c.aws), from, to))
}

func (c *sharedIO) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	return c.Catalog.CommitTable(withAWS(ctx, c.aws), ident, reqs, updates)
}

func (c *sharedIO) DropTable(ctx context.Context, ident table.Identifier) error {
	return c.Catalog.DropTable(withAWS(ctx, c.aws), ident)
}

// Close closes the wrapped catalog.
func (c *sharedIO) Close() error {
	if cl, ok := c.Catalog.(catalog.Closer); ok {
		return cl.Close()
	}
	return nil
}

// missingDirsIO is the file IO of a table as iceberg-go's orphan planning
// sees it: its listing skips directories that do not exist rather than
// failing on them. A data location that does not exist yet (no data file
// was ever written) lists as empty, and so does a directory that an
// object store still lists after its last object was deleted but that
// cannot be opened any more (SeaweedFS does this for a while). A file
// that disappears between the listing and its stat is skipped too: it
// is no orphan left to delete.
//
// Everything else is passed through; deleting goes through the table's
// own file IO, not this one.
type missingDirsIO struct {
	iceio.IO
}

// skipMissingDirs returns a table FS function over fsF whose IO lists as
// missingDirsIO does.
func skipMissingDirs(fsF table.FSysF) table.FSysF {
	return func(ctx context.Context) (iceio.IO, error) {
		fsys, err := fsF(ctx)
		if err != nil {
			return nil, err
		}
		return missingDirsIO{fsys}, nil
	}
}

// WalkDir walks root as the wrapped IO does, skipping the directories, and
// files, that turn out not to exist.
func (m missingDirsIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	lister, ok := m.IO.(iceio.ListableIO)
	if !ok {
		return fmt.Errorf("file IO %T cannot list files", m.IO)
	}
	return lister.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && (d == nil || d.IsDir()) {
				// The root (d is nil) or a directory that cannot be
				// read: nothing under it. SkipDir on the root ends the
				// walk without an error.
				return fs.SkipDir
			}
			return fn(path, d, err)
		}
		if d.IsDir() {
			return fn(path, d, nil)
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fn(path, d, err)
		}
		return fn(path, statEntry{d, info}, nil)
	})
}

// ReadFile reads name whole, as the wrapped IO does if it can.
func (m missingDirsIO) ReadFile(name string) ([]byte, error) {
	if r, ok := m.IO.(iceio.ReadFileIO); ok {
		return r.ReadFile(name)
	}
	f, err := m.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// statEntry is a directory entry whose info was already read.
type statEntry struct {
	fs.DirEntry
	info fs.FileInfo
}

func (e statEntry) Info() (fs.FileInfo, error) { return e.info, nil }
