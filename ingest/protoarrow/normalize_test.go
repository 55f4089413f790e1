package protoarrow

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// bidRequest builds a BidRequest with two impressions: the first has two
// deals (with 2 and 0 seats), the second has no pmp.
func bidRequest(md protoreflect.MessageDescriptor) *dynamicpb.Message {
	m := newMessage(md)
	set(m, "id", "req")
	set(m, "tmax", 100)
	appendTo(m, "cur", "USD", "EUR")
	site := sub(m, "site")
	set(site, "domain", "example.com")
	set(sub(site, "publisher"), "name", "pub")
	putMap(sub(m, "user"), "ext", "a", "1")
	putMap(sub(m, "user"), "ext", "b", "2")

	imps := m.Mutable(md.Fields().ByName("imp")).List()
	i0 := imps.NewElement().Message()
	set(i0, "id", "i0")
	set(sub(i0, "banner"), "w", 300)
	deals := sub(i0, "pmp").Mutable(sub(i0, "pmp").Descriptor().Fields().ByName("deals")).List()
	for _, d := range []struct {
		id    string
		seats []any
	}{{"d0", []any{"s0", "s1"}}, {"d1", nil}} {
		dm := deals.NewElement().Message()
		set(dm, "id", d.id)
		set(dm, "bidfloor", 1.5)
		appendTo(dm, "wseat", d.seats...)
		deals.Append(protoreflect.ValueOfMessage(dm))
	}
	imps.Append(protoreflect.ValueOfMessage(i0))
	i1 := imps.NewElement().Message()
	set(i1, "id", "i1")
	imps.Append(protoreflect.ValueOfMessage(i1))
	return m
}

