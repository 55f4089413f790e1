// Package panics turns a panic on a goroutine that serves one request
// into an error of that request, so that a bug costs one call and not the
// process.
//
// A panic can only be recovered on the goroutine it happens on. A server
// recovers its handlers' panics where it dispatches them (a gRPC
// interceptor, an HTTP middleware); the goroutines a handler starts, and
// Go code that C calls back into (DuckDB pulling an Arrow stream), must
// recover their own: they do it with Recover or Catch and hand the
// *Error back as the call's error. The server that owns the call logs
// and counts it once, where it answers the call (see As).
package panics

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Error is a recovered panic: its value, and the stack of the goroutine
// that panicked, taken where it was recovered. It does not unwrap to the
// value when that is an error: a panic is a bug whatever it carries (a
// context.Canceled included), and error mapping must not take it for the
// error it holds.
type Error struct {
	Value any
	Stack []byte
}

// Error says what the panic was, without the stack: it may reach a client.
func (e *Error) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// New is a recovered panic of value p, with the current goroutine's stack.
// Call it in the deferred function that recovered p.
func New(p any) *Error { return &Error{Value: p, Stack: debug.Stack()} }

// Recover, deferred directly (defer panics.Recover(&err)), turns a panic
// of the deferring function into *err, an *Error. It does nothing when
// there was no panic.
func Recover(err *error) {
	if p := recover(); p != nil {
		*err = New(p)
	}
}

// Catch calls fn and returns its error, or an *Error if it panicked.
func Catch(fn func() error) (err error) {
	defer Recover(&err)
	return fn()
}

// As finds a recovered panic in err's chain, or returns nil.
func As(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
