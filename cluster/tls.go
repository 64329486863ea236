package cluster

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/corral/corral/tlsconf"
)

// loadTLS loads the secure client port's stores (secureClientPort), before anything else
// starts, so that a bad store stops the server at once with the key at fault.
func (s *Node) loadTLS() error {
	if s.cfg.QuorumTLS.Enabled() || s.cfg.AdminAuth.HTTPS() {
		src, err := tlsconf.NewSource(s.cfg.QuorumTLS, s.log)
		if err != nil {
			return fmt.Errorf("cluster: quorum TLS: %w", err)
		}
		s.qtls = src
	}
	if !s.cfg.TLS.Enabled() {
		return nil
	}
	src, err := tlsconf.NewSource(s.cfg.TLS, s.log)
	if err != nil {
		return fmt.Errorf("cluster: secure client port: %w", err)
	}
	s.tls = src
	return nil
}

// listenClients opens the client port, the secure client port, or both: one listener that the
// client server serves (the ports differ only in TLS). The secure port's reloader runs under
// the server's context and wait group.
func (s *Node) listenClients() (net.Listener, error) {
	var ls []net.Listener
	if s.cfg.ClientPort > 0 {
		ln, err := net.Listen("tcp", s.cfg.ClientListenAddr())
		if err != nil {
			return nil, fmt.Errorf("cluster: client port: %w", err)
		}
		ls = append(ls, ln)
	}
	if s.tls != nil {
		raw, err := net.Listen("tcp", s.cfg.TLS.ListenAddr())
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, fmt.Errorf("cluster: secure client port: %w", err)
		}
		s.secureLn = tlsconf.NewListener(raw, s.tls, s.log)
		ls = append(ls, s.secureLn)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.tls.Run(s.ctx)
		}()
	}
	return tlsconf.Merge(ls...), nil
}

// SecureClientAddr is the secure client port's address ("" without secureClientPort).
func (s *Node) SecureClientAddr() string {
	if s.secureLn == nil {
		return ""
	}
	return s.secureLn.Addr().String()
}

// startQuorumTLS starts reloading the ssl.quorum.* stores (sslQuorumReloadCertFiles) under the
// server's context and wait group, and returns the source Raft links use: nil unless
// sslQuorum=true (the stores may serve the admin port alone).
func (s *Node) startQuorumTLS() *tlsconf.Source {
	if s.qtls == nil {
		return nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.qtls.Run(s.ctx)
	}()
	if !s.cfg.QuorumTLS.Enabled() {
		return nil
	}
	return s.qtls
}

// adminTLS wraps the admin port's listener in TLS (from the ssl.quorum.* stores, as
// ZooKeeper's admin server): HTTPS only with admin.forceHttps (a plaintext request is answered
// 400 by net/http), HTTP and HTTPS on the one port with admin.portUnification (a connection
// whose first byte starts a TLS record is HTTPS, tlsconf.UnifiedListener). It gives the HTTP
// server a logger for failed handshakes.
func (s *Node) adminTLS(ln net.Listener, hs *http.Server) net.Listener {
	a := s.cfg.AdminAuth
	if !a.HTTPS() {
		return ln
	}
	hs.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	cfg := s.qtls.HTTPSConfig(a.NeedClientAuth)
	if a.ForceHTTPS {
		return tls.NewListener(ln, cfg)
	}
	return tlsconf.NewUnifiedListener(ln, cfg, s.cfg.QuorumTLS.HandshakeTimeout, "admin port", s.log)
}
