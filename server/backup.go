package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/lake"
)

// backupStaging returns the directory where backups' database files are
// built, which the database must be allowed to write: beside a database
// file, so that a backup is built on the disk that has room for the
// database; a private temporary directory for an in-memory database.
func (s *Server) backupStaging() (string, error) {
	if s.cfg.DB == "" || s.cfg.DB == ":memory:" {
		dir, err := os.MkdirTemp("", "quiver-backup-")
		if err != nil {
			return "", fmt.Errorf("create the backup staging directory: %w", err)
		}
		s.stops = append(s.stops, namedStop{"backup staging", func(context.Context) { os.RemoveAll(dir) }})
		return dir, nil
	}
	dir := s.cfg.DB + ".backup"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the backup staging directory: %w", err)
	}
	return dir, nil
}

// setupBackup makes the Backer of the open database, with the users file
// and the token key file to store beside it.
func (s *Server) setupBackup(staging string) error {
	files := map[string]string{backup.UsersFile: s.cfg.Security.UsersFile, backup.TokenKeyFile: s.sec.keyFile}
	s.backer = backup.NewBacker(s.DB, staging, files, s.log)
	return s.backer.CleanStaging()
}

// backupS3 is how backups reach S3: the export root's settings, else the
// lake's.
func (s *Server) backupS3() lake.S3Config {
	s3 := s.cfg.ExportS3
	if s3 == (lake.S3Config{}) && s.cfg.Lake != nil {
		s3 = s.cfg.Lake.Iceberg.S3
	}
	return s3
}

// backupAction is the quiver.backup Flight action: an admin takes a
// backup of the served database to the location the request names, and
// gets its manifest back.
func (s *Server) backupAction() flightsql.Action {
	return flightsql.Action{
		Description: `take a backup of the database (admin only): a JSON {"to": "file:///dir or s3://bucket/prefix"}; returns its manifest`,
		Do: func(ctx context.Context, body []byte) ([]byte, error) {
			u, ok := auth.UserFromContext(ctx)
			if !ok {
				return nil, status.Error(codes.Unauthenticated, "no authenticated user on this call")
			}
			var req backup.Request
			if err := json.Unmarshal(body, &req); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "%s action: body is not a backup request: %v", backup.ActionType, err)
			}
			if !u.Role.IsAdmin() {
				s.sec.audit.Warn("backup refused", "user", u.Name, "role", u.Role.String(), "to", req.To)
				return nil, status.Errorf(codes.PermissionDenied, "user %s has the %s role; a backup needs the admin role", u.Name, u.Role)
			}
			if !strings.HasPrefix(req.To, "file:///") && !strings.HasPrefix(req.To, "s3://") {
				return nil, status.Errorf(codes.InvalidArgument, "backup to %q: use file:///absolute/dir or s3://bucket/prefix", req.To)
			}
			s.sec.audit.Info("backup", "user", u.Name, "to", req.To)
			m, err := s.TakeBackup(ctx, req.To)
			if err != nil {
				return nil, backupStatus(err)
			}
			return json.Marshal(m)
		},
	}
}

// TakeBackup takes a backup of the served database to uri.
func (s *Server) TakeBackup(ctx context.Context, uri string) (*backup.Manifest, error) {
	st, err := backup.Open(ctx, uri, s.backupS3())
	if err != nil {
		return nil, err
	}
	return s.backer.Run(ctx, st)
}

// backupStatus maps a failed backup to the status its caller sees.
func backupStatus(err error) error {
	switch {
	case errors.Is(err, backup.ErrBusy):
		return status.Error(codes.FailedPrecondition, err.Error()+"; wait for it to finish")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err // the router maps them
	}
	return status.Errorf(codes.Internal, "backup failed: %v", err)
}

// actions are the server's own Flight actions: the security's, and
// quiver.backup.
func (s *Server) actions() map[string]flightsql.Action {
	a := s.sec.actions()
	a[backup.ActionType] = s.backupAction()
	return a
}

// BackupSchedule takes backups on a timer (quiver serve --backup-to).
type BackupSchedule struct {
	// To is the backup location, file:///dir or s3://bucket/prefix;
	// empty: no scheduled backups.
	To string
	// Every is the time between backups; the first is taken one
	// interval after the start, so that restarts do not each take one.
	Every time.Duration
	// Keep is how many complete backups to keep: after each backup the
	// older ones are removed. Zero keeps them all.
	Keep int
}

// startBackups starts the scheduled backups, if any: the location is
// opened once now, so that a wrong one fails the start.
func (s *Server) startBackups(ctx context.Context) error {
	sch := s.cfg.Backup
	if sch.To == "" {
		return nil
	}
	if sch.Every <= 0 {
		return fmt.Errorf("backups to %s: the interval must be positive", sch.To)
	}
	st, err := backup.Open(ctx, sch.To, s.backupS3())
	if err != nil {
		return err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sch.Every)
		defer t.Stop()
		for {
			select {
			case <-loopCtx.Done():
				return
			case <-t.C:
			}
			s.scheduledBackup(loopCtx, st, sch.Keep)
		}
	}()
	s.stops = append(s.stops, namedStop{"backups", func(context.Context) { cancel(); <-done }})
	s.log.Info("backups scheduled", "to", st.URI(), "every", sch.Every, "keep", sch.Keep)
	return nil
}

// scheduledBackup takes one scheduled backup and prunes the old ones.
// Failures are logged: the next tick tries again.
func (s *Server) scheduledBackup(ctx context.Context, st *backup.Store, keep int) {
	if _, err := s.backer.Run(ctx, st); err != nil {
		if ctx.Err() == nil {
			s.log.Error("scheduled backup failed", "to", st.URI(), "err", err)
		}
		return
	}
	removed, err := st.Prune(ctx, keep)
	if len(removed) > 0 {
		s.log.Info("old backups removed", "to", st.URI(), "ids", removed)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Error("removing old backups failed", "to", st.URI(), "err", err)
	}
}
