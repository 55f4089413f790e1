// Package consoletest gives tests the browser that drives the web console.
package consoletest

import (
	"os"
	"testing"

	"github.com/quiverdata/quiver/internal/consolepage"
)

// Chromium returns the browser's path, or skips the test when there is
// none, or when -short is set. With QUIVER_REQUIRE_BROWSER=1 (as CI sets)
// a missing browser fails the test instead, and -short does not skip it.
func Chromium(t testing.TB) string {
	t.Helper()
	required := os.Getenv("QUIVER_REQUIRE_BROWSER") == "1"
	if testing.Short() && !required {
		t.Skip("drives a browser")
	}
	p, err := consolepage.ChromiumPath()
	if err != nil {
		if required {
			t.Fatalf("QUIVER_REQUIRE_BROWSER=1: %v", err)
		}
		t.Skipf("skipping the browser test: %v (QUIVER_REQUIRE_BROWSER=1 makes this a failure)", err)
	}
	return p
}
