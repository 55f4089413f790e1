package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/quiverdata/quiver/auth"
)

// Protect serves h (the server's /metrics) on the console's terms: on a
// server without users, only to loopback clients naming a loopback host,
// as the API; with users, only to a logged-in user of any role, who sends
// the console's session cookie, a bearer token ("Authorization: Bearer
// …", as Flight issues) or Basic credentials, which count against the
// same login limits as every endpoint's. Any role may read: a logged-in
// user's console shows the same metrics live.
func (c *Console) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.authOn() {
			LocalOnly(h).ServeHTTP(w, r)
			return
		}
		if err := c.requestUser(r); err != nil {
			if errors.Is(err, auth.ErrRateLimited) {
				http.Error(w, err.Error(), http.StatusTooManyRequests)
				return
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="quiver", charset="UTF-8"`)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// requestUser checks a request's credentials: Basic or Bearer in its
// Authorization header, else the session cookie.
func (c *Console) requestUser(r *http.Request) error {
	if name, password, ok := r.BasicAuth(); ok {
		if _, err := c.opts.Users.Login(guardProto, name, password, r.RemoteAddr); err != nil {
			if errors.Is(err, auth.ErrRateLimited) {
				return err
			}
			return errors.New("authentication failed for user " + name)
		}
		return nil
	}
	if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		if _, err := c.opts.Tokens.Verify(strings.TrimSpace(token)); err != nil {
			return errors.New("invalid or expired token: log in again")
		}
		return nil
	}
	if _, _, ok := c.session(r); ok {
		return nil
	}
	return errors.New("log in first: send Basic credentials, a bearer token or the console's session cookie (or serve metrics to scrapers with quiver serve --metrics-addr)")
}

// LocalOnly serves h only to loopback clients whose request names a
// loopback host (localhost, 127.0.0.1, [::1]), as the console does on a
// server without users: a page on another site that rebinds its own name
// to 127.0.0.1 names its own host, and is refused.
func LocalOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := localOnly(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
