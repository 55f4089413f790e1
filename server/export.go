package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc/codes"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
	"github.com/quiverdata/quiver/lake"
)

// Exports: COPY (query) TO '/path' (FORMAT parquet|csv|json, …) for
// readwrite and admin users, into files under one directory, the export
// root (Config.ExportRoot, --export-root). DuckDB's own sandbox
// (allowed_directories) only compares path prefixes, so the server checks
// each export's target itself before anything runs, and runs a COPY it
// rebuilt with the checked path in place of the user's:
//
//  1. The root is created when missing, its symbolic links resolved once,
//     and it must belong to quiver's user (or root) and be writable by no
//     other user; so must each directory above it, unless it is sticky
//     (/tmp). Quiver refuses to start otherwise, and when the root holds
//     a file of its own (the database, its key and users files, TLS
//     files) or overlaps the lake's directories.
//  2. The target is a file under the root: no "..", no URL, no "~". Each
//     directory on the way from the root is checked with Lstat, never
//     followed: it must be a real directory with the root's ownership and
//     mode (missing ones are created so). The target itself must not
//     exist, or be a regular file; a symbolic link is refused.
//     No tmp_<name> may be there: an export to it is running.
//  3. DuckDB writes tmp_<name> next to the target and renames it into
//     place only when it is complete (USE_TMP_FILE): a failed or
//     canceled export leaves the old file, and a hard link at the target
//     is replaced, not written through.
//  4. No other statement writes there: COPY … FROM stays the admin's, a
//     COPY inside a Flight script (whose text DuckDB does not give) is
//     refused, and so is EXPLAIN ANALYZE of a COPY, which would run it.
//
// Between the check and DuckDB's write (the time-of-check to time-of-use
// window) only the user quiver runs as, or root, can change the
// directories the check walked: 1 and 2 make sure no other user can write
// to them, and SQL creates no symbolic links or directories (the options
// that write directories are refused). So the guarantee holds against
// every user quiver serves, and every local user but its own.

// exportRoot is the directory exports are written under.
type exportRoot struct {
	dir  string // as configured, absolute and clean
	real string // dir with its symbolic links resolved: what exports write to
	// remote, for an s3:// root, is where exports go: dir is then a
	// private staging directory DuckDB writes each export to before it is
	// uploaded, and a target is a URI under remote's.
	remote *lake.Objects
	staged atomic.Uint64 // names staged files
}

// name is the root as users give it.
func (r *exportRoot) name() string {
	if r.remote != nil {
		return r.remote.URI()
	}
	return r.dir
}

