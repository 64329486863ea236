package cluster

import (
	"fmt"
	"net"

	"github.com/corral/corral/tlsconf"
)

// loadTLS loads the secure client port's stores (secureClientPort), before anything else
// starts, so that a bad store stops the server at once with the key at fault.
func (s *Server) loadTLS() error {
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
func (s *Server) listenClients() (net.Listener, error) {
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
func (s *Server) SecureClientAddr() string {
	if s.secureLn == nil {
		return ""
	}
	return s.secureLn.Addr().String()
}
