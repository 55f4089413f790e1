package main

import (
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/readme"
)

// TestReadme_LakeOpsAsWritten runs the docs' quiver lake commands exactly
// as written, in order, over a lake of 60,000 rows in six commits made at
// the path they name: each must succeed, snapshots must list the commits
// with their Kafka offsets, and compact must rewrite the six small files.
func TestReadme_LakeOpsAsWritten(t *testing.T) {
	cmds := readme.Commands(t, "quiver lake ")
	ran := map[string]bool{}
	writeReadmeLake(t, 60_000)
	for _, line := range cmds {
		t.Logf("docs: %s", line)
		if !strings.Contains(line, "--lake file://"+readmeLake) {
			t.Errorf("%s: the docs' lake commands name the lake at %s", line, readmeLake)
			continue
		}
		args := strings.Fields(line)[1:]
		code, out, errOut := runQuiver(t, args...)
		if code != 0 {
			t.Errorf("%s: exit status %d: %s", line, code, errOut)
			continue
		}
		op := args[1]
		ran[op] = true
		var want []string
		switch op {
		case "snapshots":
			want = []string{"append", "60000", `readme.events={"0":60000}`}
		case "compact":
			want = []string{"data files before: 6", "data files after:  1", "60000 rows"}
		case "expire-snapshots":
			want = []string{"expired 0 snapshots"}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", line, w, out)
			}
		}
	}
	for _, op := range []string{"snapshots", "compact", "expire-snapshots", "gc"} {
		if !ran[op] {
			t.Errorf("the docs show no quiver lake %s", op)
		}
	}
}