// openExportRoot creates dir when missing and checks it may take exports.
func openExportRoot(dir string) (*exportRoot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--export-root %s: %w", dir, err)
	}
	if abs == filepath.Dir(abs) {
		return nil, fmt.Errorf("--export-root %s: the file system's root takes no exports; give a directory of their own", dir)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("create --export-root: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("--export-root %s: %w", dir, err)
	}
	fi, err := os.Lstat(resolved)
	if err != nil {
		return nil, fmt.Errorf("--export-root %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("--export-root %s is not a directory", dir)
	}
	if err := checkDir(resolved, fi, false); err != nil {
		return nil, fmt.Errorf("--export-root %s: %w", dir, err)
	}
	for a := filepath.Dir(resolved); ; a = filepath.Dir(a) {
		fi, err := os.Lstat(a)
		if err != nil {
			return nil, fmt.Errorf("--export-root %s: %w", dir, err)
		}
		if err := checkDir(a, fi, true); err != nil {
			return nil, fmt.Errorf("--export-root %s: %w", dir, err)
		}
		if a == filepath.Dir(a) {
			break
		}
	}
	return &exportRoot{dir: abs, real: resolved}, nil
}

// dirs are the directories DuckDB must be allowed to write: the root as
// configured (the path users give) and resolved (the path exports run
// with).
func (r *exportRoot) dirs() []string {
	if r.dir == r.real {
		return []string{r.real}
	}
	return []string{r.real, r.dir}
}

// holds reports whether p (a file or directory, existing or not) lies
// under the root.
func (r *exportRoot) holds(p string) bool {
	p = resolvePath(p)
	return within(r.real, p) || within(r.dir, p)
}

// resolvePath is p made absolute, with the symbolic links of the part of
// it that exists resolved.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		return resolved
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// within reports whether p is dir or lies under it, comparing clean
// absolute paths.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// resolve checks that target names a file under a local root that an export
// may write, creating missing directories on the way, and returns the
// file's path under the resolved root. Its errors are *exportError:
// refusals, or an I/O error creating a directory.
func (r *exportRoot) resolve(target string) (string, error) {
	refuse := func(format string, args ...any) (string, error) {
		return "", r.refusef(target, format, args...)
	}
	switch {
	case target == "":
		return refuse("no file named")
	case strings.ContainsRune(target, 0):
		return refuse("the path holds a NUL byte")
	case strings.Contains(target, "://"):
		return refuse("it is a URL; exports go to local files under the root (the root may be an s3:// prefix instead: --export-root s3://bucket/prefix)")
	case strings.HasPrefix(target, "~"):
		return refuse("~ is not expanded; give the path under the root")
	}
	for _, el := range strings.Split(filepath.ToSlash(target), "/") {
		if el == ".." {
			return refuse("the path holds \"..\"; a target may not climb out of a directory")
		}
	}
	rel := target
	if filepath.IsAbs(target) {
		var ok bool
		if rel, ok = r.relative(target); !ok {
			return refuse("it is outside the root")
		}
	}
	rel = filepath.Clean(rel)
	if rel == "." || !filepath.IsLocal(rel) {
		return refuse("it names no file under the root")
	}
	dir := r.real
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", failuref(codes.Internal, "export root: %v", err)
	}
	if err := checkDir(dir, fi, false); err != nil {
		return refuse("%v", err)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for _, name := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, name)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err = os.Mkdir(dir, 0o750); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = os.Lstat(dir)
			}
		}
		switch {
		case err != nil:
			return "", failuref(codes.Internal, "export to %s: %v", target, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return refuse("%s is a symbolic link; exports never follow one", dir)
		case !fi.IsDir():
			return refuse("%s is not a directory", dir)
		}
		if err := checkDir(dir, fi, false); err != nil {
			return refuse("%v", err)
		}
	}
	file := filepath.Join(dir, parts[len(parts)-1])
	switch fi, err := os.Lstat(file); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", failuref(codes.Internal, "export to %s: %v", target, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return refuse("%s is a symbolic link; exports never follow one", file)
	case !fi.Mode().IsRegular():
		return refuse("%s exists and is not a regular file", file)
	}
	tmp := filepath.Join(dir, "tmp_"+filepath.Base(file))
	if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
		return refuse("%s exists: another export to this file is running, or one was interrupted (then remove it)", tmp)
	}
	return file, nil
}

// stage checks that target is a URI under a remote root and returns the
// staging file DuckDB writes the export to and the object key it is
// uploaded to.
func (r *exportRoot) stage(target string) (file, key string, err error) {
	refuse := func(format string, args ...any) (string, string, error) {
		return "", "", r.refusef(target, format, args...)
	}
	rel, ok := strings.CutPrefix(target, r.remote.URI()+"/")
	switch {
	case target == "":
		return refuse("no object named")
	case strings.ContainsRune(target, 0):
		return refuse("the URI holds a NUL byte")
	case !ok:
		return refuse("it is not under the root: give %s/<path>", r.remote.URI())
	case strings.ContainsAny(rel, "\\?#"):
		return refuse("the path holds \\, ? or #")
	}
	for _, el := range strings.Split(rel, "/") {
		switch el {
		case "..":
			return refuse("the path holds \"..\"; a target may not climb out of the root")
		case "", ".":
			return refuse("the path holds an empty or \".\" element")
		}
	}
	name := fmt.Sprintf("%d-%s", r.staged.Add(1), path.Base(rel))
	return filepath.Join(r.real, name), rel, nil
}

// refusef is the refusal of an export to target.
func (r *exportRoot) refusef(target, format string, args ...any) error {
	return refusef("export to '%s' refused (--export-root %s): %s", target, r.name(), fmt.Sprintf(format, args...))
}

// relative returns abs relative to the root, as configured or resolved.
func (r *exportRoot) relative(abs string) (string, bool) {
	abs = filepath.Clean(abs)
	for _, base := range []string{r.dir, r.real} {
		if rel, err := filepath.Rel(base, abs); err == nil && filepath.IsLocal(rel) {
			return rel, true
		}
	}
	return "", false
}

// exportError is an export refused (PermissionDenied) or one that could
// not be set up; over MySQL every one is error 1227.
type exportError struct {
	code codes.Code
	msg  string
}

func (e *exportError) Error() string { return e.msg }

