package server

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/lakesql"
	"github.com/quiverdata/quiver/split"
)

// LakeConfig makes an Iceberg lake's tables queryable as lake.<ns>.<table>.
type LakeConfig struct {
	Iceberg lake.Config
	// CacheDir holds local copies of an s3:// lake's data files; empty
	// means lake-cache next to the database (or a temporary directory for
	// an in-memory database).
	CacheDir string
	// CacheBytes caps the copies; 0 means 8 GiB.
	CacheBytes int64
	// PartBytes is the data each endpoint of a split lake scan aims at;
	// 0 means 64 MiB.
	PartBytes int64
}

// openLake connects to the lake's catalog and returns the directories the
// database must be allowed to read: the warehouse of a file:// lake and
// the cache.
func (s *Server) openLake(ctx context.Context) (*lake.Lake, []string, error) {
	lc := *s.cfg.Lake
	if lc.CacheDir == "" {
		if s.cfg.DB == "" || s.cfg.DB == ":memory:" {
			tmp, err := os.MkdirTemp("", "quiver-lake-cache-")
			if err != nil {
				return nil, nil, fmt.Errorf("lake cache directory: %w", err)
			}
			s.stops = append(s.stops, namedStop{"lake cache", func(context.Context) { os.RemoveAll(tmp) }})
			lc.CacheDir = tmp
		} else {
			lc.CacheDir = filepath.Join(filepath.Dir(s.cfg.DB), "lake-cache")
		}
	}
	abs, err := filepath.Abs(lc.CacheDir)
	if err != nil {
		return nil, nil, fmt.Errorf("lake cache directory: %w", err)
	}
	lc.CacheDir = abs
	s.cfg.Lake = &lc
	start := time.Now()
	lk, err := lake.Open(ctx, lc.Iceberg)
	if err != nil {
		return nil, nil, err
	}
	s.stops = append(s.stops, namedStop{"lake catalog", func(context.Context) { lk.Close() }})
	dirs := []string{lc.CacheDir}
	if wh := lk.Warehouse(); strings.HasPrefix(wh, "file://") {
		u, err := url.Parse(wh)
		if err != nil {
			return nil, nil, fmt.Errorf("lake %s: %w", wh, err)
		}
		dirs = append(dirs, u.Path)
	}
	s.log.Info("lake catalog open", "warehouse", lk.Warehouse(), "took", time.Since(start).Round(time.Millisecond))
	return lk, dirs, nil
}

// attachLake makes the lake's tables visible in the database.
func (s *Server) attachLake(ctx context.Context, lk *lake.Lake) error {
	lc := s.cfg.Lake
	cat, err := lakesql.Attach(ctx, s.DB, lakesql.Options{
		Lake: lk, CacheDir: lc.CacheDir, CacheBytes: lc.CacheBytes, PartBytes: lc.PartBytes, Logger: s.log,
		Replicas: len(s.locations(false)),
	})
	if err != nil {
		return err
	}
	s.Lake = cat
	s.log.Info("lake attached", "catalog", lakesql.CatalogName, "tables", strings.Join(cat.Tables(), ", "))
	return nil
}

// planners split large results into endpoints: scans of large local
// tables by rowid range, for a session that asks with the split_rows
// option, and scans of lake tables by groups of data files. A local table
// is this server's own, so its parts list no other replica.
// Replicas must list the same planners in the same order, so the lake's
// comes last and a server without a lake still numbers the others alike.
func (s *Server) planners() flightsql.Planner {
	ps := flightsql.Planners{flightsql.Local{Planner: &split.Planner{DB: s.DB, AskedRows: flightsql.SplitRows}}}
	if s.Lake != nil {
		ps = append(ps, s.Lake.Planner())
	}
	return ps
}

// locations are the URIs listed on the endpoints of a split result: this
// server's advertised address, then its peers'. Without peers or an
// advertised address, endpoints list none and clients fetch every part
// over the connection they have.
func (s *Server) locations(tls bool) []string {
	if len(s.cfg.Peers) == 0 && s.cfg.Advertise == "" {
		return nil
	}
	scheme := "grpc+tcp://"
	if tls {
		scheme = "grpc+tls://"
	}
	self := s.cfg.Advertise
	if self == "" {
		self = s.FlightAddr
	}
	out := []string{scheme + self}
	for _, p := range s.cfg.Peers {
		if p != self {
			out = append(out, scheme+p)
		}
	}
	return out
}
