package protoarrow

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile/reporter"
)

func TestCompile_Names(t *testing.T) {
	tests := []struct {
		name        string
		file        string
		importPaths []string
		message     string
		want        string
	}{
		{"full name", "testdata/all.proto", nil, "quiver.test.BidRequest", "quiver.test.BidRequest"},
		{"leading dot", "testdata/all.proto", nil, ".quiver.test.Deal", "quiver.test.Deal"},
		{"short name", "testdata/flat.proto", nil, "Flat14", "quiver.test.Flat14"},
		{"import path relative file", "app/place.proto", []string{"testdata/imports"}, "Place", "quiver.app.Place"},
		{"file inside import path", "testdata/imports/app/place.proto", []string{"testdata/imports"}, "quiver.app.Place", "quiver.app.Place"},
		{"nested by relative name", "app/place.proto", []string{"testdata/imports"}, "Place.Tag", "quiver.app.Place.Tag"},
		{"proto2 with groups", "testdata/legacy.proto", nil, "Legacy", "quiver.legacy.Legacy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, err := Compile(context.Background(), tt.file, tt.importPaths, tt.message)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got, want := string(md.FullName()), tt.want; got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

func TestCompile_Errors(t *testing.T) {
	tests := []struct {
		name         string
		file         string
		importPaths  []string
		message      string
		wantIs       error
		wantContains []string
		wantPos      bool
	}{
		{
			name: "missing file", file: "testdata/nope.proto", message: "X",
			wantIs: fs.ErrNotExist, wantContains: []string{"nope.proto"},
		},
		{
			name: "missing file in import paths", file: "nope.proto", importPaths: []string{"testdata", "testdata/imports"}, message: "X",
			wantIs: fs.ErrNotExist, wantContains: []string{"nope.proto", "import paths"},
		},
		{
			name: "syntax error", file: "testdata/bad.proto", message: "Broken",
			wantContains: []string{"bad.proto:8:"}, wantPos: true,
		},
		{
			name: "missing import", file: "app/missing_import.proto", importPaths: []string{"testdata/imports"}, message: "Lost",
			wantIs: fs.ErrNotExist, wantContains: []string{"missing_import.proto:5:", "common/nowhere.proto"}, wantPos: true,
		},
		{
			name: "unknown message", file: "testdata/all.proto", message: "Nope",
			wantIs: ErrUnknownMessage, wantContains: []string{`"Nope"`, "quiver.test.BidRequest", "quiver.test.Scalars"},
		},
		{
			name: "map entry is not a message name", file: "testdata/all.proto", message: "Maps.CountsEntry",
			wantIs: ErrUnknownMessage, wantContains: []string{"quiver.test.Maps"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(context.Background(), tt.file, tt.importPaths, tt.message)
			if err == nil {
				t.Fatal("got nil error, want one")
			}
			t.Logf("error: %v", err)
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("got %v, want errors.Is %v", err, tt.wantIs)
			}
			for _, s := range tt.wantContains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("got %q, want it to contain %q", err, s)
				}
			}
			var pos reporter.ErrorWithPos
			if got, want := errors.As(err, &pos), tt.wantPos; got != want {
				t.Errorf("got errors.As(ErrorWithPos) %v, want %v (%v)", got, want, err)
			}
		})
	}
}

func TestCompile_Ambiguous(t *testing.T) {
	dir := t.TempDir()
	src := "syntax = \"proto3\";\npackage p;\nmessage A { message Item { int32 x = 1; } }\nmessage B { message Item { int32 y = 1; } }\n"
	path := filepath.Join(dir, "amb.proto")
	if err := writeFile(path, src); err != nil {
		t.Fatal(err)
	}
	_, err := Compile(context.Background(), path, nil, "Item")
	if !errors.Is(err, ErrUnknownMessage) || !strings.Contains(err.Error(), "p.A.Item") || !strings.Contains(err.Error(), "p.B.Item") {
		t.Errorf("got %v, want an ambiguity error naming p.A.Item and p.B.Item", err)
	}
	md, err := Compile(context.Background(), path, nil, "B.Item")
	if err != nil {
		t.Fatalf("Compile B.Item: %v", err)
	}
	if got, want := string(md.FullName()), "p.B.Item"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
