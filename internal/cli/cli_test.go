package cli

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantPos []string
		wantN   int
		wantErr string
	}{
		{"flags first", []string{"-n", "3", "a", "b"}, []string{"a", "b"}, 3, ""},
		{"flags after positionals", []string{"a", "-n", "4", "b"}, []string{"a", "b"}, 4, ""},
		{"none", nil, nil, 0, ""},
		{"unknown flag", []string{"a", "--nope"}, nil, 0, "flag provided but not defined: -nope"},
		{"bad value", []string{"-n", "x"}, nil, 0, `invalid value "x" for flag -n`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFlagSet("test")
			n := fs.Int("n", 0, "a number")
			pos, err := ParseFlags(fs, tc.args, &bytes.Buffer{})
			if tc.wantErr != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || !strings.Contains(ue.Msg, tc.wantErr) {
					t.Fatalf("error: got %v, want a usage error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pos, tc.wantPos) || *n != tc.wantN {
				t.Errorf("got %q and n=%d, want %q and n=%d", pos, *n, tc.wantPos, tc.wantN)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		fs := NewFlagSet("test")
		fs.Int("n", 0, "a number")
		var help bytes.Buffer
		if _, err := ParseFlags(fs, []string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("error: got %v, want flag.ErrHelp", err)
		}
		if !strings.Contains(help.String(), "a number") {
			t.Errorf("help: got %q, want the flags' defaults", help.String())
		}
	})
}
