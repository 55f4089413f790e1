// Package auth holds quiver's users, roles, bearer tokens, gRPC
// authentication interceptors and TLS configuration.
//
// A server builds a [Store] of users, a [Tokens] issuer whose key is loaded
// with [LoadOrCreateKey] (so tokens survive a restart), and an
// [Authenticator] that turns both into gRPC interceptors:
//
//	users := auth.NewStore()
//	users.Add("alice", "secret", auth.RoleAdmin)
//	key, _ := auth.LoadOrCreateKey(auth.KeyFileFor(dbPath))
//	tokens, _ := auth.NewTokens(key, users)
//	a, _ := auth.NewAuthenticator(users, tokens, auth.WithLogger(logger))
//	srv := grpc.NewServer(append(a.ServerOptions(), grpc.Creds(creds))...)
//	flight.RegisterFlightServiceServer(srv, a.WrapFlightServer(flightsql.NewFlightServer(impl)))
//
// Clients authenticate the way Arrow Flight clients (ADBC, JDBC, arrow-go,
// pyarrow) expect: "authorization: Basic base64(user:pass)" on a Handshake
// or on any call is answered with the response header
// "authorization: Bearer <token>", and later calls send that header.
// Handlers read the caller with [UserFromContext].
//
// A token is revoked before it expires by [Tokens.Revoke] (the console's
// logout does): it goes on a [Revocations] list that [Tokens.Verify]
// checks, so the token stops working on every endpoint at once. The list
// is kept beside the token key's file ([RevocationsFileFor]), appended to
// under a file lock and read back by every process that shares the key
// within [DefaultRevocationRefresh], so replicas refuse each other's
// logged-out tokens; an entry lasts as long as its token would have, and
// one user's entries are bounded ([MaxRevokedPerUser]). A key given as
// hex has no file, and its process keeps the list to itself. Short-lived,
// refreshed console tokens were the other way: they were not chosen,
// because a token logged out would still work until it expired, and
// Flight clients hold the same tokens for their whole lifetime.
//
// The MySQL endpoint authenticates with [Store.VerifyNativePassword].
//
// A real server keeps its users in a users file ([ReadUsersFile],
// [EditUsersFile]: Argon2id hashes, mode 0600), loaded into the Store by
// [LoadUsersFile], which reloads it on request (SIGHUP) and serves the
// admin-only quiver.user Flight action ([UsersFile.HandleAction]); quiver
// user edits the same file with a [UserRequest]. A [Guard] given to the
// Store with [WithGuard] rate-limits failed logins per user and per address
// on every endpoint, and writes the logins to the audit log:
//
//	guard, _ := auth.NewGuard(auth.WithAuditLog(logger.With("audit", true)))
//	users := auth.NewStore(auth.WithGuard(guard))
//	file, _ := auth.LoadUsersFile("users", users, logger.With("audit", true))
package auth
