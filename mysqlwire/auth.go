package mysqlwire

import (
	"errors"
	"net"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

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
	if max := n.srv.opts.MaxConnections; max > 0 {
		if open := n.srv.sessionCount(); open > max {
			connectionsRefused.Inc()
			n.srv.log.Warn("mysql login refused: too many connections", logUser, user, logRemote, remote.String(), "open", open-1)
			return nil, mysql.NewSQLError(mysql.ERConCount, mysql.SSUnknownSQLState,
				"Too many connections: %d clients are connected (the server's --max-connections); close idle connections or retry later", max)
		}
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
	if sess := sessionOf(c); sess != nil {
		if err := sess.login(u, host); err != nil {
			n.srv.log.Warn("mysql login: no engine connection", logUser, u.Name, logErr, err)
			return nil, sqlError(err)
		}
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
