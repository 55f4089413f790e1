package auth

import "testing"

func TestRequireLoopback(t *testing.T) {
	tests := []struct {
		addr   string
		wantOK bool
	}{
		{addr: "127.0.0.1:31337", wantOK: true},
		{addr: "127.0.0.2:0", wantOK: true},
		{addr: "[::1]:9030", wantOK: true},
		{addr: "localhost:9090", wantOK: true},
		{addr: "0.0.0.0:31337"},
		{addr: ":31337"},
		{addr: "[::]:31337"},
		{addr: "10.0.0.5:31337"},
		{addr: "db.example.com:31337"},
		{addr: "no-port"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := RequireLoopback(tt.addr)
			if got := err == nil; got != tt.wantOK {
				t.Errorf("RequireLoopback(%q) = %v, want ok %v", tt.addr, err, tt.wantOK)
			}
		})
	}
}
