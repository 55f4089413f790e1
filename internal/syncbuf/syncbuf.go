// Package syncbuf has a text buffer that several goroutines may write
// while another reads it: a logger's output that a test checks, or a
// child process's stderr that a report quotes.
package syncbuf

import (
	"strings"
	"sync"
)

// Buffer is a strings.Builder behind a mutex. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
