// Package console is quiver's web console, served on the HTTP port: a
// single page (embedded, assets/) that runs SQL and shows results streamed
// as Arrow IPC, the schema, and live charts of the server's own metrics;
// quiver ingest serves the same page with its ingest view.
//
// The API under /api/ (see api.go) uses the same users, tokens and roles
// as Flight: a login exchanges Basic credentials for the bearer token,
// kept in an HttpOnly, SameSite=Strict cookie, and every state-changing
// request carries a CSRF token derived from it.
package console
