package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/workload"
)

// ourNamespaces lists the namespaces this process's link suite made.
func ourNamespaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil
	}
	var ns []string
	prefix := linkPrefix + strconv.Itoa(os.Getpid()) + "-"
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); strings.HasPrefix(name, prefix) {
			ns = append(ns, name)
		}
	}
	return ns
}

// TestLink_ShapedLink runs the link suite small: two namespaces, a
// shaped veth, quiver serve in one and the client in the other. It needs
// root and network namespaces, and skips without them.
func TestLink_ShapedLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 (ip, tc)")
	}
	bin := testsvc.QuiverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Link(ctx, LinkConfig{
		Bin: bin, BenchBin: testsvc.BenchBinary(t), Workloads: []workload.Workload{workload.Workloads["num20"]}, Rows: 100_000,
		Compressions: []string{"none", "lz4", "auto"}, Reps: 1, Dir: t.TempDir(),
	})
	if errors.Is(err, ErrLinkUnavailable) {
		t.Skipf("shaped link unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 2 {
		t.Fatalf("got %d tables, want the link's and loopback's", len(rep.Tables))
	}
	for _, tab := range rep.Tables {
		if len(tab.Rows) != 4 { // none, lz4, auto, raw TCP
			t.Errorf("%s: %d rows, want 4", tab.Title, len(tab.Rows))
		}
	}
	for _, r := range rep.Results {
		if r.Contender != "raw TCP" && r.Rows != 100_000 {
			t.Errorf("%s %s: %d rows fetched, want 100000", r.Table, r.Contender, r.Rows)
		}
	}
	if ns := ourNamespaces(t); len(ns) > 0 {
		t.Errorf("namespaces left behind: %v", ns)
	}
}

// TestLink_CleansUpOnFailure checks the namespaces go away when the suite
// fails after making them (here: the server binary does not exist).
func TestLink_CleansUpOnFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 (ip, tc)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Link(ctx, LinkConfig{
		Bin: filepath.Join(t.TempDir(), "no-such-quiver"), Workloads: []workload.Workload{workload.Workloads["num20"]},
		Rows: 1000, Reps: 1, SkipLoopback: true, Dir: t.TempDir(),
	})
	if errors.Is(err, ErrLinkUnavailable) {
		t.Skipf("shaped link unavailable here: %v", err)
	}
	if err == nil {
		t.Fatal("got no error with a missing server binary")
	}
	t.Logf("failed as it should: %v", err)
	if ns := ourNamespaces(t); len(ns) > 0 {
		t.Errorf("namespaces left behind after a failure: %v", ns)
	}
}

// TestServeTCPSource checks the link's raw-socket baseline on loopback:
// it announces its address, serves exactly the bytes asked for, and
// returns nil once its context ends.
func TestServeTCPSource(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ServeTCPSource(ctx, "127.0.0.1:0", pw) }()
	line := make([]byte, 256)
	n, err := pr.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(string(line[:n])), "quiver: tcp listening on ")
	if !ok {
		t.Fatalf("announcement %q", line[:n])
	}
	for _, want := range []int64{1, 1 << 20, 3<<20 + 17} {
		f, err := RecvTCP(addr, want)
		if err != nil {
			t.Fatal(err)
		}
		if f.Bytes != want {
			t.Errorf("asked for %d bytes, got %d", want, f.Bytes)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeTCPSource did not return after its context ended")
	}
}
