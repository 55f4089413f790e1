package ipcx

import "github.com/apache/arrow-go/v18/arrow"

// RecordBytes is the size of rec's Arrow buffers, children included: what
// a batch weighs on the wire before compression.
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += ArrayBytes(c.Data())
	}
	return n
}

// ArrayBytes is the size of every buffer of d, its children included.
func ArrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += ArrayBytes(c)
	}
	return n
}
