//go:build !unix

package segment

// freeBytes is unknown on this platform.
func freeBytes(string) int64 { return -1 }
