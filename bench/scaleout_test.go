package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/testsvc"
)

func TestScaleOutNet(t *testing.T) {
	rs := scaleOutNet(123456, 3, "10.201")
	if len(rs) != 3 {
		t.Fatalf("got %d replicas, want 3", len(rs))
	}
	r := rs[2]
	for _, tt := range []struct{ name, got, want string }{
		{"namespace", r.ns, "qvlink-123456-r2"},
		{"device", r.dev, "qvl123456r2"},
		{"host device", r.hostDev, "qvl123456h2"},
		{"address", r.addr, "10.201.2.1"},
		{"host address", r.hostAddr, "10.201.2.2"},
		{"flight", r.flight, "10.201.2.1:31337"},
		{"http", r.http, "10.201.2.1:32337"},
		{"peers", peersOf(rs, 1), "10.201.0.1:31337,10.201.2.1:31337"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	// Interface names are at most 15 bytes; the largest PID Linux hands
	// out has 7 digits.
	for _, r := range scaleOutNet(4194304, 250, "10.201") {
		if len(r.dev) > 15 || len(r.hostDev) > 15 {
			t.Errorf("device names %q, %q longer than 15 bytes", r.dev, r.hostDev)
		}
	}
}

func TestCheckSubnet(t *testing.T) {
	for _, s := range []string{"10.201", "192.168", "0.0"} {
		if err := checkSubnet(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"", "10", "10.201.0", "10.300", "a.b"} {
		if err := checkSubnet(s); err == nil {
			t.Errorf("%q: got no error", s)
		}
	}
}

func TestShapedVethSteps(t *testing.T) {
	steps := shapedVethSteps(vethEnd{"ns1", "a0", "10.0.0.1/30"}, vethEnd{"", "b0", "10.0.0.2/30"}, tbfShape{"1gbit", "1mb", "10ms"})
	var got []string
	for _, s := range steps {
		got = append(got, strings.Join(s, " "))
	}
	want := []string{
		"ip link add a0 type veth peer name b0",
		"ip link set a0 netns ns1",
		"ip -n ns1 addr add 10.0.0.1/30 dev a0",
		"ip -n ns1 link set a0 up",
		"tc -n ns1 qdisc add dev a0 root tbf rate 1gbit burst 1mb latency 10ms",
		"ip addr add 10.0.0.2/30 dev b0",
		"ip link set b0 up",
		"tc qdisc add dev b0 root tbf rate 1gbit burst 1mb latency 10ms",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestScaleOutTable(t *testing.T) {
	cfg := ScaleOutConfig{Rows: 10_000_000, Replicas: 3}
	cfg.defaults()
	sample := func(ms int, cpu time.Duration) report.Sample {
		return report.Sample{Dur: time.Duration(ms) * time.Millisecond, Bytes: 1_600_000_000, Rows: 10_000_000, CPU: cpu}
	}
	stats := []report.Stat{
		{Name: "1 replica", Samples: []report.Sample{sample(13000, 6*time.Second), sample(14000, 6*time.Second), sample(13500, 6*time.Second)}},
		{Name: "3 replicas", Samples: []report.Sample{sample(5000, 9*time.Second), sample(5400, 10*time.Second), sample(5200, 10*time.Second)}},
	}
	tab := scaleOutTable(cfg, stats, []int{12, 12}, [][]string{nil, {"a", "b", "c"}}, []float64{1, 1, 2}, 10*time.Second, lakeWritten{files: 6, bytes: 600e6, rows: 10_000_000})
	if len(tab.Rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(tab.Rows))
	}
	if got := tab.Rows[1]; got[1] != "12" || got[2] != "3" || got[7] != "2.60×" {
		t.Errorf("3 replicas row: got %q, want 12 endpoints, 3 locations, 2.60×", got)
	}
	if got := tab.Rows[0][7]; got != "1.00×" {
		t.Errorf("baseline ratio: got %s", got)
	}
	for _, want := range []string{"3 replicas ran at 2.60× one (target 2.5×)", "6 data files of 100 MB mean (zstd Parquet V2)", "25%, 25%, 50%",
		"at most 2.00× one replica", "Bound by the CPU", "a fetch cost 9.6 CPU-s from all, 6.0 from one"} {
		if !strings.Contains(tab.Footer, want) {
			t.Errorf("footer lacks %q:\n%s", want, tab.Footer)
		}
	}
	// One endpoint: the footer says the scan was not split.
	tab = scaleOutTable(cfg, stats, []int{1, 1}, [][]string{nil, nil}, []float64{1, 0, 0}, 0, lakeWritten{})
	if !strings.Contains(tab.Footer, "not split") {
		t.Errorf("footer of an unsplit scan lacks 'not split':\n%s", tab.Footer)
	}
}

// TestScaleOut_Small runs the scaleout suite with 300k rows and 3
// replicas in network namespaces. It needs root and iproute2, and skips
// without them.
func TestScaleOut_Small(t *testing.T) {
	if testing.Short() {
		t.Skip("builds quiver and runs four servers")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 (ip, tc)")
	}
	bin := testsvc.QuiverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const rows = 300_000
	rep, err := ScaleOut(ctx, ScaleOutConfig{
		Bin: bin, Rows: rows, Reps: 1, Dir: t.TempDir(), Files: LakeFiles{Bytes: 4 << 20}, PartBytes: 1 << 20,
		Subnet: "10.202",
	})
	if errors.Is(err, ErrLinkUnavailable) {
		t.Skipf("network namespaces unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 1 || len(rep.Tables[0].Rows) != 2 {
		t.Fatalf("got %d tables, want one of two rows", len(rep.Tables))
	}
	for _, r := range rep.Results {
		if r.Rows != rows {
			t.Errorf("%s: %d rows, want %d", r.Contender, r.Rows, rows)
		}
	}
	var b strings.Builder
	rep.Print(&b)
	t.Log("\n" + b.String())
	if ns := ourNamespaces(t); len(ns) > 0 {
		t.Errorf("namespaces left behind: %v", ns)
	}
}

// TestScaleOut_CleansUpOnFailure checks the namespaces go away when the
// suite fails after making them (here: the server binary does not exist).
func TestScaleOut_CleansUpOnFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 (ip, tc)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := ScaleOut(ctx, ScaleOutConfig{
		Bin: filepath.Join(t.TempDir(), "no-such-quiver"), Rows: 1000, Reps: 1, Dir: t.TempDir(), Subnet: "10.203",
	})
	if errors.Is(err, ErrLinkUnavailable) {
		t.Skipf("network namespaces unavailable here: %v", err)
	}
	if err == nil {
		t.Fatal("got no error with a missing server binary")
	}
	t.Logf("failed as it should: %v", err)
	if ns := ourNamespaces(t); len(ns) > 0 {
		t.Errorf("namespaces left behind after a failure: %v", ns)
	}
}
