package auth

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// revokingTokens is a Tokens over the revocation list at path ("": in
// memory), read on every check, on clock.
func revokingTokens(t *testing.T, path string, clock *fakeClock) (*Tokens, *Revocations) {
	t.Helper()
	r, err := OpenRevocations(path, WithRefresh(0), WithRevocationClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return newTestTokens(t, testKey, newTestStore(t), WithTTL(time.Hour), WithClock(clock.Now), WithRevocations(r)), r
}

func issueToken(t *testing.T, tok *Tokens, name string) string {
	t.Helper()
	s, _, err := tok.Issue(User{Name: name, Role: RoleReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTokens_Revoke: a revoked token is refused, in the process that
// revoked it and in another that shares the list's file, and also by a
// process that opens the file later; the user's other tokens, and other
// users', stay good; an expired entry is forgotten.
func TestTokens_Revoke(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "file"}[shared], func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
			path := ""
			if shared {
				path = RevocationsFileFor(filepath.Join(t.TempDir(), "q.duckdb.tokenkey"))
			}
			a, _ := revokingTokens(t, path, clock)
			gone, kept, other := issueToken(t, a, "bob"), issueToken(t, a, "bob"), issueToken(t, a, "carol")
			if err := a.Revoke(gone); err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			checkers := map[string]*Tokens{"the revoking process": a}
			if shared {
				b, _ := revokingTokens(t, path, clock)
				checkers["a replica"] = b
			}
			for name, tok := range checkers {
				if _, err := tok.Verify(gone); !errors.Is(err, ErrBadToken) {
					t.Errorf("%s: the revoked token: %v, want ErrBadToken", name, err)
				}
				for _, good := range []string{kept, other} {
					if _, err := tok.Verify(good); err != nil {
						t.Errorf("%s: a token not revoked: %v", name, err)
					}
				}
			}
			if shared {
				late, _ := revokingTokens(t, path, clock)
				if _, err := late.Verify(gone); !errors.Is(err, ErrBadToken) {
					t.Errorf("a process started later: the revoked token: %v, want ErrBadToken", err)
				}
			}
			if err := a.Revoke("not a token"); err != nil {
				t.Errorf("Revoke of garbage: %v, want nothing to do", err)
			}
			clock.Add(2 * time.Hour)
			if _, err := a.Verify(gone); !errors.Is(err, ErrTokenExpired) {
				t.Errorf("the revoked token once expired: %v, want ErrTokenExpired", err)
			}
		})
	}
}

// TestRevocations_Bounded: one user who logs in and out in a loop cannot
// grow the list without bound: past the per-user bound, a logout revokes
// every token of the user issued so far, in one entry, and tokens issued
// after it are good; dead lines are compacted away from the file.
func TestRevocations_Bounded(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "revoked")
	tok, r := revokingTokens(t, path, clock)
	r.maxPerUser, r.compactAt = 5, 16
	before := issueToken(t, tok, "carol")
	for i := range 6 {
		if err := tok.Revoke(issueToken(t, tok, "bob")); err != nil {
			t.Fatalf("revoke %d: %v", i, err)
		}
	}
	r.mu.Lock()
	ids, all := r.perUser["bob"], r.before["bob"]
	r.mu.Unlock()
	if ids != 0 || all.cutoff.IsZero() {
		t.Fatalf("bob after 6 logouts: %d entries by id, revoked-before %v; want one entry for all his tokens", ids, all.cutoff)
	}
	if _, err := tok.Verify(before); err != nil {
		t.Errorf("carol's token: %v", err)
	}
	clock.Add(2 * time.Second)
	if _, err := tok.Verify(issueToken(t, tok, "bob")); err != nil {
		t.Errorf("a token bob got after the cutoff: %v", err)
	}

	// Every entry dies with its token; the next revocations rewrite the
	// file with the live ones alone.
	clock.Add(2 * time.Hour)
	for range 20 {
		if err := tok.Revoke(issueToken(t, tok, "carol")); err != nil {
			t.Fatal(err)
		}
		clock.Add(2 * time.Second)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > 20 {
		t.Errorf("the file holds %d lines after compaction, want at most the 20 live ones", n)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
}
