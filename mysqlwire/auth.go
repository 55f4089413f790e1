package mysqlwire

import (
	"errors"
	"net"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
)

// authServer offers vitess one login method, mysql_native_password,
// checked against the server's Users. A client that asks for another
// method (caching_sha2_password, say) is switched to it.
type authServer struct{ srv *Server }

func (a *authServer) AuthMethods() []mysql.AuthMethod { return []mysql.AuthMethod{nativeAuth{a.srv}} }

func (a *authServer) DefaultAuthMethodDescription() mysql.AuthMethodDescription {
	return mysql.MysqlNativePassword
}

// nativeAuth is the mysql_native_password method.
type nativeAuth struct{ srv *Server }

func (n nativeAuth) Name() mysql.AuthMethodDescription   { return mysql.MysqlNativePassword }
func (n nativeAuth) HandleUser(*mysql.Conn, string) bool { return true }

// AllowClearTextWithoutTLS is true: the password never crosses the wire.
func (n nativeAuth) AllowClearTextWithoutTLS() bool { return true }

// AuthPluginData is a fresh 20-byte salt and its terminating NUL.
func (n nativeAuth) AuthPluginData() ([]byte, error) {
	salt, err := mysql.NewSalt()
	if err != nil {
		return nil, err
	}
	return append(salt, 0), nil
}

// HandleAuthPluginData checks the client's scramble of the salt.
func (n nativeAuth) HandleAuthPluginData(c *mysql.Conn, user string, serverData, clientData []byte, remote net.Addr) (_ mysql.Getter, err error) {
	defer n.srv.recoverConnPanic(c, &err)
	host := remoteHost(remote)
	denied := func() error {
		authFailures.Inc()
		n.srv.log.Warn("mysql login refused", logUser, user, logRemote, remote.String())
		using := "NO"
		if len(clientData) > 0 {
			using = "YES"
		}
		return mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError,
			"Access denied for user '%s'@'%s' (using password: %s)", user, host, using)
	}
	if len(serverData) == 0 || serverData[len(serverData)-1] != 0 {
		return nil, denied()
	}
	if n.srv.opts.RequireTLS && !c.TLSEnabled() {
		authFailures.Inc()
		n.srv.log.Warn("mysql login refused: no TLS", logUser, user, logRemote, remote.String())
		return nil, mysql.NewSQLError(erSecureTransportRequired, mysql.SSUnknownSQLState,
			"Connections using insecure transport are prohibited: this server requires TLS (quiver serve --mysql-require-tls); connect with TLS (mysql --ssl, or --ssl-mode=REQUIRED)")
	}
	u := auth.User{Name: user, Role: auth.RoleAdmin}
	if u.Name == "" {
		u.Name = auth.AnonymousName
	}
	if !n.srv.authDisabled() {
		g := guardOf(n.srv.opts.Users)
		if g != nil {
			var le *auth.LimitedError
			if err := g.Allow(guardProto, user, host); errors.As(err, &le) {
				authFailures.Inc()
				return nil, mysql.NewSQLError(mysql.ERHostIsBlocked, mysql.SSUnknownSQLState,
					"Too many failed logins for user '%s' or from '%s'; try again in %v", user, host, max(le.Wait.Round(time.Second), time.Second))
			}
		}
		var err error
		if u, err = n.srv.opts.Users.VerifyNativePassword(user, serverData[:len(serverData)-1], clientData); err != nil {
			if g != nil {
				g.Failed(guardProto, user, host, err)
			}
			return nil, denied()
		}
		if g != nil {
			g.Succeeded(guardProto, u.Name, host)
		}
	}
	// The connection limits count logged-in users, checked once the
	// password has told who this is: the admins' reserve and the
	// per-user bound depend on it.
	release, err := n.srv.conns.Admit(u.Name, u.Role.IsAdmin())
	if err != nil {
		var ce *admit.ConnError
		errors.As(err, &ce)
		connectionsRefused.Inc()
		n.srv.log.Warn("mysql login refused: too many connections", logUser, u.Name, logRemote, remote.String(), logErr, err)
		if ce != nil && ce.PerUser {
			return nil, mysql.NewSQLError(mysql.ERTooManyUserConnections, mysql.SSUnknownSQLState,
				"User %s already has more than 'max_user_connections' active connections: %d, the server's --max-user-connections; close idle ones or retry later", u.Name, ce.Limit)
		}
		return nil, mysql.NewSQLError(mysql.ERConCount, mysql.SSUnknownSQLState,
			"Too many connections: %v", err)
	}
	sess := sessionOf(c)
	if sess == nil {
		release()
		return callerID(u.Name), nil
	}
	if err := sess.login(u, host, release); err != nil {
		release()
		n.srv.log.Warn("mysql login: no engine connection", logUser, u.Name, logErr, err)
		return nil, sqlError(err)
	}
	return callerID(u.Name), nil
}

// guardProto names MySQL logins to the login guard.
const guardProto = "mysql"

// guardOf is the login guard of users, which rate-limits and audits
// logins (*auth.Store has one when the server gave it one), or nil.
func guardOf(users Users) *auth.Guard {
	if g, ok := users.(interface{ Guard() *auth.Guard }); ok {
		return g.Guard()
	}
	return nil
}

// callerID is the user data vitess keeps on a connection.
type callerID string

func (c callerID) Get() *querypb.VTGateCallerID {
	return &querypb.VTGateCallerID{Username: string(c)}
}

func remoteHost(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}