func refusef(format string, args ...any) error {
	return &exportError{code: codes.PermissionDenied, msg: fmt.Sprintf(format, args...)}
}

func failuref(code codes.Code, format string, args ...any) error {
	return &exportError{code: code, msg: fmt.Sprintf(format, args...)}
}

// allowExports opens Config.ExportRoot, if set, and returns allowed (the
// directories DuckDB may reach) with the root's added. A root that holds
// a file of quiver's own, or overlaps one of allowed, is refused, before
// it is created: an export could overwrite the database, its users or its
// lake.
func (s *Server) allowExports(ctx context.Context, allowed []string) ([]string, error) {
	if s.cfg.ExportRoot == "" {
		return allowed, nil
	}
	if strings.Contains(s.cfg.ExportRoot, "://") {
		return s.allowRemoteExports(ctx, allowed)
	}
	abs, err := filepath.Abs(s.cfg.ExportRoot)
	if err != nil {
		return nil, fmt.Errorf("--export-root %s: %w", s.cfg.ExportRoot, err)
	}
	if err := s.exportOverlap(&exportRoot{dir: abs, real: resolvePath(abs)}, allowed); err != nil {
		return nil, err
	}
	r, err := openExportRoot(s.cfg.ExportRoot)
	if err != nil {
		return nil, err
	}
	if err := s.exportOverlap(r, allowed); err != nil {
		return nil, err
	}
	s.sec.export = r
	s.log.Info("exports enabled", "export_root", r.real)
	return append(allowed, r.dirs()...), nil
}

// allowRemoteExports opens an s3:// export root and a private staging
// directory for it, which DuckDB may write.
func (s *Server) allowRemoteExports(ctx context.Context, allowed []string) ([]string, error) {
	root := strings.TrimRight(s.cfg.ExportRoot, "/")
	if !strings.HasPrefix(root, "s3://") {
		return nil, fmt.Errorf("--export-root %s: use a directory or s3://bucket/prefix", s.cfg.ExportRoot)
	}
	s3 := s.cfg.ExportS3
	if s3 == (lake.S3Config{}) && s.cfg.Lake != nil {
		s3 = s.cfg.Lake.Iceberg.S3
	}
	if s.cfg.Lake != nil {
		wh := strings.TrimRight(s.cfg.Lake.Iceberg.Warehouse, "/")
		if wh == root || strings.HasPrefix(wh, root+"/") || strings.HasPrefix(root, wh+"/") {
			return nil, fmt.Errorf("--export-root %s overlaps the lake's warehouse %s: an export could overwrite its files; give exports a prefix of their own", s.cfg.ExportRoot, wh)
		}
	}
	objs, err := lake.OpenObjects(ctx, root, s3)
	if err != nil {
		return nil, fmt.Errorf("--export-root %s: %w", s.cfg.ExportRoot, err)
	}
	staging, err := os.MkdirTemp("", "quiver-export-staging-")
	if err != nil {
		return nil, fmt.Errorf("--export-root %s: staging directory: %w", s.cfg.ExportRoot, err)
	}
	s.stops = append(s.stops, namedStop{"export staging", func(context.Context) { os.RemoveAll(staging) }})
	r, err := openExportRoot(staging)
	if err != nil {
		return nil, err
	}
	r.remote = objs
	s.sec.export = r
	s.log.Info("exports enabled", "export_root", objs.URI(), "staging", r.real)
	return append(allowed, r.dirs()...), nil
}

// exportOverlap refuses an export root that holds one of quiver's own
// files, or overlaps one of dirs.
func (s *Server) exportOverlap(r *exportRoot, dirs []string) error {
	type file struct{ path, what string }
	var own []file
	if db := s.cfg.DB; db != "" && db != ":memory:" {
		own = append(own, file{db, "the database"}, file{db + ".wal", "the database's WAL"})
		if s.cfg.Security.TokenKey == "" && s.cfg.Security.TokenKeyFile == "" {
			own = append(own, file{auth.KeyFileFor(db), "the token key"})
		}
	}
	sc := s.cfg.Security
	for _, f := range []file{{sc.UsersFile, "the users file"}, {sc.TokenKeyFile, "the token key"},
		{sc.TLSCert, "the TLS certificate"}, {sc.TLSKey, "the TLS key"}, {sc.TLSClientCA, "the client CA"}} {
		if f.path != "" {
			own = append(own, f)
		}
	}
	for _, f := range own {
		if r.holds(f.path) {
			return fmt.Errorf("--export-root %s holds %s (%s): an export could overwrite it; give exports a directory of their own", s.cfg.ExportRoot, f.what, f.path)
		}
	}
	for _, d := range dirs {
		if r.holds(d) || within(resolvePath(d), r.real) || within(resolvePath(d), r.dir) {
			return fmt.Errorf("--export-root %s overlaps the lake's directory %s; give exports a directory of their own", s.cfg.ExportRoot, d)
		}
	}
	return nil
}

