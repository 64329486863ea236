package tlsconf

import (
	"crypto/tls"
	"strings"
)

// defaultCiphers is ZooKeeper 3.8's X509Util default for Java 9 and later (AES-GCM first, then
// AES-CBC). Go implements all but TLS_ECDHE_*_WITH_AES_256_CBC_SHA384, which are left out
// quietly when the list is the default.
var defaultCiphers = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
	"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
}

// cipherResult is what a list of Java cipher suite names comes to in Go.
type cipherResult struct {
	ids         []uint16 // TLS 1.0-1.2 suites Go implements, in the list's order
	tls13       []string // TLS 1.3 suites named: Go always enables all three
	unsupported []string // names Go does not implement (or not at all a suite)
}

// mapCiphers maps Java (JSSE) cipher suite names to Go's. JSSE uses the IANA names, which Go
// uses too, except for the SSL_ prefix of some old suites (SSL_RSA_WITH_3DES_EDE_CBC_SHA is
// TLS_RSA_WITH_3DES_EDE_CBC_SHA).
func mapCiphers(names []string) cipherResult {
	byName := map[string]*tls.CipherSuite{}
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, cs := range list {
			byName[cs.Name] = cs
		}
	}
	var r cipherResult
	for _, n := range names {
		cs := byName[n]
		if cs == nil && strings.HasPrefix(n, "SSL_") {
			cs = byName["TLS_"+strings.TrimPrefix(n, "SSL_")]
		}
		switch {
		case cs == nil:
			r.unsupported = append(r.unsupported, n)
		case len(cs.SupportedVersions) == 1 && cs.SupportedVersions[0] == tls.VersionTLS13:
			r.tls13 = append(r.tls13, n)
		default:
			r.ids = append(r.ids, cs.ID)
		}
	}
	return r
}
