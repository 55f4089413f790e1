package auth

import "context"

type userKey struct{}

// ContextWithUser returns a copy of ctx that carries u. The interceptors do
// this for every authenticated call; other endpoints (the MySQL protocol)
// and tests may do it themselves.
func ContextWithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFromContext returns the caller put in ctx by the interceptors or by
// ContextWithUser. It reports false for calls that were let through
// without authentication (gRPC health checks).
func UserFromContext(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}
