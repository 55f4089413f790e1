package mysqlwire

import "testing"

func TestLikeMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"character\\_set\\_%", "character_set_client", true},
		{"character\\_set\\_%", "characterXsetXclient", false},
		{"%timeout", "wait_timeout", true},
		{"%TIMEOUT", "wait_timeout", true},
		{"w_it%", "wait_timeout", true},
		{"wait", "wait_timeout", false},
		{"%", "", true},
		{"a%b%c", "aXXbYYc", true},
		{"a%b%c", "aXXbYY", false},
		{"100\\%", "100%", true},
	}
	for _, tt := range tests {
		if got := likeMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("likeMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}
