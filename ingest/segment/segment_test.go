package segment

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func durationOf(n int64) time.Duration { return time.Duration(n) }

func TestNewSegmentID(t *testing.T) {
	a := NewSegmentID(time.Date(2025, 2, 24, 21, 6, 23, 123e6, time.UTC))
	if !ValidSegmentID(a) || a[:19] != "20250224T210623123Z" {
		t.Errorf("got %q, want a valid id starting 20250224T210623123Z", a)
	}
	b := NewSegmentID(time.Date(2025, 2, 24, 21, 6, 23, 124e6, time.UTC))
	if !(a < b) {
		t.Errorf("ids do not sort by time: %q, %q", a, b)
	}
	for _, bad := range []string{"", "x", "20250224T210623123Z-3f9a1c0", "../20250224T210623123Z-3f9a1c0e"} {
		if ValidSegmentID(bad) {
			t.Errorf("ValidSegmentID(%q): got true", bad)
		}
	}
}

func TestSeal(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "live.duckdb")
	write := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(db)
	write(db + ".wal")
	id1 := NewSegmentID(time.Now())
	if _, err := Seal(db, id1); !errors.Is(err, ErrWALPresent) {
		t.Fatalf("seal with a WAL: got %v, want ErrWALPresent", err)
	}
	os.Remove(db + ".wal")
	if _, err := Seal(db, "bad"); err == nil {
		t.Fatal("seal with a bad id: got no error")
	}
	s1, err := Seal(db, id1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("live file still there after seal: %v", err)
	}
	write(db)
	id2 := NewSegmentID(time.Now().Add(time.Second))
	if _, err := Seal(db, id2); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(SealedDir(db), "notes.txt"))
	segs, err := Sealed(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 2 || segs[0] != s1 || segs[1].ID != id2 {
		t.Fatalf("Sealed: got %+v, want %s then %s", segs, id1, id2)
	}
	if s1.Size() != 1 {
		t.Errorf("Size: got %d, want 1", s1.Size())
	}
	if err := s1.Remove(); err != nil {
		t.Fatal(err)
	}
	if segs, _ := Sealed(db); len(segs) != 1 {
		t.Errorf("after Remove: got %d segments, want 1", len(segs))
	}
}

func TestDiskGuard_Check(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 500), 0o644); err != nil {
		t.Fatal(err)
	}
	g := DiskGuard{Ceiling: 1600, Paths: []string{dir, filepath.Join(dir, "missing")}, FreeOn: dir}
	st := g.Check(false)
	if st.Used != 1500 || st.Over {
		t.Errorf("under the ceiling: got used %d over %v, want 1500 false", st.Used, st.Over)
	}
	if st.Free <= 0 {
		t.Errorf("free: got %d, want > 0", st.Free)
	}
	// Paused, the guard waits for usage to fall to 90% of the ceiling.
	if st := g.Check(true); !st.Over {
		t.Errorf("paused at 1500/1600: got not over, want over (hysteresis)")
	}
	g.Ceiling = 1500
	if st := g.Check(false); !st.Over || st.Reason == "" {
		t.Errorf("at the ceiling: got %+v, want over with a reason", st)
	}
	g = DiskGuard{MinFree: 1 << 62, FreeOn: dir}
	if st := g.Check(false); !st.Over {
		t.Errorf("free-space floor: got %+v, want over", st)
	}
	if (DiskGuard{}).Enabled() {
		t.Error("zero guard: got enabled")
	}
}
