package panics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/panics"
)

// TestCatch: a function's error comes back as it is; its panic comes back
// as an *Error with the value and the stack of where it panicked, found by
// As through wrapping, and never taken for the error value it carries.
func TestCatch(t *testing.T) {
	errPlain := errors.New("plain error")
	tests := []struct {
		name      string
		fn        func() error
		wantErr   error // errors.Is; nil: no error
		wantPanic any   // the recovered value; nil: no panic
	}{
		{name: "no error", fn: func() error { return nil }},
		{name: "error", fn: func() error { return errPlain }, wantErr: errPlain},
		{name: "panic", fn: func() error { panic("boom") }, wantPanic: "boom"},
		{name: "panic with an error", fn: func() error { panic(context.Canceled) }, wantPanic: context.Canceled},
		{name: "runtime error", fn: func() error {
			var m map[string]int
			m["x"] = 1
			return nil
		}, wantPanic: "assignment to entry in nil map"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := panics.Catch(tt.fn)
			pe := panics.As(fmt.Errorf("call: %w", err))
			if tt.wantPanic == nil {
				if pe != nil || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Fatalf("got %v (panic %v), want %v", err, pe, tt.wantErr)
				}
				return
			}
			if pe == nil {
				t.Fatalf("got %v, want a recovered panic", err)
			}
			if s, ok := tt.wantPanic.(string); ok {
				if !strings.Contains(fmt.Sprint(pe.Value), s) {
					t.Errorf("value: got %v, want %q", pe.Value, s)
				}
			} else if pe.Value != tt.wantPanic {
				t.Errorf("value: got %v, want %v", pe.Value, tt.wantPanic)
			}
			if ve, ok := tt.wantPanic.(error); ok && errors.Is(err, ve) {
				t.Errorf("errors.Is(%v, %v): got true, want a panic not taken for its value", err, ve)
			}
			if !strings.Contains(string(pe.Stack), "panics_test.TestCatch") {
				t.Errorf("stack: got %s, want it to show where the panic was", pe.Stack)
			}
			if !strings.HasPrefix(err.Error(), "panic: ") || strings.Contains(err.Error(), "goroutine") {
				t.Errorf("message: got %q, want the panic without its stack", err.Error())
			}
		})
	}
}
