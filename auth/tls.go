package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ServerTLSConfig returns the TLS configuration for a listener serving the
// certificate in certFile with the private key in keyFile (both PEM). If
// clientCAFile is not empty, the server requires every client to present a
// certificate signed by a CA in that file (mutual TLS). TLS 1.2 is the
// minimum. Use it with grpc.Creds(credentials.NewTLS(cfg)).
func ServerTLSConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("server tls: need both a certificate file and a key file")
	}
	cert, err := loadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server tls: %w", err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
	if clientCAFile != "" {
		pool, err := loadCertPool(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("server tls: client ca: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientTLSConfig returns the TLS configuration for dialing a server. The
// server's certificate is checked against the CAs in caFile, or the system's
// roots when caFile is empty. certFile and keyFile, given together or not at
// all, are the client certificate for mutual TLS. insecureSkipVerify turns
// off all checking of the server's certificate; it is for tests and
// throwaway setups only. Use it with grpc.WithTransportCredentials(
// credentials.NewTLS(cfg)), which fills in the server name from the target.
func ClientTLSConfig(caFile, certFile, keyFile string, insecureSkipVerify bool) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: insecureSkipVerify, //nolint:gosec // the caller asked for it
	}
	if caFile != "" {
		pool, err := loadCertPool(caFile)
		if err != nil {
			return nil, fmt.Errorf("client tls: ca: %w", err)
		}
		cfg.RootCAs = pool
	}
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "" || keyFile == "":
		return nil, errors.New("client tls: need both a certificate file and a key file, or neither")
	default:
		cert, err := loadKeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client tls: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// loadKeyPair reads a PEM certificate and key, telling a missing file apart
// from a bad one.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("read key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load key pair %s, %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// loadCertPool reads the PEM certificates in path into a pool.
func loadCertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificates in %s", path)
	}
	return pool, nil
}
