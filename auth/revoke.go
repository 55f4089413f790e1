package auth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Revocations lists bearer tokens revoked before they expire (a console
// logout): Tokens.Verify refuses a token on the list. An entry is kept
// until its token would have expired, and then forgotten, so the list
// holds at most a token lifetime's worth of logouts.
//
// Replicas share their token key, and through the key's file they share
// this list: with a path, the list is a file of JSON lines next to the
// key, which every process appends to under a lock (flock on
// PATH.lock) and reads back as it grows, at most once per refresh
// interval (DefaultRevocationRefresh). A token revoked on one replica is
// refused there at once and on the others within the interval. A
// process whose key was given as hex (--token-key) has no file to share,
// and keeps its list in memory: replicas that must share logouts take
// the key from a shared file (--token-key-file).
//
// One user's entries are bounded (MaxRevokedPerUser): past that many
// live revocations, a logout revokes every token of the user issued so
// far, which needs one entry, so that logging in and out in a loop cannot
// grow the list without bound. Revocations is safe for concurrent use.
type Revocations struct {
	path    string // "" keeps the list in memory only
	refresh time.Duration
	now     func() time.Time
	// maxPerUser and compactAt are MaxRevokedPerUser and
	// compactLines, lowered by tests.
	maxPerUser, compactAt int

	mu      sync.Mutex
	ids     map[string]revokedID     // by token id
	before  map[string]revokedBefore // by user: tokens issued up to a time
	perUser map[string]int           // live ids per user
	file    fileMark                 // what of the file has been read
	checked time.Time                // when the file was last looked at
	lines   int                      // lines in the file, dead ones included
}

type revokedID struct {
	user string
	exp  time.Time
}

type revokedBefore struct {
	cutoff, exp time.Time
}

// fileMark is how far the list's file has been read, and which file
// that was: a compaction replaces it with a new one.
type fileMark struct {
	info fs.FileInfo
	off  int64
}

// revocationLine is one line of the file: a token id, or (All) every
// token of User issued up to Before.
type revocationLine struct {
	ID     string `json:"id,omitempty"`
	User   string `json:"user"`
	Exp    int64  `json:"exp"`
	All    bool   `json:"all,omitempty"`
	Before int64  `json:"before,omitempty"`
}

// DefaultRevocationRefresh is how often a process reads the list's file
// for the other replicas' revocations: a call that verifies a token
// reads it when it is older than this. A read that finds nothing new
// opens the file and stats it.
const DefaultRevocationRefresh = time.Second

// MaxRevokedPerUser bounds one user's live revocations by token id; see
// Revocations.
const MaxRevokedPerUser = 1000

// compactLines is how many lines the file holds, most of them dead,
// before it is rewritten with the live ones alone.
const compactLines = 1024

// RevocationsFileFor is the revocation list's file that belongs to the
// token key file keyFile, or "" for a key without a file.
func RevocationsFileFor(keyFile string) string {
	if keyFile == "" {
		return ""
	}
	return keyFile + ".revoked"
}

// RevocationOption configures Revocations.
type RevocationOption func(*Revocations)

// WithRefresh sets how often the list's file is read for other
// processes' revocations; 0 reads it on every check.
func WithRefresh(d time.Duration) RevocationOption {
	return func(r *Revocations) { r.refresh = d }
}

// WithRevocationClock sets the clock entries expire by, for tests.
func WithRevocationClock(now func() time.Time) RevocationOption {
	return func(r *Revocations) { r.now = now }
}

// OpenRevocations returns the revocation list kept in the file at path,
// reading what it holds (a missing file is an empty list, created at the
// first revocation), or, with an empty path, a list in memory.
func OpenRevocations(path string, opts ...RevocationOption) (*Revocations, error) {
	r := &Revocations{path: path, refresh: DefaultRevocationRefresh, now: time.Now, maxPerUser: MaxRevokedPerUser, compactAt: compactLines,
		ids: map[string]revokedID{}, before: map[string]revokedBefore{}, perUser: map[string]int{}}
	for _, o := range opts {
		o(r)
	}
	if r.refresh < 0 || r.now == nil {
		return nil, errors.New("open revocations: negative refresh or nil clock")
	}
	if path == "" {
		return r, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.readLocked(); err != nil {
		return nil, fmt.Errorf("open revocations: %w", err)
	}
	return r, nil
}

// Revoked reports whether the token with id, of user, issued at issued,
// is revoked. It reads the file first when it is due.
func (r *Revocations) Revoked(id, user string, issued time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.path != "" && now.Sub(r.checked) >= r.refresh {
		// A file that cannot be read keeps the list as it was: a
		// revocation read once stays in force.
		_ = r.readLocked()
	}
	if e, ok := r.ids[id]; ok && e.user == user && now.Before(e.exp) {
		return true
	}
	b, ok := r.before[user]
	return ok && now.Before(b.exp) && !issued.After(b.cutoff)
}

// revoke adds the token id of user, which expires at exp, to the list,
// and to its file first: a revocation the file did not take is not made.
// ttl is how long tokens live, for a revocation of all of a user's.
func (r *Revocations) revoke(id, user string, exp time.Time, ttl time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.path != "" {
		unlock, err := lockFile(r.path + ".lock")
		if err != nil {
			return fmt.Errorf("revoke token: lock %s: %w", r.path, err)
		}
		defer unlock()
		if err := r.readLocked(); err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
	}
	r.expireLocked(now)
	line := revocationLine{ID: id, User: user, Exp: exp.Unix()}
	if r.perUser[user] >= r.maxPerUser {
		// Second precision, as in the tokens: a token issued in this
		// second is revoked too.
		line = revocationLine{User: user, All: true, Before: now.Unix(), Exp: now.Add(ttl).Unix() + 1}
	}
	if r.path != "" {
		if err := r.appendLocked(line); err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
		if err := r.compactLocked(); err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
	} else {
		r.applyLocked(line)
	}
	return nil
}

// applyLocked adds one line's revocation to the list.
func (r *Revocations) applyLocked(l revocationLine) {
	exp := time.Unix(l.Exp, 0)
	if !r.now().Before(exp) {
		return
	}
	if l.All {
		if b, ok := r.before[l.User]; !ok || b.cutoff.Before(time.Unix(l.Before, 0)) {
			r.before[l.User] = revokedBefore{cutoff: time.Unix(l.Before, 0), exp: exp}
		}
		for id, e := range r.ids {
			if e.user == l.User {
				delete(r.ids, id)
			}
		}
		delete(r.perUser, l.User)
		return
	}
	if l.ID == "" {
		return
	}
	if _, ok := r.ids[l.ID]; !ok {
		r.perUser[l.User]++
	}
	r.ids[l.ID] = revokedID{user: l.User, exp: exp}
}

// expireLocked forgets the entries whose tokens have expired.
func (r *Revocations) expireLocked(now time.Time) {
	for id, e := range r.ids {
		if !now.Before(e.exp) {
			delete(r.ids, id)
			if r.perUser[e.user]--; r.perUser[e.user] <= 0 {
				delete(r.perUser, e.user)
			}
		}
	}
	for u, b := range r.before {
		if !now.Before(b.exp) {
			delete(r.before, u)
		}
	}
}

// readLocked reads what the file gained since the last read, or all of
// it when it is another file than the one read last (a compaction
// replaced it) or a shorter one.
func (r *Revocations) readLocked() error {
	r.checked = r.now()
	f, err := openPrivate(r.path, "revoked tokens")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", r.path, err)
	}
	m := r.file
	switch {
	case m.info == nil || !os.SameFile(m.info, fi) || fi.Size() < m.off:
		r.ids, r.before, r.perUser = map[string]revokedID{}, map[string]revokedBefore{}, map[string]int{}
		m, r.lines = fileMark{}, 0
	case fi.Size() == m.off:
		return nil
	}
	if _, err := f.Seek(m.off, io.SeekStart); err != nil {
		return fmt.Errorf("read %s: %w", r.path, err)
	}
	br := bufio.NewReader(f)
	off := m.off
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			break // a line still being written, if any: read it next time
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", r.path, err)
		}
		off += int64(len(line))
		r.lines++
		var l revocationLine
		if json.Unmarshal(bytes.TrimSpace(line), &l) == nil {
			r.applyLocked(l)
		}
	}
	r.file = fileMark{info: fi, off: off}
	return nil
}