// authorizeCopy decides a COPY statement. handled is false when the
// ordinary role check decides it: an admin's COPY … FROM, and without an
// export root every COPY (it stays the admin's) but a readwrite user's
// COPY … TO, whose refusal points to --export-root. Otherwise err says
// whether it may run, and an export runs as the COPY this rebuilt.
func (sec *security) authorizeCopy(ctx context.Context, u auth.User, st *engine.Stmt, endpoint string) (handled bool, err error) {
	r := sec.export
	text := st.Text()
	if text == "" {
		if r == nil {
			return false, nil
		}
		return true, sec.refuseExport(u, "", endpoint, refusef(
			"COPY inside a script is refused while --export-root is set: send COPY … TO as a statement of its own, so that quiver can check its target"))
	}
	c, perr := parseCopy(text)
	switch {
	case perr != nil && r == nil:
		return false, nil
	case perr != nil:
		return true, sec.refuseExport(u, "", endpoint, refusef("quiver cannot read this COPY statement to check it against --export-root: %v", perr))
	case c.from && u.Role.IsAdmin():
		return false, nil
	case c.from:
		return true, sec.refuseExport(u, "", endpoint, refusef("%s", copyFromRefusal(u)))
	case u.Role == auth.RoleReadOnly && r == nil:
		return false, nil
	case u.Role == auth.RoleReadOnly:
		return true, sec.refuseExport(u, c.target, endpoint, refusef(
			"user %s is read-only and may not export: COPY … TO under --export-root needs the readwrite role", u.Name))
	case r == nil && u.Role.IsAdmin():
		return false, nil
	case r == nil:
		return true, sec.refuseExport(u, c.target, endpoint, refusef(
			"user %s may not run COPY … TO: this server has no --export-root, so writing files needs the admin role; start it with --export-root DIR to let readwrite users export under DIR", u.Name))
	}
	file, format, err := sec.export.prepare(ctx, c, st)
	if err != nil {
		return true, sec.refuseExport(u, c.target, endpoint, err)
	}
	sec.audit.Info("export", "user", u.Name, "role", u.Role.String(), "target", file, "format", format, "endpoint", endpoint)
	return true, nil
}

// prepare checks an export and puts the COPY that runs it in st's place.
func (r *exportRoot) prepare(ctx context.Context, c *copyStmt, st *engine.Stmt) (file, format string, err error) {
	if err := c.checkOptions(); err != nil {
		return "", "", r.refusef(c.target, "%v", err)
	}
	if format, err = c.format(); err != nil {
		return "", "", r.refusef(c.target, "%v", err)
	}
	if c.query != "" {
		if err := checkQuery(ctx, st.Conn(), c.query); err != nil {
			var ee *exportError
			if errors.As(err, &ee) && ee.code == codes.PermissionDenied {
				return "", "", r.refusef(c.target, "%v", err)
			}
			return "", "", err
		}
	}
	key := ""
	if r.remote != nil {
		file, key, err = r.stage(c.target)
	} else {
		file, err = r.resolve(c.target)
	}
	if err != nil {
		return "", "", err
	}
	if err := st.Replace(ctx, c.rebuild(file, format)); err != nil {
		return "", "", failuref(codes.InvalidArgument, "export to %s: %v", c.target, err)
	}
	if c.query != "" {
		// A query DuckDB would export on one thread is streamed into a
		// COPY that encodes on every thread (engine.Stmt.PipeCopy).
		_, err := st.PipeCopy(ctx, c.query, func(view string) string {
			return c.rebuildFrom("(SELECT * FROM "+view+")", file, format)
		})
		if err != nil {
			return "", "", failuref(codes.InvalidArgument, "export to %s: %v", c.target, err)
		}
	}
	// DuckDB leaves its tmp_<name> behind a COPY that failed or was
	// canceled; resolve made sure none was there before this one.
	tmp := filepath.Join(filepath.Dir(file), "tmp_"+filepath.Base(file))
	if key == "" {
		st.OnResult(func(ctx context.Context, err error) error {
			if err != nil {
				os.Remove(tmp)
			}
			return err
		})
		return file, format, nil
	}
	// DuckDB writes the staged file (and renames it into place from
	// tmp_<name>) before the statement's result is ready; then it goes
	// up, and is removed whatever happens.
	staged, target := file, c.target
	st.OnResult(func(ctx context.Context, err error) error {
		defer os.Remove(staged)
		if err != nil {
			os.Remove(tmp)
			return err
		}
		n, err := r.remote.Upload(ctx, staged, key)
		if err != nil {
			exportUploads.WithLabelValues("failed").Inc()
			return &engine.Error{Kind: engine.KindInternal, Msg: fmt.Sprintf("export to %s: the file was written but its upload failed, so nothing is there: %v", target, err)}
		}
		exportUploads.WithLabelValues("ok").Inc()
		exportUploadBytes.Add(float64(n))
		return nil
	})
	return target, format, nil
}

