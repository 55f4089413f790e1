package admit

import (
	"errors"
	"testing"
)

func TestConns_Admit(t *testing.T) {
	type login struct {
		user  string
		admin bool
		ok    bool
		// perUser: refused by the user's own limit rather than the
		// endpoint's.
		perUser bool
	}
	tests := []struct {
		name   string
		lim    ConnLimits
		logins []login
	}{
		{"one user takes no more than their share", ConnLimits{Max: 10, AdminReserved: 2, PerUser: 3}, []login{
			{"ro", false, true, false}, {"ro", false, true, false}, {"ro", false, true, false},
			{"ro", false, false, true}, {"rw", false, true, false},
		}},
		{"the reserve is the admins'", ConnLimits{Max: 4, AdminReserved: 2}, []login{
			{"a", false, true, false}, {"b", false, true, false}, {"c", false, false, false},
			{"admin", true, true, false}, {"admin", true, true, false}, {"admin", true, false, false},
		}},
		{"admins have no per-user limit", ConnLimits{Max: 10, PerUser: 1}, []login{
			{"admin", true, true, false}, {"admin", true, true, false}, {"u", false, true, false}, {"u", false, false, true},
		}},
		{"no limits", ConnLimits{}, []login{{"u", false, true, false}, {"u", false, true, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConns("test", tt.lim)
			var releases []func()
			for i, l := range tt.logins {
				release, err := c.Admit(l.user, l.admin)
				var ce *ConnError
				switch {
				case l.ok && err != nil:
					t.Fatalf("login %d (%s): %v, want it admitted", i, l.user, err)
				case !l.ok && !errors.As(err, &ce):
					t.Fatalf("login %d (%s): %v, want a *ConnError", i, l.user, err)
				case !l.ok && ce.PerUser != l.perUser:
					t.Fatalf("login %d (%s): %v; got per-user %v, want %v", i, l.user, err, ce.PerUser, l.perUser)
				}
				if release != nil {
					releases = append(releases, release)
				}
			}
			for _, r := range releases {
				r()
				r() // a second release gives nothing back twice
			}
			if got, _ := c.Counts(); got != 0 {
				t.Errorf("after every release: %d logged in, want 0", got)
			}
			for _, l := range tt.logins {
				if _, err := c.Admit(l.user, l.admin); err != nil {
					t.Fatalf("a login after every release: %v", err)
				}
				break
			}
		})
	}
}

// TestConns_Pend: past MaxPending, the oldest connection still logging in
// is closed, never one that has logged in (Done).
func TestConns_Pend(t *testing.T) {
	c := NewConns("test", ConnLimits{MaxPending: 3})
	closed := map[int]bool{}
	var ps []*Pending
	for i := range 5 {
		ps = append(ps, c.Pend(func() { closed[i] = true }))
		if i == 1 {
			ps[1].Done() // logged in: out of the pool
		}
	}
	if want := map[int]bool{0: true}; len(closed) != 1 || !closed[0] {
		t.Errorf("closed %v, want %v: only the oldest still logging in", closed, want)
	}
	if _, pending := c.Counts(); pending != 3 {
		t.Errorf("pending %d, want 3", pending)
	}
	for _, p := range ps {
		p.Done()
		p.Done()
	}
	if _, pending := c.Counts(); pending != 0 {
		t.Errorf("pending after Done %d, want 0", pending)
	}
}
