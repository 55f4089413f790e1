package mysqlwire

import "testing"

func TestParseSetValue(t *testing.T) {
	tests := []struct {
		in                  string
		val                 string
		null, isDefault, ok bool
	}{
		{"'utf8mb4'", "utf8mb4", false, false, true},
		{"\"it''s\"", "it''s", false, false, true},
		{"'it''s'", "it's", false, false, true},
		{"utf8mb4", "utf8mb4", false, false, true},
		{"NULL", "", true, false, true},
		{"DEFAULT", "", false, true, true},
		{"600", "600", false, false, true},
		{"CONCAT(@@sql_mode, ',X')", "", false, false, false},
		{"'a' 'b'", "", false, false, false},
	}
	for _, tt := range tests {
		val, null, isDefault, ok := parseSetValue(tt.in)
		if val != tt.val || null != tt.null || isDefault != tt.isDefault || ok != tt.ok {
			t.Errorf("parseSetValue(%q) = %q %v %v %v, want %q %v %v %v", tt.in, val, null, isDefault, ok, tt.val, tt.null, tt.isDefault, tt.ok)
		}
	}
}
