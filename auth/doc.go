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
// The MySQL endpoint authenticates with [Store.VerifyNativePassword].
package auth
