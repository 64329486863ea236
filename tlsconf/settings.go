package tlsconf

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Errors. Configuration errors name the zoo.cfg key at fault.
var (
	ErrConfig = errors.New("tlsconf: configuration")
	ErrStore  = errors.New("tlsconf: store")
)

// X509ProviderClass is the class name ZooKeeper's authProvider.* keys give for the x509 scheme.
const X509ProviderClass = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"

// Store describes one key or trust store (ssl.keyStore.* or ssl.trustStore.*).
type Store struct {
	Location     string
	Password     string
	PasswordPath string // a file holding the password (ZooKeeper's *.passwordPath)
	Type         string // PEM, PKCS12 or JKS; "" infers it from Location's extension
}

// Settings are the TLS keys of a zoo.cfg. The zero value has no secure port; Defaults gives
// ZooKeeper's defaults for the rest.
type Settings struct {
	SecurePort        int    // secureClientPort; 0: no secure port
	SecurePortAddress string // secureClientPortAddress; "" all addresses
	KeyStore          Store
	TrustStore        Store
	ClientAuth        string   // ssl.clientAuth: need (default), want or none
	Protocol          string   // ssl.protocol (default TLSv1.2)
	EnabledProtocols  []string // ssl.enabledProtocols (default: Protocol alone)
	CipherSuites      []string // ssl.ciphersuites, Java names (default: defaultCiphers)
	// HostnameVerification (ssl.hostnameVerification, default true) is accepted: on a client
	// port ZooKeeper never checks a client certificate's host names (ClientX509Util), so it
	// changes nothing on the server. ssl.quorum.hostnameVerification checks a peer's
	// certificate on both sides of a link (quorum.go).
	HostnameVerification bool
	// AllowReverseDNS (ssl.quorum.allowReverseDnsLookup, default true, the key of ZooKeeper
	// 3.8.1+; 3.8.0 always looks up) lets the accepting side of a quorum link check the
	// dialler's certificate against the reverse DNS names of its address when the address
	// itself is not among its IP SANs. Accepted and unused on the client port.
	AllowReverseDNS bool
	CRL, OCSP       bool   // ssl.crl, ssl.ocsp: revocation checks, not supported (Validate)
	AuthProvider    string // ssl.authProvider: the scheme TLS clients authenticate with (x509)
	// SuperUser is X509AuthenticationProvider.superUser: a client whose certificate subject is
	// this name is also super (every ACL grants it).
	SuperUser string
	// Reload (client.certReload, default true) re-reads the stores when their files change,
	// every ReloadInterval (corral.ssl.reloadIntervalMs, default 5 s).
	Reload         bool
	ReloadInterval time.Duration
	// HandshakeTimeout bounds a TLS handshake (corral.ssl.handshakeTimeoutMs, default 10 s, as
	// Netty's SslHandler).
	HandshakeTimeout time.Duration
	// Quorum marks the settings of the links between servers (QuorumDefaults): their keys are
	// ssl.quorum.* and sslQuorum turns them on (quorum.go).
	Quorum    bool
	SSLQuorum bool // sslQuorum: Raft links between servers are TLS
}

// Defaults returns ZooKeeper 3.8's defaults.
func Defaults() Settings {
	return Settings{
		ClientAuth:           "need",
		Protocol:             "TLSv1.2",
		HostnameVerification: true,
		AllowReverseDNS:      true,
		AuthProvider:         "x509",
		Reload:               true,
		ReloadInterval:       5 * time.Second,
		HandshakeTimeout:     10 * time.Second,
	}
}

// Enabled reports whether a secure client port is configured (for quorum settings: whether
// sslQuorum is on).
func (s *Settings) Enabled() bool {
	if s.Quorum {
		return s.SSLQuorum
	}
	return s.SecurePort > 0
}

// key names the zoo.cfg key of a TLS setting: ssl.<name>, or ssl.quorum.<name> for quorum
// settings.
func (s *Settings) key(name string) string {
	if s.Quorum {
		return "ssl.quorum." + name
	}
	return "ssl." + name
}

// what names the port the settings secure, in log lines.
func (s *Settings) what() string {
	if s.Quorum {
		return "quorum TLS"
	}
	return "secure client port"
}

// ListenAddr is the address the secure client port binds.
func (s *Settings) ListenAddr() string {
	return net.JoinHostPort(s.SecurePortAddress, strconv.Itoa(s.SecurePort))
}