func TestNormalizer_Rows(t *testing.T) {
	md := compileT(t, "all.proto", "BidRequest")
	full := marshalT(t, bidRequest(md))
	bare := marshalT(t, func() *dynamicpb.Message { m := newMessage(md); set(m, "id", "bare"); return m }())

	tests := []struct {
		name     string
		spec     string
		msgs     [][]byte
		wantCols string
		want     []map[string]any
	}{
		{
			name: "no fan-out gives one row per message", msgs: [][]byte{full, bare},
			spec:     "id, site.publisher.name AS publisher, tmax, user.yob",
			wantCols: "id:utf8 publisher:utf8 tmax:int64 user_yob:int32",
			want: []map[string]any{
				{"id": "req", "publisher": "pub", "tmax": int64(100), "user_yob": nil},
				{"id": "bare", "publisher": nil, "tmax": int64(0), "user_yob": nil},
			},
		},
		{
			name: "one fan-out; empty list gives no row", msgs: [][]byte{full, bare},
			spec:     "id, imp[].id AS imp_id, imp[].banner.w",
			wantCols: "id:utf8 imp_id:utf8 imp_banner_w:int32",
			want: []map[string]any{
				{"id": "req", "imp_id": "i0", "imp_banner_w": int32(300)},
				{"id": "req", "imp_id": "i1", "imp_banner_w": nil},
			},
		},
		{
			name: "nested fan-out chain", msgs: [][]byte{full},
			spec:     "id, imp[].id AS imp, imp[].pmp.deals[].id AS deal, imp[].pmp.deals[].bidfloor",
			wantCols: "id:utf8 imp:utf8 deal:utf8 imp_pmp_deals_bidfloor:float64",
			want: []map[string]any{
				{"id": "req", "imp": "i0", "deal": "d0", "imp_pmp_deals_bidfloor": 1.5},
				{"id": "req", "imp": "i0", "deal": "d1", "imp_pmp_deals_bidfloor": 1.5},
			},
		},
		{
			name: "fan-out ending in a list of scalars", msgs: [][]byte{full},
			spec:     "imp[].pmp.deals[].id AS deal, imp[].pmp.deals[].wseat[] AS seat",
			wantCols: "deal:utf8 seat:utf8",
			want: []map[string]any{
				{"deal": "d0", "seat": "s0"},
				{"deal": "d0", "seat": "s1"},
			},
		},
		{
			name: "top-level list of scalars", msgs: [][]byte{full, bare},
			spec:     "id, cur[] AS currency",
			wantCols: "id:utf8 currency:utf8",
			want: []map[string]any{
				{"id": "req", "currency": "USD"},
				{"id": "req", "currency": "EUR"},
			},
		},
		{
			name: "map fans out over entries", msgs: [][]byte{full},
			spec:     "user.ext[].key AS k, user.ext[].value AS v",
			wantCols: "k:utf8 v:utf8",
			want: []map[string]any{
				{"k": "a", "v": "1"},
				{"k": "b", "v": "2"},
			},
		},
		{
			name: "timestamp and enum leaves", msgs: [][]byte{full},
			spec:     "at, imp[].pmp.deals[].color",
			wantCols: "at:timestamp[us, tz=UTC] imp_pmp_deals_color:utf8",
			want: []map[string]any{
				{"at": nil, "imp_pmp_deals_color": "COLOR_UNSPECIFIED"},
				{"at": nil, "imp_pmp_deals_color": "COLOR_UNSPECIFIED"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := checkedMem()
			defer mem.AssertSize(t, 0)
			d, err := NewDecoder(md, mem, WithNormalizer(tt.spec))
			if err != nil {
				t.Fatalf("NewDecoder: %v", err)
			}
			defer d.Release()
			var cols []string
			for _, f := range d.NormalizedSchema().Fields() {
				cols = append(cols, f.Name+":"+f.Type.String())
			}
			if got, want := strings.Join(cols, " "), tt.wantCols; got != want {
				t.Errorf("got columns %s, want %s", got, want)
			}
			for _, m := range tt.msgs {
				if err := d.Append(m); err != nil {
					t.Fatalf("Append: %v", err)
				}
			}
			if got, want := d.NormalizedLen(), len(tt.want); got != want {
				t.Errorf("got NormalizedLen %d, want %d", got, want)
			}
			if got, want := len(flushT(t, d)), len(tt.msgs); got != want {
				t.Errorf("got %d main rows, want %d", got, want)
			}
			got := flushNormT(t, d)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestNormalizer_RoundTrip(t *testing.T) {
	md := compileT(t, "all.proto", "BidRequest")
	mem := checkedMem()
	defer mem.AssertSize(t, 0)
	d, err := NewDecoder(md, mem, WithNormalizer("id, imp[].id AS imp, imp[].pmp.deals[].id AS deal, imp[].pmp.deals[].wseat[] AS seat"))
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	defer d.Release()

	// The expected rows come from the decoded main record, so the two
	// batches must agree.
	r := rand.New(rand.NewPCG(11, 11))
	for range 200 {
		if err := d.Append(marshalT(t, randomMessage(r, md))); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	var want []map[string]any
	for _, row := range flushT(t, d) {
		for _, imp := range row["imp"].([]any) {
			imp := imp.(map[string]any)
			pmp, _ := imp["pmp"].(map[string]any)
			if pmp == nil {
				continue
			}
			for _, deal := range pmp["deals"].([]any) {
				deal := deal.(map[string]any)
				for _, seat := range deal["wseat"].([]any) {
					want = append(want, map[string]any{"id": row["id"], "imp": imp["id"], "deal": deal["id"], "seat": seat})
				}
			}
		}
	}
	got := flushNormT(t, d)
	if len(want) == 0 {
		t.Fatal("random messages produced no normalized rows")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %d rows, want %d; first mismatch shown by reflect:\n%v\n%v", len(got), len(want), got, want)
	}
}

func TestNormalizer_SpecErrors(t *testing.T) {
	md := compileT(t, "all.proto", "BidRequest")
	tests := []struct {
		spec, contains string
	}{
		{"", "empty spec"},
		{"id,", "column 2 is empty"},
		{"id AS", `"id AS" is not "path" or "path AS name"`},
		{"id AS 1x", `alias "1x" is not an identifier`},
		{"id..x", `bad segment ""`},
		{"nope", `unknown field "nope"; fields here are at, cur, id, imp, site, tmax, user`},
		{"site.nope", `unknown field "nope"; fields here are domain, id, publisher`},
		{"imp.id", `field "imp" is repeated; write imp[] to fan out over it`},
		{"id[]", `field "id" is not repeated; drop the []`},
		{"site", `ends at message field "site"`},
		{"imp[]", `ends at repeated message "imp"`},
		{"id.x", `field "id" is a utf8 value and has no fields`},
		{"cur[].x", `"cur" is a list of utf8 values and has no fields`},
		{"at.seconds", `field "at" is a timestamp[us, tz=UTC] value and has no fields`},
		{"imp[].id, cur[]", "fan out over different repeated fields (imp[], cur[])"},
		{"imp[].pmp.deals[].id, imp[].metric[].type", "fan out over different repeated fields (imp[].pmp.deals[], imp[].metric[])"},
		{"id, site.id AS id", `paths "id" and "site.id" are both named "id"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := NewDecoder(md, nil, WithNormalizer(tt.spec))
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("got %v, want ErrSpec", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("got %q, want it to contain %q", err, tt.contains)
			}
		})
	}
}

func TestNormalizer_Malformed(t *testing.T) {
	md := compileT(t, "all.proto", "BidRequest")
	mem := checkedMem()
	defer mem.AssertSize(t, 0)
	d, err := NewDecoder(md, mem, WithNormalizer("id, imp[].id"))
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	defer d.Release()
	good := wire{}.str(1, "r").bytes(2, wire{}.str(1, "a")).bytes(2, wire{}.str(1, "b"))
	bad := wire{}.str(1, "r").bytes(2, wire{}.str(1, "a")).bytes(2, wire{}.str(1, "\xff"))
	for _, m := range [][]byte{good, bad, good} {
		_ = d.Append(m)
	}
	if got, want := d.NormalizedLen(), 4; got != want {
		t.Errorf("got NormalizedLen %d, want %d", got, want)
	}
	flushT(t, d)
	want := []map[string]any{
		{"id": "r", "imp_id": "a"}, {"id": "r", "imp_id": "b"},
		{"id": "r", "imp_id": "a"}, {"id": "r", "imp_id": "b"},
	}
	if got := flushNormT(t, d); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
