package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// QuorumDefaults returns ZooKeeper 3.8's defaults for the links between servers: the keys are
// QuorumX509Util's (ssl.quorum.*), sslQuorum turns TLS on (default off) and
// sslQuorumReloadCertFiles reloads the stores when they change (default off, as in
// ZooKeeper). The rest defaults as on the client port: clientAuth need, TLSv1.2, hostname
// verification on.
func QuorumDefaults() Settings {
	s := Defaults()
	s.Quorum = true
	s.Reload = false
	return s
}

// quorumKeys are the ssl.quorum.<name> keys QuorumX509Util reads that Corral honours; each
// means what ssl.<name> means on the client port.
var quorumKeys = map[string]bool{
	"protocol": true, "enabledProtocols": true, "ciphersuites": true, "hostnameVerification": true,
	"allowReverseDnsLookup": true, "clientAuth": true, "crl": true, "ocsp": true,
	"handshakeDetectionTimeoutMillis": true, "context.supplier.class": true,
}

// setQuorum is Set for quorum settings.
func (s *Settings) setQuorum(k, v string) (bool, error) {
	switch k {
	case "sslQuorum":
		s.SSLQuorum = strings.EqualFold(v, "true")
		return true, nil
	case "sslQuorumReloadCertFiles":
		s.Reload = strings.EqualFold(v, "true")
		return true, nil
	case "corral.ssl.reloadIntervalMs", "corral.ssl.handshakeTimeoutMs":
		// Corral's own timing keys apply to both (cluster gives them to each).
		s.Quorum = false
		defer func() { s.Quorum = true }()
		return s.Set(k, v)
	case "portUnification":
		// ZooKeeper's quorum port then takes TLS and plaintext peers alike (a rolling switch to
		// sslQuorum). Corral's Raft port is one or the other.
		if strings.EqualFold(v, "true") {
			return true, fmt.Errorf("%w: portUnification=true: a Corral Raft port is either TLS (sslQuorum=true) or plaintext; switch every server at once", ErrConfig)
		}
		return true, nil
	}
	name, ok := strings.CutPrefix(k, "ssl.quorum.")
	if !ok {
		return false, nil
	}
	if !quorumKeys[name] && !strings.HasPrefix(name, "keyStore.") && !strings.HasPrefix(name, "trustStore.") {
		return false, nil
	}
	s.Quorum = false // the client port's parser, on the same fields
	defer func() { s.Quorum = true }()
	return s.Set("ssl."+name, v)
}

// validateQuorum is Validate for quorum settings: with sslQuorum every link is mutually
// authenticated, so both stores are needed.
func (s *Settings) validateQuorum() error {
	if !s.SSLQuorum {
		return nil
	}
	switch {
	case s.KeyStore.Location == "":
		return fmt.Errorf("%w: sslQuorum=true needs ssl.quorum.keyStore.location (this server's certificate and key, presented to its peers)", ErrConfig)
	case s.TrustStore.Location == "":
		return fmt.Errorf("%w: sslQuorum=true needs ssl.quorum.trustStore.location (the CAs peers' certificates are checked against)", ErrConfig)
	case s.CRL:
		return fmt.Errorf("%w: ssl.quorum.crl=true: certificate revocation lists are not supported", ErrConfig)
	case s.OCSP:
		return fmt.Errorf("%w: ssl.quorum.ocsp=true: OCSP is not supported", ErrConfig)
	}
	_, _, err := s.versions()
	return err
}

// ClientConfig returns the configuration for dialling a peer at addr (host:port) from the
// current stores: this server's certificate, the trust store as roots, and the peer's
// certificate checked against host when hostnameVerification is on (ZooKeeper's
// ZKTrustManager does the same for a quorum client).
func (src *Source) ClientConfig(addr string) *tls.Config {
	cur := src.Config()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg := &tls.Config{
		Certificates: cur.Certificates, RootCAs: cur.ClientCAs, ServerName: host,
		MinVersion: cur.MinVersion, MaxVersion: cur.MaxVersion, CipherSuites: cur.CipherSuites,
	}
	if !src.set.HostnameVerification {
		roots := cur.ClientCAs
		cfg.InsecureSkipVerify = true // the chain is still verified, below, without the name
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	}
	return cfg
}

// verifyChain verifies a peer's certificate chain against roots, without a host name.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tlsconf: the peer sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(opts)
	return err
}

// HTTPSConfig returns a server configuration for an HTTPS port served from src's stores
// (the admin port with admin.forceHttps): each handshake takes the stores current then.
// needClientAuth (admin.needClientAuth) requires a client certificate that the trust store
// verifies; otherwise one is verified if given.
func (src *Source) HTTPSConfig(needClientAuth bool) *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := src.Config().Clone()
		cfg.SessionTicketsDisabled = false
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if needClientAuth {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
		return cfg, nil
	}}
}

// lookupAddr resolves an address to host names (reverse DNS); tests replace it.
var lookupAddr = net.DefaultResolver.LookupAddr

// acceptConfig is the configuration the accepting side of a quorum link uses for a peer
// dialling from remote: cfg, plus with ssl.quorum.hostnameVerification the check ZooKeeper's
// ZKTrustManager.checkClientTrusted makes for a quorum peer (QuorumX509Util verifies client
// host names, ClientX509Util does not): the dialler's certificate, once its chain verified,
// must name the dialler's IP address among its IP SANs or, with allowReverseDnsLookup, one of
// the names reverse DNS gives for that address among its DNS names. The handshake fails
// otherwise (the dialler gets a bad_certificate alert) with an error naming the address and
// the names tried. Other settings (the client port) get cfg unchanged.
func (s *Settings) acceptConfig(cfg *tls.Config, remote net.Addr) *tls.Config {
	if !s.Quorum || !s.HostnameVerification {
		return cfg
	}
	host, _, err := net.SplitHostPort(remote.String())
	if err != nil {
		host = remote.String()
	}
	reverse, timeout := s.AllowReverseDNS, s.HandshakeTimeout
	c := cfg.Clone()
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return nil // no certificate asked for (clientAuth none) or none sent (want)
		}
		return verifyPeerHost(cs.PeerCertificates[0], host, reverse, timeout)
	}
	return c
}

// verifyPeerHost checks leaf against the peer's address ip, then, when reverse is set, against
// the names reverse DNS gives for it (ZKTrustManager.performHostVerification).
func verifyPeerHost(leaf *x509.Certificate, ip string, reverse bool, timeout time.Duration) error {
	if leaf.VerifyHostname(ip) == nil {
		return nil
	}
	if !reverse {
		return fmt.Errorf("tlsconf: ssl.quorum.hostnameVerification: the peer's certificate (%s) does not name its address %s, and ssl.quorum.allowReverseDnsLookup=false", leaf.Subject, ip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	names, err := lookupAddr(ctx, ip)
	cancel()
	for _, n := range names {
		if leaf.VerifyHostname(strings.TrimSuffix(n, ".")) == nil {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("tlsconf: ssl.quorum.hostnameVerification: the peer's certificate (%s) does not name its address %s, and its reverse DNS lookup failed: %w", leaf.Subject, ip, err)
	}
	return fmt.Errorf("tlsconf: ssl.quorum.hostnameVerification: the peer's certificate (%s) names neither its address %s nor its reverse DNS names %v", leaf.Subject, ip, names)
}