// Set applies one zoo.cfg key. It reports false for keys that are not TLS keys (the caller
// handles or warns about them); an error says what is wrong with the value (the caller names the
// key and line).
func (s *Settings) Set(k, v string) (bool, error) {
	if s.Quorum {
		return s.setQuorum(k, v)
	}
	var err error
	boolean := func(dst *bool) {
		// Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
		*dst = strings.EqualFold(v, "true")
	}
	ms := func(dst *time.Duration) {
		n, perr := strconv.Atoi(v)
		if perr != nil || n <= 0 {
			err = fmt.Errorf("%w: %q is not a positive number of milliseconds", ErrConfig, v)
			return
		}
		*dst = time.Duration(n) * time.Millisecond
	}
	switch k {
	case "secureClientPort":
		s.SecurePort, err = strconv.Atoi(v)
		if err != nil || s.SecurePort <= 0 || s.SecurePort > 65535 {
			err = fmt.Errorf("%w: %q is not a port number", ErrConfig, v)
		}
	case "secureClientPortAddress":
		s.SecurePortAddress = v
	case "serverCnxnFactory":
		// ZooKeeper needs NettyServerCnxnFactory for a secure port; Corral has one connection
		// layer, which serves both ports.
		if v != "org.apache.zookeeper.server.NettyServerCnxnFactory" && v != "org.apache.zookeeper.server.NIOServerCnxnFactory" {
			err = fmt.Errorf("%w: %q: Corral knows NettyServerCnxnFactory and NIOServerCnxnFactory", ErrConfig, v)
		}
	case "ssl.clientAuth":
		switch strings.ToLower(v) {
		case "":
			s.ClientAuth = "need" // ClientAuth.fromPropertyValue: empty is NEED
		case "need", "want", "none":
			s.ClientAuth = strings.ToLower(v)
		default:
			err = fmt.Errorf("%w: %q: want need, want or none", ErrConfig, v)
		}
	case "ssl.protocol":
		if _, ok := protocolVersions[v]; !ok {
			err = fmt.Errorf("%w: %q: want one of %s", ErrConfig, v, protocolNames())
		}
		s.Protocol = v
	case "ssl.enabledProtocols":
		s.EnabledProtocols = splitList(v)
		for _, p := range s.EnabledProtocols {
			if _, ok := protocolVersions[p]; !ok || p == "TLS" {
				err = fmt.Errorf("%w: %q: want protocols among TLSv1, TLSv1.1, TLSv1.2, TLSv1.3", ErrConfig, p)
			}
		}
	case "ssl.ciphersuites":
		s.CipherSuites = splitList(v)
	case "ssl.hostnameVerification":
		boolean(&s.HostnameVerification)
	case "ssl.allowReverseDnsLookup":
		boolean(&s.AllowReverseDNS)
	case "ssl.crl":
		boolean(&s.CRL)
	case "ssl.ocsp":
		boolean(&s.OCSP)
	case "ssl.authProvider":
		s.AuthProvider = v
	case "ssl.handshakeDetectionTimeoutMillis":
		// ZooKeeper's port unification (client.portUnification) waits this long for a
		// client's first bytes; Corral does not unify ports, so it changes nothing.
		var d time.Duration
		ms(&d)
	case "ssl.context.supplier.class":
		err = fmt.Errorf("%w: a Java SSLContext supplier cannot be loaded by Corral; configure the stores instead", ErrConfig)
	case "X509AuthenticationProvider.superUser":
		s.SuperUser = v
	case "client.certReload":
		boolean(&s.Reload)
	case "corral.ssl.reloadIntervalMs":
		ms(&s.ReloadInterval)
	case "corral.ssl.handshakeTimeoutMs":
		ms(&s.HandshakeTimeout)
	default:
		if f, ok := strings.CutPrefix(k, "ssl.keyStore."); ok {
			return setStore(&s.KeyStore, f, v)
		}
		if f, ok := strings.CutPrefix(k, "ssl.trustStore."); ok {
			return setStore(&s.TrustStore, f, v)
		}
		if !strings.HasPrefix(k, "authProvider.") {
			return false, nil
		}
		// authProvider.<anything>=<class> registers the class under its own scheme. Only the
		// x509 provider is TLS's business; other schemes (sasl, ...) are left to the caller.
		if v == X509ProviderClass {
			return true, nil
		}
		if k == "authProvider.x509" {
			return true, fmt.Errorf("%w: %q: Corral's x509 scheme is %s (Java classes cannot be loaded)", ErrConfig, v, X509ProviderClass)
		}
		return false, nil
	}
	return true, err
}

