package testutil

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/client"
)

// SessionCookie sets a Flight session option through c and returns a
// context that sends the session cookie back (quiver's client has no
// cookie middleware) with the server's answer. Use the context with
// c.Context for the calls that should see the option.
func SessionCookie(t testing.TB, c *client.Client, name, value string) (context.Context, *flight.SetSessionOptionsResult) {
	t.Helper()
	ctx := c.Context(context.Background())
	v, err := flight.NewSessionOptionValue(value)
	if err != nil {
		t.Fatal(err)
	}
	// The session, options included, comes back in a cookie in the
	// trailer (the header holds the fresh, empty session).
	var trailer metadata.MD
	res, err := c.SQL().SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{name: &v}}, grpc.Trailer(&trailer))
	if err != nil {
		t.Fatal(err)
	}
	sc := trailer.Get("set-cookie")
	if len(sc) == 0 {
		t.Fatal("no session cookie in the trailer")
	}
	kv, _, _ := strings.Cut(sc[len(sc)-1], ";")
	return metadata.AppendToOutgoingContext(context.Background(), "cookie", kv), res
}
