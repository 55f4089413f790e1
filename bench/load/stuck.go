package load

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"
)

// stuckAfter is how long an operation must have run at a window's end for
// the window to report it (stuckOps): far longer than the server's queue
// timeout, so that the server should have answered by then, one way or
// another.
const stuckAfter = 60 * time.Second

// stuckOps describes the clients whose running operation started more
// than after ago: which operation, for how long, and, for MySQL clients,
// both ends of their connection as the kernel sees them (ss); then the
// stacks of the bench's goroutines that run in few copies, where a client
// stuck alone shows. It returns "" when no operation is that old.
func stuckOps(clients []*user, mysqlAddr string, after time.Duration) string {
	now := time.Now()
	var b strings.Builder
	var ports []string
	for _, c := range clients {
		ns := c.opStart.Load()
		if ns == 0 || now.Sub(time.Unix(0, ns)) < after {
			continue
		}
		fmt.Fprintf(&b, "client %d (%s) has been in %s for %.1fs", c.id, c.proto,
			opNames[c.opNow.Load()], now.Sub(time.Unix(0, ns)).Seconds())
		if c.proto == protoMySQL {
			if a := c.local.Load(); a != nil {
				fmt.Fprintf(&b, ", its latest connection from %s", *a)
				if _, port, err := net.SplitHostPort(*a); err == nil {
					ports = append(ports, port)
				}
			}
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return ""
	}
	if _, port, err := net.SplitHostPort(mysqlAddr); err == nil && len(ports) > 0 {
		// The MySQL listener (its Recv-Q is the accept queue), then both
		// ends of each stuck client's connection.
		var filter []string
		for _, p := range ports {
			filter = append(filter, "sport = :"+p, "dport = :"+p)
		}
		ss(&b, "-tlnoi", "( sport = :"+port+" )")
		ss(&b, "-tanoi", "( "+strings.Join(filter, " or ")+" )")
	}
	var prof bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&prof, 1)
	b.WriteString("the bench's goroutines in groups of at most 5 that run a load client:\n")
	for _, g := range strings.Split(prof.String(), "\n\n") {
		var n int
		if _, err := fmt.Sscanf(g, "%d @", &n); err != nil || n > 5 || !strings.Contains(g, "user") {
			continue
		}
		b.WriteString(g)
		b.WriteString("\n\n")
	}
	return b.String()
}

// ss writes what ss says with args into b.
func ss(b *strings.Builder, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ss", args...).CombinedOutput()
	fmt.Fprintf(b, "ss %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		fmt.Fprintf(b, "ss: %v\n", err)
	}
}