// appendLocked writes one line to the file, under the file's lock, and
// reads it back in (with whatever else was appended since).
func (r *Revocations) appendLocked(l revocationLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", r.path, err)
	}
	_, werr := f.Write(append(b, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", r.path, err)
	}
	return r.readLocked()
}

// compactLocked rewrites the file with the live entries alone once most
// of its lines are dead, under the file's lock: a new file renamed into
// place, which readers notice and read whole.
func (r *Revocations) compactLocked() error {
	live := len(r.ids) + len(r.before)
	if r.lines < r.compactAt || r.lines < 2*live {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for id, e := range r.ids {
		enc.Encode(revocationLine{ID: id, User: e.user, Exp: e.exp.Unix()})
	}
	for u, b := range r.before {
		enc.Encode(revocationLine{User: u, All: true, Before: b.cutoff.Unix(), Exp: b.exp.Unix()})
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.path), "."+filepath.Base(r.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("compact %s: %w", r.path, err)
	}
	defer os.Remove(tmp.Name())
	if err := writeAll(tmp, buf.Bytes()); err != nil {
		return fmt.Errorf("compact %s: %w", r.path, err)
	}
	if err := os.Rename(tmp.Name(), r.path); err != nil {
		return fmt.Errorf("compact %s: %w", r.path, err)
	}
	r.file = fileMark{}
	return r.readLocked()
}

// writeAll writes b to a new private file, syncs and closes it.
func writeAll(f *os.File, b []byte) error {
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
