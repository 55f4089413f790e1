package server

import (
	"crypto/tls"
	"net"
	"net/http"
)

// passwordTLS is the TLS configuration of the ports whose clients log in
// with a password (MySQL, HTTP): the server's certificate, and a client
// certificate checked only when one is given, since browsers and MySQL
// clients seldom hold the one --tls-client-ca asks Flight's for. Nil
// without TLS.
func (sec *security) passwordTLS() *tls.Config {
	if sec.tls == nil {
		return nil
	}
	cfg := sec.tls.Clone()
	if cfg.ClientAuth == tls.RequireAndVerifyClientCert {
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg
}

// serveHTTP serves hs on ln: HTTPS with the server's certificate when TLS
// is configured, so that passwords, session cookies and results never
// cross the network in clear, else plain HTTP.
func (sec *security) serveHTTP(hs *http.Server, ln net.Listener) error {
	cfg := sec.passwordTLS()
	if cfg == nil {
		return hs.Serve(ln)
	}
	hs.TLSConfig = cfg
	// The certificate is in the configuration: no files to name.
	return hs.ServeTLS(ln, "", "")
}