// checkQuery asks DuckDB's parser whether query, alone, is one SELECT
// (json_serialize_sql serializes nothing else), so that the COPY rebuilt
// around it is the export and nothing more.
func checkQuery(ctx context.Context, c *engine.Conn, query string) error {
	tree, err := c.SyntaxTree(ctx, query)
	var pe *duckdbsql.PlanError
	switch {
	case errors.As(err, &pe):
		return refusef("the query of COPY (query) TO must be one SELECT: %s", pe.Message)
	case err != nil:
		return failuref(codes.Internal, "check the export's query: %v", err)
	case len(tree.Statements) != 1:
		return refusef("the query of COPY (query) TO must be one SELECT, not %d statements", len(tree.Statements))
	}
	return nil
}

// authorizeExplain refuses an EXPLAIN ANALYZE of a COPY, which runs the
// COPY past the export checks: from every role but admin, and from the
// admin too while an export root is set (the admin's COPY is then checked
// as well). Inside a Flight script, whose statements' text DuckDB does
// not give, no EXPLAIN may run while an export root is set.
func (sec *security) authorizeExplain(u auth.User, st *engine.Stmt, endpoint string) error {
	// Everyone else's EXPLAIN ANALYZE needs the role of what it runs
	// (engine's Access): a COPY is an admin's. An admin's would run the
	// COPY past the export root's checks.
	if !u.Role.IsAdmin() || sec.export == nil {
		return nil
	}
	text := st.Text()
	if text == "" {
		if sec.export == nil {
			return nil
		}
		return sec.refuseExport(u, "", endpoint, refusef(
			"EXPLAIN inside a script is refused while --export-root is set: quiver cannot tell whether it runs a COPY (EXPLAIN ANALYZE does); send it as a statement of its own"))
	}
	if analyze, ofCopy := explainsCopy(text); analyze && ofCopy {
		return sec.refuseExport(u, "", endpoint, refusef(
			"EXPLAIN ANALYZE runs the COPY it explains, past the checks of --export-root; run the COPY itself (or EXPLAIN it without ANALYZE)"))
	}
	return nil
}

// explainsCopy reports whether an EXPLAIN statement analyzes (runs) what
// it explains, and whether that is a COPY. SQL quiver cannot read counts
// as both.
func explainsCopy(sql string) (analyze, ofCopy bool) {
	toks, err := duckdbsql.Lex(sql)
	if err != nil || len(toks) < 2 {
		return true, true
	}
	p := &copyParser{sql: sql, toks: toks}
	p.keyword("EXPLAIN")
	switch {
	case p.keyword("ANALYZE"), p.keyword("ANALYSE"):
		analyze = true
	case p.peek().Is("("):
		// EXPLAIN (ANALYZE, FORMAT json) …: any ANALYZE in the list
		// counts, whatever value follows it.
		p.next()
		for depth := 1; depth > 0; {
			t := p.next()
			switch {
			case t.Kind == 0:
				return true, true
			case t.Is("("):
				depth++
			case t.Is(")"):
				depth--
			case t.IsWord("ANALYZE") || t.IsWord("ANALYSE"):
				analyze = true
			}
		}
	}
	return analyze, p.keyword("COPY")
}

// refuseExport audits a refused export and returns err.
func (sec *security) refuseExport(u auth.User, target, endpoint string, err error) error {
	sec.audit.Warn("export refused", "user", u.Name, "role", u.Role.String(), "target", target, "reason", err.Error(), "endpoint", endpoint)
	return err
}

