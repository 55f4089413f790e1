package auth

import (
	"encoding/base64"
	"errors"
	"testing"

	"google.golang.org/grpc/metadata"
)

func basicValue(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

func TestCredentialsFromMetadata(t *testing.T) {
	tests := []struct {
		name      string
		md        metadata.MD
		want      callCreds
		wantError bool
	}{
		{name: "none", md: metadata.MD{}, want: callCreds{}},
		{name: "basic padded", md: metadata.Pairs("authorization", basicValue("al", "pw")),
			want: callCreds{kind: credBasic, user: "al", password: "pw"}},
		{name: "basic unpadded (arrow-go)", md: metadata.Pairs("Authorization", "Basic "+base64.RawStdEncoding.EncodeToString([]byte("al:pw"))),
			want: callCreds{kind: credBasic, user: "al", password: "pw"}},
		{name: "basic lowercase scheme", md: metadata.Pairs("authorization", "basic "+base64.StdEncoding.EncodeToString([]byte("al:pw"))),
			want: callCreds{kind: credBasic, user: "al", password: "pw"}},
		{name: "password with colon", md: metadata.Pairs("authorization", basicValue("al", "a:b:c")),
			want: callCreds{kind: credBasic, user: "al", password: "a:b:c"}},
		{name: "empty password", md: metadata.Pairs("authorization", basicValue("al", "")),
			want: callCreds{kind: credBasic, user: "al", password: ""}},
		{name: "bearer", md: metadata.Pairs("authorization", "Bearer abc.def.ghi"),
			want: callCreds{kind: credBearer, token: "abc.def.ghi"}},
		{name: "bearer extra spaces", md: metadata.Pairs("authorization", "  bearer   abc  "),
			want: callCreds{kind: credBearer, token: "abc"}},
		{name: "legacy token", md: metadata.Pairs("auth-token-bin", "abc"),
			want: callCreds{kind: credBearer, token: "abc"}},
		{name: "authorization wins", md: metadata.Pairs("auth-token-bin", "old", "authorization", "Bearer new"),
			want: callCreds{kind: credBearer, token: "new"}},
		{name: "empty bearer", md: metadata.Pairs("authorization", "Bearer "), wantError: true},
		{name: "no colon", md: metadata.Pairs("authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alpw"))), wantError: true},
		{name: "empty user", md: metadata.Pairs("authorization", basicValue("", "pw")), wantError: true},
		{name: "not base64", md: metadata.Pairs("authorization", "Basic !!!"), wantError: true},
		{name: "other scheme", md: metadata.Pairs("authorization", "Digest x"), wantError: true},
		{name: "empty value", md: metadata.Pairs("authorization", ""), wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := credentialsFromMetadata(tt.md)
			if tt.wantError {
				if !errors.Is(err, errMalformed) {
					t.Fatalf("got error %v, want %v", err, errMalformed)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("Basic " + base64.StdEncoding.EncodeToString([]byte("u:p")))
	f.Add("Bearer x.y.z")
	f.Add("Basic")
	f.Add(" basic  ====")
	f.Fuzz(func(t *testing.T, v string) {
		c, err := parseAuthorization(v)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("parseAuthorization(%q): error %v does not wrap errMalformed", v, err)
			}
			return
		}
		switch c.kind {
		case credBasic:
			if c.user == "" {
				t.Fatalf("parseAuthorization(%q): Basic credentials with an empty user", v)
			}
			back, err := parseAuthorization(basicValue(c.user, c.password))
			if err != nil || back != c {
				t.Fatalf("round trip of %+v = %+v, %v", c, back, err)
			}
		case credBearer:
			if c.token == "" {
				t.Fatalf("parseAuthorization(%q): empty Bearer token", v)
			}
		default:
			t.Fatalf("parseAuthorization(%q): kind %d without error", v, c.kind)
		}
	})
}
