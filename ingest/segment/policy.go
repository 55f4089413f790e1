package segment

import "time"

// Policy says when the live database file is rotated. A zero field never
// triggers.
type Policy struct {
	// MaxBytes rotates a file once it (with its write-ahead log) is this big.
	MaxBytes int64
	// MaxAge rotates a file this long after it was opened.
	MaxAge time.Duration
}

// Enabled reports whether the policy ever rotates.
func (p Policy) Enabled() bool { return p.MaxBytes > 0 || p.MaxAge > 0 }

// Due reports whether a file of size bytes opened age ago should rotate.
func (p Policy) Due(size int64, age time.Duration) bool {
	return (p.MaxBytes > 0 && size >= p.MaxBytes) || (p.MaxAge > 0 && age >= p.MaxAge)
}
