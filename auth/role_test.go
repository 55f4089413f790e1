package auth

import "testing"

func TestParseRole(t *testing.T) {
	tests := []struct {
		in      string
		want    Role
		wantErr bool
	}{
		{in: "admin", want: RoleAdmin},
		{in: " ADMIN ", want: RoleAdmin},
		{in: "readwrite", want: RoleReadWrite},
		{in: "rw", want: RoleReadWrite},
		{in: "read-only", want: RoleReadOnly},
		{in: "readonly", want: RoleReadOnly},
		{in: "root", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRole(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseRole(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseRole(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestRole_String(t *testing.T) {
	for _, r := range []Role{RoleReadOnly, RoleReadWrite, RoleAdmin} {
		t.Run(r.String(), func(t *testing.T) {
			got, err := ParseRole(r.String())
			if err != nil || got != r {
				t.Errorf("ParseRole(%q) = %v, %v; want %v, nil", r.String(), got, err, r)
			}
		})
	}
	if got, want := Role(0).String(), "Role(0)"; got != want {
		t.Errorf("Role(0).String() = %q, want %q", got, want)
	}
}

func TestRole_Permissions(t *testing.T) {
	tests := []struct {
		role               Role
		valid, write, admn bool
	}{
		{role: 0},
		{role: RoleReadOnly, valid: true},
		{role: RoleReadWrite, valid: true, write: true},
		{role: RoleAdmin, valid: true, write: true, admn: true},
		{role: RoleAdmin + 1},
	}
	for _, tt := range tests {
		t.Run(tt.role.String(), func(t *testing.T) {
			if got := tt.role.Valid(); got != tt.valid {
				t.Errorf("Valid() = %v, want %v", got, tt.valid)
			}
			if got := tt.role.CanWrite(); got != tt.write {
				t.Errorf("CanWrite() = %v, want %v", got, tt.write)
			}
			if got := tt.role.IsAdmin(); got != tt.admn {
				t.Errorf("IsAdmin() = %v, want %v", got, tt.admn)
			}
		})
	}
}
