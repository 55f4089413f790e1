package authtest

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

func TestCA_WriteServerCert(t *testing.T) {
	ca := NewCA(t)
	tests := []struct {
		name  string
		hosts []string
		check string // a name the certificate must be valid for
	}{
		{name: "default", check: "127.0.0.1"},
		{name: "default localhost", check: "localhost"},
		{name: "dns", hosts: []string{"db.example.com"}, check: "db.example.com"},
		{name: "ipv6", hosts: []string{"::1"}, check: "::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certFile, keyFile := ca.WriteServerCert(t, t.TempDir(), tt.hosts...)
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatalf("load key pair: %v", err)
			}
			_, err = pair.Leaf.Verify(x509.VerifyOptions{
				DNSName:   tt.check,
				Roots:     ca.Pool(),
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			if err != nil {
				t.Errorf("verify for %q: %v", tt.check, err)
			}
		})
	}
}

func TestCA_WriteClientCert(t *testing.T) {
	ca := NewCA(t)
	certFile, keyFile := ca.WriteClientCert(t, t.TempDir(), "alice")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("load key pair: %v", err)
	}
	if got, want := pair.Leaf.Subject.CommonName, "alice"; got != want {
		t.Errorf("common name = %q, want %q", got, want)
	}
	_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Errorf("verify as client: %v", err)
	}
	other := NewCA(t)
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: other.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("verify against another CA: got nil error, want one")
	}
}
