package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/internal/version"
)

// cookieName holds the session's bearer token.
const cookieName = "quiver_session"

// csrfHeader carries the CSRF token on every state-changing request but
// the login; a form (the download) carries it as the field csrfField.
const (
	csrfHeader = "X-CSRF-Token"
	csrfField  = "csrf"
)

// authOn reports whether the console authenticates: it does whenever the
// server has users.
func (c *Console) authOn() bool { return c.opts.Users != nil && c.opts.Users.Len() > 0 }

// anonymous is the user of a server without users, as on Flight.
var anonymous = auth.User{Name: auth.AnonymousName, Role: auth.RoleAdmin}

// session returns the request's user and the token its CSRF token is
// derived from; ok is false when the request has no valid session.
func (c *Console) session(r *http.Request) (u auth.User, token string, ok bool) {
	if !c.authOn() {
		return anonymous, "", true
	}
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return auth.User{}, "", false
	}
	u, err = c.opts.Tokens.Verify(ck.Value)
	if err != nil {
		return auth.User{}, "", false
	}
	return u, ck.Value, true
}

// csrfToken is the CSRF token for a session: an HMAC of its bearer token
// under a key of this process (without users, of the process key alone).
// A page on another origin can read neither the HttpOnly cookie nor this
// console's responses, so it cannot produce it.
func (c *Console) csrfToken(token string) string {
	m := hmac.New(sha256.New, c.csrfKey)
	m.Write([]byte("quiver console csrf\x00"))
	m.Write([]byte(token))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func newKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("console: read random key: %v", err))
	}
	return k
}

// checkCSRF refuses a state-changing request without the session's CSRF
// token, or sent from another site: by the browser's Sec-Fetch-Site, or,
// for browsers that send none, by an Origin that names another host than
// the request's.
func (c *Console) checkCSRF(r *http.Request, token, got string) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return errors.New("refused: a request from another site (CSRF protection)")
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		return fmt.Errorf("refused: a request from %q, another origin than this console's (CSRF protection)", origin)
	}
	want := c.csrfToken(token)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errors.New("missing or wrong CSRF token: reload the console and try again")
	}
	return nil
}

// sameOrigin reports whether an Origin header names the host the request
// was sent to: its Host, or the X-Forwarded-Host a reverse proxy in front
// of the console set (a page cannot set that header on a browser's
// request). Browsers leave the scheme's default port out of Origin; so
// may Host. An opaque origin ("null": a sandboxed frame, a redirect from
// elsewhere) is never the console's.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	want := []string{r.Host}
	for _, h := range r.Header.Values("X-Forwarded-Host") {
		for _, v := range strings.Split(h, ",") {
			want = append(want, strings.TrimSpace(v))
		}
	}
	def := map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
	for _, h := range want {
		if strings.EqualFold(strings.TrimSuffix(h, def), strings.TrimSuffix(u.Host, def)) {
			return true
		}
	}
	return false
}

// localOnly refuses, on a server without users, a client not on loopback
// or a Host header naming anything but loopback (a DNS-rebinding page
// would name its own host).
func localOnly(r *http.Request) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("without users the HTTP port serves only loopback clients, not %s", host)
	}
	name := r.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	name = strings.Trim(name, "[]")
	if strings.EqualFold(name, "localhost") {
		return nil
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("without users the HTTP port answers only requests for localhost or a loopback address, not %q", r.Host)
}

type sessionInfo struct {
	// Version is the server's version and commit, as quiver version
	// prints them.
	Version string  `json:"version"`
	Kind    string  `json:"kind"`
	Auth    bool    `json:"auth"`
	User    *string `json:"user"`
	Role    *string `json:"role"`
	CSRF    *string `json:"csrf"`
}

func (c *Console) handleSession(w http.ResponseWriter, r *http.Request) {
	info := sessionInfo{Version: version.Get().Short(), Kind: c.opts.Kind, Auth: c.authOn()}
	if u, token, ok := c.session(r); ok {
		name, role, csrf := u.Name, u.Role.String(), c.csrfToken(token)
		info.User, info.Role, info.CSRF = &name, &role, &csrf
	}
	writeJSON(w, http.StatusOK, info)
}

// handleLogin exchanges Basic credentials for a bearer token, set as the
// session cookie. Failed logins count against the same guard as Flight's
// and MySQL's.
func (c *Console) handleLogin(w http.ResponseWriter, r *http.Request) {
	if !c.authOn() {
		writeError(w, http.StatusBadRequest, "auth", "this server has no users: the console needs no login")
		return
	}
	name, password, ok := r.BasicAuth()
	if !ok {
		writeError(w, http.StatusUnauthorized, "auth", "send the user name and password as Basic credentials")
		return
	}
	u, err := c.opts.Users.Login(guardProto, name, password, r.RemoteAddr)
	if errors.Is(err, auth.ErrRateLimited) {
		loginsTotal.WithLabelValues("limited").Inc()
		writeError(w, http.StatusTooManyRequests, "auth", err.Error())
		return
	}
	if err != nil {
		loginsTotal.WithLabelValues("failed").Inc()
		writeError(w, http.StatusUnauthorized, "auth", fmt.Sprintf("authentication failed for user %q", name))
		return
	}
	loginsTotal.WithLabelValues("ok").Inc()
	token, expires, err := c.opts.Tokens.Issue(u)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "auth", err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.opts.SecureCookies || r.TLS != nil})
	c.log.Info("console login", "user", u.Name, "peer", r.RemoteAddr)
	role, csrf := u.Role.String(), c.csrfToken(token)
	writeJSON(w, http.StatusOK, sessionInfo{Kind: c.opts.Kind, Auth: true, User: &u.Name, Role: &role, CSRF: &csrf})
}

// handleLogout revokes the session's token, which Flight accepts as well,
// on every endpoint and every replica that shares the token key's file
// (auth.Revocations), and clears the cookie.
func (c *Console) handleLogout(w http.ResponseWriter, r *http.Request, u auth.User) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", Expires: time.Unix(0, 0), MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.opts.SecureCookies || r.TLS != nil})
	if ck, err := r.Cookie(cookieName); err == nil && c.opts.Tokens != nil {
		if err := c.opts.Tokens.Revoke(ck.Value); err != nil {
			c.log.Error("console logout: token not revoked", "user", u.Name, "err", err)
			writeError(w, http.StatusInternalServerError, "internal",
				"logged out here, but the session's token could not be revoked and stays valid until it expires: "+err.Error())
			return
		}
	}
	c.log.Info("console logout", "user", u.Name, "peer", r.RemoteAddr)
	w.WriteHeader(http.StatusNoContent)
}

// guardProto names console logins to the login guard.
const guardProto = "http"
