package segment

import (
	"reflect"
	"testing"
)

func TestParsePartitionSpec(t *testing.T) {
	tests := []struct {
		spec string
		want []PartitionKey
		err  bool
	}{
		{spec: "", want: nil},
		{spec: "none", want: nil},
		{spec: "country", want: []PartitionKey{{Name: "country"}}},
		{spec: DefaultPartition, want: []PartitionKey{{Name: "dt", Expr: "strftime(_timestamp, '%Y-%m-%d')"}}},
		{spec: "dt=strftime(ts, '%Y,%m'), hour = hour(ts), region",
			want: []PartitionKey{{Name: "dt", Expr: "strftime(ts, '%Y,%m')"}, {Name: "hour", Expr: "hour(ts)"}, {Name: "region"}}},
		{spec: `k="a,b"`, want: []PartitionKey{{Name: "k", Expr: `"a,b"`}}},
		{spec: "a,,b", err: true},
		{spec: "dt=", err: true},
		{spec: "bad name=1", err: true},
		{spec: "x=f(1", err: true},
		{spec: "x=f(1))", err: true},
		{spec: "x='open", err: true},
		{spec: "a, A", err: true},
		// Strings and comments as DuckDB reads them.
		{spec: `x=concat(E'\',', a), y`, want: []PartitionKey{{Name: "x", Expr: `concat(E'\',', a)`}, {Name: "y"}}},
		{spec: "x=$$a,b$$, y", want: []PartitionKey{{Name: "x", Expr: "$$a,b$$"}, {Name: "y"}}},
		{spec: "x=f(1 /* ), /* ( */ */), y", want: []PartitionKey{{Name: "x", Expr: "f(1 /* ), /* ( */ */)"}, {Name: "y"}}},
		{spec: "x=f(1) /* , y", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParsePartitionSpec(tt.spec)
			if (err != nil) != tt.err {
				t.Fatalf("error: got %v, want error %v", err, tt.err)
			}
			if !tt.err && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPolicy_Due(t *testing.T) {
	p := Policy{MaxBytes: 100, MaxAge: 10}
	for _, tt := range []struct {
		size int64
		age  int64
		want bool
	}{{0, 0, false}, {99, 9, false}, {100, 0, true}, {0, 10, true}} {
		if got := p.Due(tt.size, durationOf(tt.age)); got != tt.want {
			t.Errorf("Due(%d, %d): got %v, want %v", tt.size, tt.age, got, tt.want)
		}
	}
	if (Policy{}).Enabled() || (Policy{}).Due(1<<40, durationOf(1<<40)) {
		t.Error("zero policy: got enabled, want never")
	}
}
