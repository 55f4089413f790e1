package main

import (
	"flag"
	"strings"
	"time"

	"github.com/quiverdata/quiver/lake"
)

// lakeFlags are the flags that say where an Iceberg lake is: --lake,
// --catalog, --namespace, and the S3 settings, which default to the
// standard AWS environment variables.
type lakeFlags struct {
	lake, catalog, namespace  string
	s3Endpoint, s3Region      string
	s3PathStyle               bool
	restCredential, restToken string
	connectTimeout            time.Duration
}

func (f *lakeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.namespace, "namespace", "quiver", "Iceberg namespace of the table")
	f.registerCatalog(fs)
}

// registerCatalog declares the flags that say where the lake is, without
// --namespace (quiver serve serves every namespace).
func (f *lakeFlags) registerCatalog(fs *flag.FlagSet) {
	f.namespace = "quiver"
	fs.StringVar(&f.lake, "lake", "", "Iceberg warehouse: file:///dir or s3://bucket/prefix")
	fs.StringVar(&f.catalog, "catalog", "", "Iceberg catalog: sqlite:///path.db, postgresql://…, or http(s)://… for a REST catalog (default for a file:// lake: sqlite in <dir>/catalog.db, catalog name quiver)")
	fs.StringVar(&f.s3Endpoint, "s3-endpoint", "", "S3-compatible endpoint URL (env AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; empty: AWS)")
	fs.StringVar(&f.s3Region, "s3-region", "", "S3 region (env AWS_REGION or AWS_DEFAULT_REGION)")
	fs.BoolVar(&f.s3PathStyle, "s3-path-style", false, "path-style S3 addressing (most S3-compatible stores need it)")
	envStringVar(fs, &f.restCredential, "catalog-credential", "QUIVER_CATALOG_CREDENTIAL", "", "REST catalog OAuth2 client credential id:secret (env QUIVER_CATALOG_CREDENTIAL)")
	envStringVar(fs, &f.restToken, "catalog-token", "QUIVER_CATALOG_TOKEN", "", "REST catalog bearer token (env QUIVER_CATALOG_TOKEN)")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", 15*time.Second, "how long to wait for the catalog and object store at start")
}

// config checks the flags; keys come from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, never from the command line.
func (f *lakeFlags) config() (lake.Config, error) {
	if f.lake == "" {
		return lake.Config{}, usagef("--lake is required: file:///dir or s3://bucket/prefix")
	}
	if !strings.HasPrefix(f.lake, "file:///") && !strings.HasPrefix(f.lake, "s3://") {
		return lake.Config{}, usagef("--lake %q: use file:///absolute/dir or s3://bucket/prefix", f.lake)
	}
	if f.namespace == "" {
		return lake.Config{}, usagef("--namespace is empty")
	}
	return lake.Config{
		Warehouse: f.lake, CatalogURI: f.catalog,
		RESTCredential: f.restCredential, RESTToken: f.restToken,
		S3:             lake.S3Config{Endpoint: f.s3Endpoint, Region: f.s3Region, PathStyle: f.s3PathStyle},
		ConnectTimeout: f.connectTimeout,
	}, nil
}
