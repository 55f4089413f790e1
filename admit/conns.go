package admit

import (
	"container/list"
	"fmt"
	"sync"
)

// ConnLimits bound one endpoint's client connections, in two pools: the
// connections that have logged in, and those still logging in (the TLS
// handshake, the protocol's greeting and the password check). The second
// pool is apart so that sockets that never log in cannot take the
// first's slots, and bounded so that they cannot take the process's
// file descriptors either.
type ConnLimits struct {
	// Max is how many logged-in connections the endpoint takes; 0 is no
	// bound.
	Max int
	// AdminReserved of them only admins may take: the last ones, so an
	// admin can still log in to see who holds the rest, and end them.
	AdminReserved int
	// PerUser bounds one user's logged-in connections, admins' excepted;
	// 0 is no bound.
	PerUser int
	// MaxPending bounds the connections still logging in; 0 is no bound.
	// When a new one comes while MaxPending wait, the oldest is closed:
	// a client that is really logging in takes milliseconds, so the
	// oldest is the likeliest to be a socket left idle on purpose, and a
	// new client always gets its turn.
	MaxPending int
}

// Conns counts one endpoint's connections against its ConnLimits. It is
// safe for concurrent use.
type Conns struct {
	endpoint string
	lim      ConnLimits

	mu      sync.Mutex
	total   int
	users   map[string]int
	pending *list.List // of *Pending, oldest first
}

// NewConns returns the connection counts of the endpoint (named in
// metrics and errors: "flight", "mysql").
func NewConns(endpoint string, lim ConnLimits) *Conns {
	return &Conns{endpoint: endpoint, lim: lim, users: map[string]int{}, pending: list.New()}
}

// Limits returns the limits the counts hold to.
func (c *Conns) Limits() ConnLimits { return c.lim }

// ConnError is a logged-in connection refused for a limit.
type ConnError struct {
	// PerUser is true when the user's own limit refused it, false when
	// the endpoint's was full (for the user's role).
	PerUser bool
	// User is the user refused, and Limit the number they reached.
	User  string
	Limit int
}

func (e *ConnError) Error() string {
	if e.PerUser {
		return fmt.Sprintf("user %s already has %d connections, as many as one user may hold (the server's --max-user-connections); close idle ones or retry later", e.User, e.Limit)
	}
	return fmt.Sprintf("too many connections: %d clients are logged in (the server's --max-connections, the last --admin-reserved-connections of them kept for admins); close idle connections or retry later", e.Limit)
}

// Admit takes a slot for a connection that has logged in as user, an
// admin or not, and returns the function that gives it back (once, when
// the connection closes), or a *ConnError.
func (c *Conns) Admit(user string, admin bool) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if max := c.lim.Max; max > 0 {
		limit := max
		if !admin {
			limit = max - c.lim.AdminReserved
		}
		if c.total >= limit {
			connsRefused.WithLabelValues(c.endpoint, "max").Inc()
			return nil, &ConnError{User: user, Limit: limit}
		}
	}
	if !admin && c.lim.PerUser > 0 && c.users[user] >= c.lim.PerUser {
		connsRefused.WithLabelValues(c.endpoint, "user").Inc()
		return nil, &ConnError{PerUser: true, User: user, Limit: c.lim.PerUser}
	}
	c.total++
	c.users[user]++
	connsLoggedIn.WithLabelValues(c.endpoint).Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.total--
			if c.users[user]--; c.users[user] <= 0 {
				delete(c.users, user)
			}
			c.mu.Unlock()
			connsLoggedIn.WithLabelValues(c.endpoint).Dec()
		})
	}, nil
}

// Pending is a connection still logging in: it holds a place in the
// pending pool until Done.
type Pending struct {
	c     *Conns
	elem  *list.Element
	close func()
}

// Pend puts a new connection in the pending pool; close ends it, should
// it be the oldest when the pool is full. The caller calls Done once it
// logged in or closed.
func (c *Conns) Pend(close func()) *Pending {
	p := &Pending{c: c, close: close}
	c.mu.Lock()
	p.elem = c.pending.PushBack(p)
	var evict *Pending
	if max := c.lim.MaxPending; max > 0 && c.pending.Len() > max {
		evict = c.pending.Remove(c.pending.Front()).(*Pending)
		evict.elem = nil
	}
	c.mu.Unlock()
	connsPending.WithLabelValues(c.endpoint).Inc()
	if evict != nil {
		connsPending.WithLabelValues(c.endpoint).Dec()
		connsEvicted.WithLabelValues(c.endpoint).Inc()
		evict.close()
	}
	return p
}

// Done takes the connection out of the pending pool. It may be called
// more than once.
func (p *Pending) Done() {
	if p == nil {
		return
	}
	p.c.mu.Lock()
	e := p.elem
	if e != nil {
		p.c.pending.Remove(e)
		p.elem = nil
	}
	p.c.mu.Unlock()
	if e != nil {
		connsPending.WithLabelValues(p.c.endpoint).Dec()
	}
}

// Counts returns the logged-in connections, and the pending ones.
func (c *Conns) Counts() (loggedIn, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.pending.Len()
}
