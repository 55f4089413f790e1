package ingest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/internal/testmem"
)

func TestDecoder_Decode(t *testing.T) {
	mem := testmem.Checked(t)
	md := compile(t, "Flat")
	dec, err := ingest.NewDecoder(md, "", mem)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Release()
	at := time.Unix(1_700_000_000, 0)
	msgs := []ingest.Message{
		{Offset: 10, Timestamp: at, Value: flatValue(t, md, 1)},
		{Offset: 11, Timestamp: at, Value: []byte{0xff, 0xff}}, // not Protobuf
		{Offset: 12, Timestamp: at, Value: flatValue(t, md, 2)},
	}
	main, norm, dead := dec.Decode([]ingest.Chunk{{Topic: testTopic, Partition: 3, Messages: msgs}})
	defer main.Release()
	defer dead.Release()
	if norm != nil {
		norm.Release()
		t.Errorf("norm: got %d rows, want none without a normalizer", norm.NumRows())
	}
	if got, want := main.NumRows(), int64(2); got != want {
		t.Errorf("main rows: got %d, want %d", got, want)
	}
	var names []string
	for _, f := range main.Schema().Fields() {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names[len(names)-3:], ","), ingest.ColPartition+","+ingest.ColOffset+","+ingest.ColTimestamp; got != want {
		t.Errorf("last columns: got %s, want %s", got, want)
	}
	if got, want := dead.NumRows(), int64(1); got != want {
		t.Errorf("dead letters: got %d, want %d", got, want)
	}
	ddl, err := ingest.CreateTableSQL("t", main.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if want := `"_offset" BIGINT`; !strings.Contains(ddl, want) {
		t.Errorf("CreateTableSQL: got %s, want it to contain %s", ddl, want)
	}
}
