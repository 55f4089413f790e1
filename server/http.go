package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/quiverdata/quiver/console"
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

// startMetrics serves /metrics alone on Config.MetricsAddr, without login,
// for scrapers (Prometheus) on an interface of their own: the HTTP port's
// /metrics asks for a login whenever the server has users. Without users
// it takes loopback addresses only, and checks the Host header as the
// HTTP port does.
func (s *Server) startMetrics() error {
	ln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen metrics on %s: %w", s.cfg.MetricsAddr, err)
	}
	var h http.Handler = promhttp.Handler()
	if s.sec.users.Len() == 0 {
		h = console.LocalOnly(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.MetricsAddr = ln.Addr().String()
	go func() {
		if err := s.sec.serveHTTP(hs, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errc <- fmt.Errorf("serve metrics: %w", err)
		}
	}()
	s.stops = append(s.stops, namedStop{"metrics", func(ctx context.Context) { hs.Shutdown(ctx) }})
	s.cfg.Announce("metrics", s.MetricsAddr)
	return nil
}
