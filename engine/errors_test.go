package engine

import (
	"context"
	"strings"
	"testing"
)

// TestUnlessLost: an interrupt nothing asked for (the statement's context
// is live) is reported as DuckDB's lost error, not as a cancel; a real
// cancel, and every other error, stay as they are.
func TestUnlessLost(t *testing.T) {
	interrupted := &Error{Kind: KindCanceled, Msg: "INTERRUPT Error: Interrupted!"}
	invalid := &Error{Kind: KindInvalid, Msg: "Invalid Input Error: boom"}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		wantKind Kind
		lost     bool
	}{
		{"spurious interrupt", context.Background(), interrupted, KindInternal, true},
		{"canceled statement", done, interrupted, KindCanceled, false},
		{"other error", context.Background(), invalid, KindInvalid, false},
		{"no context", nil, interrupted, KindCanceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unlessLost(tc.ctx, tc.err)
			if KindOf(err) != tc.wantKind || strings.HasPrefix(err.Error(), ErrLostMessage) != tc.lost {
				t.Fatalf("unlessLost: %v (kind %v), want kind %v, lost %v", err, KindOf(err), tc.wantKind, tc.lost)
			}
		})
	}
}
