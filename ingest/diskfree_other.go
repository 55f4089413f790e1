//go:build !unix

package ingest

// freeBytes is unknown (-1) off Unix.
func freeBytes(string) int64 { return -1 }
