package auth

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/auth/authtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

func TestServerTLSConfig(t *testing.T) {
	ca := authtest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.WriteServerCert(t, dir)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")

	tests := []struct {
		name, cert, key, clientCA string
		wantErr                   string // "" for success
		wantMTLS                  bool
	}{
		{name: "tls", cert: cert, key: key},
		{name: "mtls", cert: cert, key: key, clientCA: ca.CertFile, wantMTLS: true},
		{name: "no cert", key: key, wantErr: "need both"},
		{name: "no key", cert: cert, wantErr: "need both"},
		{name: "missing cert", cert: missing, key: key, wantErr: "read certificate"},
		{name: "missing key", cert: cert, key: missing, wantErr: "read key"},
		{name: "garbage cert", cert: garbage, key: key, wantErr: "load key pair"},
		{name: "key mismatch", cert: cert, key: ca.CertFile, wantErr: "load key pair"},
		{name: "missing client ca", cert: cert, key: key, clientCA: missing, wantErr: "client ca: read"},
		{name: "garbage client ca", cert: cert, key: key, clientCA: garbage, wantErr: "no PEM certificates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ServerTLSConfig(tt.cert, tt.key, tt.clientCA)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got, want := cfg.ClientAuth == tls.RequireAndVerifyClientCert, tt.wantMTLS; got != want {
				t.Errorf("requires client certificates = %v, want %v", got, want)
			}
			if got, want := cfg.MinVersion, uint16(tls.VersionTLS12); got != want {
				t.Errorf("MinVersion = %#x, want %#x", got, want)
			}
		})
	}
}

func TestClientTLSConfig(t *testing.T) {
	ca := authtest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.WriteClientCert(t, dir, "alice")
	missing := filepath.Join(dir, "missing.pem")

	tests := []struct {
		name, ca, cert, key string
		wantErr             string
		wantCerts           int
	}{
		{name: "system roots"},
		{name: "ca", ca: ca.CertFile},
		{name: "client cert", ca: ca.CertFile, cert: cert, key: key, wantCerts: 1},
		{name: "cert without key", cert: cert, wantErr: "need both"},
		{name: "key without cert", key: key, wantErr: "need both"},
		{name: "missing ca", ca: missing, wantErr: "ca: read"},
		{name: "missing cert", cert: missing, key: key, wantErr: "read certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ClientTLSConfig(tt.ca, tt.cert, tt.key, false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got, want := len(cfg.Certificates), tt.wantCerts; got != want {
				t.Errorf("client certificates = %d, want %d", got, want)
			}
			if got, want := cfg.RootCAs != nil, tt.ca != ""; got != want {
				t.Errorf("custom roots = %v, want %v", got, want)
			}
		})
	}
}

// TestTLS_Handshake runs real TLS and mutual TLS handshakes against a gRPC
// server on 127.0.0.1, calling the health service (which needs no login)
// and, where the handshake succeeds, a Basic login over it.
func TestTLS_Handshake(t *testing.T) {
	ca := authtest.NewCA(t)
	otherCA := authtest.NewCA(t)
	dir := t.TempDir()
	serverCert, serverKey := ca.WriteServerCert(t, dir, "127.0.0.1")
	wrongHostCert, wrongHostKey := ca.WriteServerCert(t, t.TempDir(), "db.example.com")
	clientCert, clientKey := ca.WriteClientCert(t, dir, "alice")
	strangerCert, strangerKey := otherCA.WriteClientCert(t, dir, "mallory")

	a, _, _ := newTestAuthenticator(t)
	serve := func(t *testing.T, cert, key, clientCA string) string {
		t.Helper()
		cfg, err := ServerTLSConfig(cert, key, clientCA)
		if err != nil {
			t.Fatal(err)
		}
		return startServer(t, a, grpc.Creds(credentials.NewTLS(cfg)))
	}
	tlsAddr := serve(t, serverCert, serverKey, "")
	mtlsAddr := serve(t, serverCert, serverKey, ca.CertFile)
	wrongHostAddr := serve(t, wrongHostCert, wrongHostKey, "")

	tests := []struct {
		name             string
		addr             string
		ca, cert, key    string
		insecure, wantOK bool
	}{
		{name: "tls", addr: tlsAddr, ca: ca.CertFile, wantOK: true},
		{name: "tls unknown ca", addr: tlsAddr, ca: otherCA.CertFile},
		{name: "tls system roots", addr: tlsAddr},
		{name: "tls insecure skip verify", addr: tlsAddr, insecure: true, wantOK: true},
		{name: "tls wrong host", addr: wrongHostAddr, ca: ca.CertFile},
		{name: "mtls", addr: mtlsAddr, ca: ca.CertFile, cert: clientCert, key: clientKey, wantOK: true},
		{name: "mtls without client cert", addr: mtlsAddr, ca: ca.CertFile},
		{name: "mtls client cert from other ca", addr: mtlsAddr, ca: ca.CertFile, cert: strangerCert, key: strangerKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ClientTLSConfig(tt.ca, tt.cert, tt.key, tt.insecure)
			if err != nil {
				t.Fatal(err)
			}
			creds := grpc.WithTransportCredentials(credentials.NewTLS(cfg))
			_, err = healthpb.NewHealthClient(dialConn(t, tt.addr, creds)).Check(testContext(t), &healthpb.HealthCheckRequest{})
			if got := err == nil; got != tt.wantOK {
				t.Fatalf("health check succeeded = %v (error %v), want %v", got, err, tt.wantOK)
			}
			if !tt.wantOK {
				t.Logf("failed as it should: %v", err)
				return
			}
			ctx := metadata.AppendToOutgoingContext(testContext(t), "authorization", basicValue("alice", "alice-pw"))
			got, _, err := calls["unary"](ctx, dial(t, tt.addr, creds))
			if want := "alice/admin"; err != nil || got != want {
				t.Errorf("whoami over TLS = %q, %v; want %q, nil", got, err, want)
			}
		})
	}
}