// Validate checks the settings for mistakes an operator can fix. Keys that only matter with a
// secure port are checked only when one is configured.
func (s *Settings) Validate() error {
	if s.Quorum {
		return s.validateQuorum()
	}
	if !s.Enabled() {
		if s.SecurePortAddress != "" {
			// QuorumPeerConfig: "secureClientPortAddress is set but secureClientPort is not set".
			return fmt.Errorf("%w: secureClientPortAddress is set but secureClientPort is not set", ErrConfig)
		}
		return nil
	}
	switch {
	case s.KeyStore.Location == "":
		return fmt.Errorf("%w: secureClientPort needs ssl.keyStore.location (the server's certificate and key)", ErrConfig)
	case s.TrustStore.Location == "" && s.ClientAuth != "none":
		// ZooKeeper would verify client certificates with the JVM's default trust store and then
		// fail every one in X509AuthenticationProvider ("No trust manager available").
		return fmt.Errorf("%w: ssl.clientAuth=%s needs ssl.trustStore.location (the CAs client certificates are checked against); or set ssl.clientAuth=none", ErrConfig, s.ClientAuth)
	case s.CRL:
		return fmt.Errorf("%w: ssl.crl=true: certificate revocation lists are not supported", ErrConfig)
	case s.OCSP:
		return fmt.Errorf("%w: ssl.ocsp=true: OCSP is not supported", ErrConfig)
	case s.AuthProvider != "x509":
		// QuorumPeerConfig.configureSSLAuth fails the same way when no provider is registered
		// for the scheme; Corral registers only x509.
		return fmt.Errorf("%w: ssl.authProvider=%s: no auth provider configured for the SSL authentication scheme %q (Corral has x509)", ErrConfig, s.AuthProvider, s.AuthProvider)
	}
	if _, _, err := s.versions(); err != nil {
		return err
	}
	return nil
}

// protocolVersions maps Java's SSLContext protocol names to Go's versions. "TLS" is Java's
// "any supported version" (Go's default range).
var protocolVersions = map[string]uint16{
	"TLSv1":   0x0301,
	"TLSv1.1": 0x0302,
	"TLSv1.2": 0x0303,
	"TLSv1.3": 0x0304,
	"TLS":     0,
}

func protocolNames() string { return "TLS, TLSv1, TLSv1.1, TLSv1.2, TLSv1.3" }

// versions returns the range of protocol versions to enable: ssl.enabledProtocols, or
// ssl.protocol alone, as X509Util.getEnabledProtocols. Go enables a contiguous range; a list
// with a gap (TLSv1 and TLSv1.3) is refused.
func (s *Settings) versions() (lo, hi uint16, err error) {
	list := s.EnabledProtocols
	if len(list) == 0 {
		if s.Protocol == "TLS" {
			return 0x0303, 0x0304, nil // Java 17's enabled server protocols: TLSv1.3, TLSv1.2
		}
		list = []string{s.Protocol}
	}
	seen := map[uint16]bool{}
	for _, p := range list {
		v, ok := protocolVersions[p]
		if !ok || v == 0 {
			return 0, 0, fmt.Errorf("%w: %s: %q is not a TLS protocol version", ErrConfig, s.key("enabledProtocols"), p)
		}
		seen[v] = true
		if lo == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	for v := lo; v <= hi; v++ {
		if !seen[v] {
			return 0, 0, fmt.Errorf("%w: %s=%s has a gap; Go enables a contiguous range of versions", ErrConfig, s.key("enabledProtocols"), strings.Join(list, ","))
		}
	}
	return lo, hi, nil
}

// setStore sets field (location, password, passwordPath, type) of an ssl.keyStore or
// ssl.trustStore key.
func setStore(st *Store, field, v string) (bool, error) {
	var err error
	switch field {
	case "location":
		st.Location = v
	case "password":
		st.Password = v
	case "passwordPath":
		st.PasswordPath = v
	case "type":
		st.Type, err = storeType(v)
	default:
		return false, nil
	}
	return true, err
}

func storeType(v string) (string, error) {
	switch t := strings.ToUpper(strings.TrimSpace(v)); t {
	case "":
		return "", nil
	case "PEM", "PKCS12", "JKS":
		return t, nil
	case "BCFKS":
		return "", fmt.Errorf("%w: BCFKS stores are not supported (PEM, PKCS12, JKS are)", ErrConfig)
	default:
		return "", fmt.Errorf("%w: store type %q: want PEM, PKCS12 or JKS", ErrConfig, v)
	}
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
