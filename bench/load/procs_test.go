package load

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/testsvc"
)

// TestClientJSON_RoundTrip checks that a client's stats survive the trip
// from a client process to the bench unchanged.
func TestClientJSON_RoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 5, 7, 0, 0, 123456789, time.UTC)
	st := clientStats{
		ops: [numOps]int64{1, 2, 3, 0}, done: [numOps]int64{2, 3, 4, 0}, errOps: [numOps]int64{0, 0, 1, 0},
		fetchRows: 1_000_000, fetchB: 33 << 20,
		small: []time.Duration{time.Millisecond, 3 * time.Millisecond}, fetches: []time.Duration{2 * time.Second},
		fetchCut: 1, cutShort: 1, cut: opFetch, cutAt: 1500 * time.Millisecond,
		errs:     []opErr{{at: at, class: "flight ResourceExhausted", rejected: true}, {at: at.Add(time.Second), class: "mysql 1105"}},
		examples: map[string]string{"flight ResourceExhausted": "server busy", "mysql 1105": "boom"},
	}
	b, err := json.Marshal(toJSON(7, &st))
	if err != nil {
		t.Fatal(err)
	}
	var j clientJSON
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	got := j.stats()
	for i := range got.errs {
		// JSON keeps the instant, not the monotonic reading or location.
		if !got.errs[i].at.Equal(st.errs[i].at) {
			t.Errorf("error %d at %v, want %v", i, got.errs[i].at, st.errs[i].at)
		}
		got.errs[i].at = st.errs[i].at
	}
	if j.ID != 7 || !reflect.DeepEqual(got, st) {
		t.Errorf("client %d: stats\n%+v\nwant\n%+v", j.ID, got, st)
	}
}

// TestLoadClients_BadInput checks that a client process given a bad spec
// or a bad window line fails, saying what was wrong, instead of running.
func TestLoadClients_BadInput(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		spec ClientsSpec
		in   string
		want string
	}{
		{"unknown protocol", ClientsSpec{Clients: []ClientSpec{{ID: 1, Proto: "odbc"}}}, "", `client 1: unknown protocol "odbc"`},
		{"no window", ClientsSpec{}, "", "read the window from the bench"},
		{"garbage window", ClientsSpec{}, "soon later\n", `bad window "soon later"`},
		{"window ends before it starts", ClientsSpec{}, "20 10\n", `bad window "20 10"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := RunClients(ctx, tt.spec, "", strings.NewReader(tt.in), &out, t.TempDir()+"/out.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestLoad_ClientProcs runs a level's clients in three processes of
// their own against a real quiver serve, and checks that what they did
// reaches the bench's figures: every client's operations, both
// protocols' latencies, the processes' run wait, CPU and memory.
func TestLoad_ClientProcs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin := testsvc.QuiverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{
		Bin: bin, BenchBin: testsvc.BenchBinary(t), Dir: t.TempDir(), ServerFlags: loadServerFlags(), ClientProcs: 3,
		Clients: []int{20}, Warmup: 2 * time.Second, Duration: 8 * time.Second, Idle: time.Second,
		MySQLShare: 0.2, FetchRows: 50_000, AggRows: 5_000,
	}
	out := runLoadSuite(ctx, t, cfg)
	lv := out.levels[0][0]
	checkLevel(t, out, 16, 4)
	if f, m := lv.byProto[protoFlight], lv.byProto[protoMySQL]; f == nil || m == nil || len(f.d) == 0 || len(m.d) == 0 ||
		len(f.d)+len(m.d) != len(lv.small) || lv.p99 < lv.p50 || lv.p50 <= 0 {
		t.Errorf("small latencies %+v (p50 %v, p99 %v): want both protocols, %d in all", lv.byProto, lv.p50, lv.p99, len(lv.small))
	}
	if lv.fetchRows == 0 || lv.dur < cfg.Duration || lv.dur > cfg.Duration+10*time.Second {
		t.Errorf("%d rows fetched over %v: want some, over about %v", lv.fetchRows, lv.dur, cfg.Duration)
	}
	if lv.sched99 <= 0 || lv.sched99 < lv.sched50 {
		t.Errorf("run wait p50 %v, p99 %v: want the client processes' waits", lv.sched50, lv.sched99)
	}
	if !lv.cpuOK || lv.cpu.bench <= 0 {
		t.Errorf("cores %+v (read %v): want the client processes' CPU as the bench's", lv.cpu, lv.cpuOK)
	}
	if out.clientRSS <= 0 || out.benchRSS < out.clientRSS {
		t.Errorf("client processes' peak RSS %d, bench's %d: want it measured, and the bench's at least that", out.clientRSS, out.benchRSS)
	}
}

// TestClientProc_Apply checks how the bench reads a client process's
// results: each of its clients gets its own stats, and a file that
// leaves one out, names one it does not have, or is not JSON is refused
// with the reason.
func TestClientProc_Apply(t *testing.T) {
	stats := func(ids ...int) []byte {
		var res clientsResult
		for _, id := range ids {
			st := clientStats{ops: [numOps]int64{int64(id), 0, 0, 0}, fetchRows: int64(id) * 1000}
			res.Clients = append(res.Clients, toJSON(id, &st))
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		name string
		file []byte
		want string // "" for success
	}{
		{"all its clients", stats(3, 5), ""},
		{"one missing", stats(3), "1 of its clients missing"},
		{"one it does not have", stats(3, 5, 9), "unknown client 9"},
		{"not JSON", []byte("ready\n"), "client process results"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &clientProc{clients: []*user{{id: 3}, {id: 5}}}
			_, err := p.apply(tt.file)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err %v, want it to say %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.clients {
				if c.st.ops[0] != int64(c.id) || c.st.fetchRows != int64(c.id)*1000 {
					t.Errorf("client %d got stats %+v", c.id, c.st)
				}
			}
		})
	}
}
