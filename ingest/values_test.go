package ingest_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// deepItem builds item j of message i of the Deep schema: i+j%3 deals,
// deal k holding k+1 tags.
func deepItem(md protoreflect.MessageDescriptor, i, j int) *dynamicpb.Message {
	it := dynamicpb.NewMessage(md)
	f := md.Fields()
	it.Set(f.ByName("sku"), protoreflect.ValueOfString(fmt.Sprintf("s%d-%d", i, j)))
	deals := it.Mutable(f.ByName("deals")).List()
	dmd := f.ByName("deals").Message()
	for k := 0; k < (i+j)%3; k++ {
		d := dynamicpb.NewMessage(dmd)
		d.Set(dmd.Fields().ByName("price"), protoreflect.ValueOfFloat64(float64(i)+float64(j)*0.25+float64(k)*0.01))
		tags := d.Mutable(dmd.Fields().ByName("tags")).List()
		for l := 0; l <= k; l++ {
			tags.Append(protoreflect.ValueOfString(fmt.Sprintf("t%d-%d-%d-%d", i, j, k, l)))
		}
		deals.Append(protoreflect.ValueOfMessage(d))
	}
	return it
}

// deepValues returns messages 0..n-1 of the Deep schema: message i has
// i%4 items.
func deepValues(t testing.TB, md protoreflect.MessageDescriptor, n int) [][]byte {
	out := make([][]byte, n)
	imd := md.Fields().ByName("items").Message()
	for i := range out {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		items := m.Mutable(md.Fields().ByName("items")).List()
		for j := 0; j < i%4; j++ {
			items.Append(protoreflect.ValueOfMessage(deepItem(imd, i, j)))
		}
		out[i] = marshal(t, m)
	}
	return out
}

// deepCounts returns the items and deals that deepValues(n) holds.
func deepCounts(n int) (items, deals int) {
	for i := 0; i < n; i++ {
		for j := 0; j < i%4; j++ {
			items++
			deals += (i + j) % 3
		}
	}
	return items, deals
}

// mappedValues returns messages 0..n-1 of the Mapped schema.
func mappedValues(t testing.TB, md protoreflect.MessageDescriptor, n int) [][]byte {
	out := make([][]byte, n)
	f := md.Fields()
	for i := range out {
		m := dynamicpb.NewMessage(md)
		m.Set(f.ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		c := m.Mutable(f.ByName("counters")).Map()
		c.Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfInt64(int64(i)))
		if i%2 == 0 {
			c.Set(protoreflect.ValueOfString("b").MapKey(), protoreflect.ValueOfInt64(int64(2*i)))
		}
		by := m.Mutable(f.ByName("by_sku")).Map()
		by.Set(protoreflect.ValueOfString(fmt.Sprintf("k%d", i)).MapKey(),
			protoreflect.ValueOfMessage(deepItem(f.ByName("by_sku").MapValue().Message(), i, 2)))
		out[i] = marshal(t, m)
	}
	return out
}

func marshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