var (
	exportUploads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_export_uploads_total",
		Help: "Exports uploaded to an s3:// export root, by result (ok, failed).",
	}, []string{"result"})
	exportUploadBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_export_upload_bytes_total",
		Help: "Bytes of exports uploaded to an s3:// export root.",
	})
)

// DuckDB creates the directory of an EXPORT DATABASE when it binds the
// statement, that is when it is prepared, before the role check (which
// reads the prepared statement's type) can refuse it: a read-only user's
// refused EXPORT left its directory behind, under the export root or
// anywhere else DuckDB may write. So the prepare hook refuses an EXPORT
// from a user who is not an admin before DuckDB sees the text.
//
// The check reads the text with the export parser's lexer and looks for
// the keywords EXPORT DATABASE anywhere outside strings, names and
// comments, inside an EXPLAIN or a script too. It can only refuse more
// than the role check would (a query naming a column export and aliasing
// it database, without AS); the role check after prepare stays the one
// that decides everything else.

// prepareHook returns the database's prepare hook: the early EXPORT
// and COPY … FROM checks, then next (the lake's hook, or nil).
func (sec *security) prepareHook(next engine.PrepareHook) engine.PrepareHook {
	return func(ctx context.Context, c *engine.Conn, sql string) error {
		if err := sec.refuseEarlyExport(ctx, sql); err != nil {
			return err
		}
		if err := sec.refuseEarlyCopyFrom(ctx, sql); err != nil {
			return err
		}
		if next != nil {
			return next(ctx, c, sql)
		}
		return nil
	}
}

// refuseEarlyExport refuses, for a caller who is not an admin, SQL that
// holds an EXPORT DATABASE statement. The caller is the user the endpoint
// put in ctx; statements without one are the server's own.
func (sec *security) refuseEarlyExport(ctx context.Context, sql string) error {
	u, ok := auth.UserFromContext(ctx)
	if !ok || u.Role.IsAdmin() || !containsFold(sql, "export") {
		return nil
	}
	if !holdsExportDatabase(sql) {
		return nil
	}
	denied := &auth.DeniedError{User: u, Statement: "EXPORT", Need: auth.AccessAdmin}
	sec.audit.Warn("statement refused", "user", u.Name, "role", u.Role.String(), "statement", "EXPORT", "need", auth.AccessAdmin.String(), "endpoint", "before prepare")
	return &engine.Error{Kind: engine.KindPermission, Msg: denied.Error()}
}

// copyFromRefusal is the refusal of a COPY … FROM by u, who is not an
// admin, on a server with an export root.
func copyFromRefusal(u auth.User) string {
	return fmt.Sprintf("user %s may not run COPY … FROM: reading files on the server needs the admin role (--export-root opens only COPY … TO, for readwrite users)", u.Name)
}

// refuseEarlyCopyFrom refuses a COPY … FROM of a caller who is not an
// admin, on a server with an export root, before DuckDB binds it: binding
// opens the file, so its errors would tell whether the file exists. The
// engine refuses it before binding too; this refusal says what the export
// root opens, as authorizeCopy's does.
func (sec *security) refuseEarlyCopyFrom(ctx context.Context, sql string) error {
	u, ok := auth.UserFromContext(ctx)
	if !ok || u.Role.IsAdmin() || sec.export == nil || !containsFold(sql, "copy") {
		return nil
	}
	c, err := parseCopy(sql)
	if err != nil || !c.from {
		return nil
	}
	msg := copyFromRefusal(u)
	sec.audit.Warn("export refused", "user", u.Name, "role", u.Role.String(), "reason", msg, "endpoint", "before prepare")
	return &engine.Error{Kind: engine.KindPermission, Msg: msg}
}

// holdsExportDatabase reports whether sql has the keywords EXPORT
// DATABASE in a row. SQL the lexer cannot read counts as holding them:
// DuckDB would most likely refuse it as well, and if not, a user who is
// not an admin may not run an EXPORT anyway.
func holdsExportDatabase(sql string) bool {
	toks, err := duckdbsql.Lex(sql)
	if err != nil {
		return true
	}
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].IsWord("EXPORT") && toks[i+1].IsWord("DATABASE") {
			return true
		}
	}
	return false
}

// containsFold reports whether s holds the lowercase ASCII word w in any
// case, without allocating: most SQL holds no "export" at all.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}
