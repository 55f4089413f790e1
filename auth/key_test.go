package auth

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOrCreateKey(t *testing.T) {
	t.Run("create then load", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "db.duckdb.tokenkey")
		key, err := LoadOrCreateKey(path)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if got, want := len(key), KeyLen; got != want {
			t.Errorf("key length = %d, want %d", got, want)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fi.Mode().Perm(), os.FileMode(0o600); got != want {
			t.Errorf("key file mode = %#o, want %#o", got, want)
		}
		again, err := LoadOrCreateKey(path)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		if !bytes.Equal(again, key) {
			t.Errorf("loaded key %x, want created key %x", again, key)
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if got, want := len(entries), 1; got != want {
			t.Errorf("directory holds %d entries, want %d (no temp files left)", got, want)
		}
	})

	t.Run("raw bytes accepted", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "k")
		want := bytes.Repeat([]byte{0x0a}, KeyLen) // newlines, to defeat trimming
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadOrCreateKey(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("LoadOrCreateKey = %x, %v; want %x, nil", got, err, want)
		}
	})

	good := hex.EncodeToString(bytes.Repeat([]byte{7}, KeyLen)) + "\n"
	errTests := []struct {
		name    string
		content string
		mode    os.FileMode
		wantErr string
	}{
		{name: "empty", content: "", mode: 0o600, wantErr: "corrupt"},
		{name: "truncated", content: good[:40], mode: 0o600, wantErr: "corrupt"},
		{name: "too long", content: good + good, mode: 0o600, wantErr: "corrupt"},
		{name: "not hex", content: strings.Repeat("zz", KeyLen), mode: 0o600, wantErr: "corrupt"},
		{name: "world readable", content: good, mode: 0o644, wantErr: "chmod 600"},
		{name: "group writable", content: good, mode: 0o620, wantErr: "chmod 600"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k")
			if err := os.WriteFile(path, []byte(tt.content), tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			_, err := LoadOrCreateKey(path)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadOrCreateKey: got error %v, want one containing %q", err, tt.wantErr)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tt.content {
				t.Errorf("key file now holds %q, want it untouched: %q", got, tt.content)
			}
		})
	}

	t.Run("missing directory", func(t *testing.T) {
		_, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "no", "such", "k"))
		if err == nil {
			t.Fatal("got nil error, want one")
		}
	})
	t.Run("empty path", func(t *testing.T) {
		if _, err := LoadOrCreateKey(""); err == nil {
			t.Fatal("got nil error, want one")
		}
	})
}

func TestCreateKeyFile_Exists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	first, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	// A second creator that lost the race must not replace the key.
	if err := createKeyFile(path, bytes.Repeat([]byte{1}, KeyLen)); err == nil {
		t.Fatal("createKeyFile over an existing key: got nil error, want one")
	}
	got, err := LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(got, first) {
		t.Errorf("key after lost race = %x, %v; want %x, nil", got, err, first)
	}
}

func TestParseKey(t *testing.T) {
	key := bytes.Repeat([]byte{0xab}, KeyLen)
	tests := []struct {
		name    string
		in      string
		want    []byte
		wantErr bool
	}{
		{name: "32 bytes", in: hex.EncodeToString(key), want: key},
		{name: "spaces", in: " " + hex.EncodeToString(key) + "\n", want: key},
		{name: "64 bytes", in: hex.EncodeToString(append(key, key...)), want: append(key, key...)},
		{name: "short", in: hex.EncodeToString(key[:16]), wantErr: true},
		{name: "not hex", in: "secret", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKey(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseKey: got error %v, want error %v", err, tt.wantErr)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("ParseKey = %x, want %x", got, tt.want)
			}
		})
	}
}

func TestKeyFileFor(t *testing.T) {
	tests := []struct{ db, want string }{
		{db: "/data/q.duckdb", want: "/data/q.duckdb.tokenkey"},
		{db: ":memory:", want: ""},
		{db: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.db, func(t *testing.T) {
			if got := KeyFileFor(tt.db); got != tt.want {
				t.Errorf("KeyFileFor(%q) = %q, want %q", tt.db, got, tt.want)
			}
		})
	}
}
