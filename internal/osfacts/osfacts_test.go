package osfacts

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// fakeSystem writes files (paths relative to a new root) and returns a
// reader of root/proc and root/sys/fs/cgroup.
func fakeSystem(t *testing.T, files map[string]string) reader {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"proc", "sys/fs/cgroup"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := procfs.NewFS(filepath.Join(root, "proc"))
	if err != nil {
		t.Fatal(err)
	}
	return reader{proc: fs, cgroup: filepath.Join(root, "sys/fs/cgroup")}
}

const meminfo = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    8000000 kB\n"

func TestReader_MemoryLimit(t *testing.T) {
	const machine = 16000000 << 10
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"no cgroup file", map[string]string{"proc/meminfo": meminfo}, machine},
		{"v2, no limit", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "max\n"}, machine},
		{"v2, own limit", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "1073741824\n"}, 1 << 30},
		{"v2, a parent's lower limit", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "2147483648\n", "sys/fs/cgroup/a/memory.max": "1073741824\n"}, 1 << 30},
		{"v2, a container sees its own limit at the root", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "0::/docker/abc\n",
			"sys/fs/cgroup/memory.max": "536870912\n"}, 512 << 20},
		{"v2 limit above the machine's", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "99999999999999\n"}, machine},
		{"v1 memory controller", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "4:memory:/job\n1:cpu:/\n0::/\n",
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "268435456\n"}, 256 << 20},
		{"v1, no limit (2^63 rounded to pages)", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "4:memory:/job\n",
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "9223372036854771712\n"}, machine},
		{"garbage in the file", map[string]string{"proc/meminfo": meminfo, "proc/7/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "lots\n"}, machine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fakeSystem(t, tc.files).memoryLimit(7)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("memoryLimit: got %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("no meminfo", func(t *testing.T) {
		if n, err := fakeSystem(t, nil).memoryLimit(7); err == nil {
			t.Errorf("memoryLimit: got %d and no error, want an error", n)
		}
	})
}

func TestReader_MemAvailable(t *testing.T) {
	got, err := fakeSystem(t, map[string]string{"proc/meminfo": meminfo}).memAvailable()
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(8000000 << 10); got != want {
		t.Errorf("memAvailable: got %d, want %d", got, want)
	}
}

func TestReader_Process(t *testing.T) {
	// A command name with spaces and a parenthesis, as a process may
	// name itself: utime 250 and stime 75 ticks.
	r := fakeSystem(t, map[string]string{
		"proc/4242/stat":   "4242 (quiver (x) serve) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 30 10 12 0 100 100000 100 1844 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		"proc/4242/status": "Name:\tquiver\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n",
	})
	cpu, err := r.processCPU(4242)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; cpu != want {
		t.Errorf("processCPU: got %v, want %v", cpu, want)
	}
	mem, err := r.processMemory(4242)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Memory{RSS: 100 << 20, Peak: 200 << 20}); mem != want {
		t.Errorf("processMemory: got %+v, want %+v", mem, want)
	}
	if _, err := r.processCPU(4243); err == nil {
		t.Error("processCPU of a process that is gone: got no error")
	}
}

func TestReader_MachineCPU(t *testing.T) {
	r := fakeSystem(t, map[string]string{"proc/stat": "cpu  300 50 100 1000 20 5 5 40 7 0\ncpu0 300 50 100 1000 20 5 5 40 7 0\nbtime 1700000000\n"})
	got, err := r.machineCPU()
	if err != nil {
		t.Fatal(err)
	}
	want := MachineCPU{Busy: 4600 * time.Millisecond, Steal: 400 * time.Millisecond, Total: 15200 * time.Millisecond}
	if got != want {
		t.Errorf("machineCPU: got %+v, want %+v", got, want)
	}
}

// TestSystem reads this machine's facts: each is there and sane.
func TestSystem(t *testing.T) {
	lim, err := MemoryLimit()
	if err != nil {
		t.Fatal(err)
	}
	avail, err := MemAvailable()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := ProcessMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"MemoryLimit > 0", lim > 0},
		{"MemAvailable > 0", avail > 0},
		{"RSS > 0 and <= Peak", mem.RSS > 0 && mem.RSS <= mem.Peak},
		{"SelfPeakRSS > 0", SelfPeakRSS() > 0},
		{"machine Busy+Steal <= Total", m.Busy+m.Steal <= m.Total && m.Total > 0},
	} {
		if !c.ok {
			t.Errorf("want %s: limit %d, available %d, %+v, %+v", c.what, lim, avail, mem, m)
		}
	}
}
