package mysqlvalue

import "testing"

// TestAppendJSONString checks the strings of the JSON text that json
// columns carry.
func TestAppendJSONString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\"b\\c\n\x01é\xff", `"a\"b\\c\n\u0001é` + "\uFFFD" + `"`},
		{"", `""`},
		{"\t\r\x1f", `"\t\r\u001f"`},
		{"日本\xe6\x97", `"日本` + "\uFFFD\uFFFD" + `"`},
	}
	for _, tt := range tests {
		if got := string(appendJSONString(nil, tt.in)); got != tt.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if got := string(appendJSONString(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("appendJSONString([]byte(%q)) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
