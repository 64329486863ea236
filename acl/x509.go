package acl

import (
	"strings"
)

// SchemeX509 is the scheme of ZooKeeper's X509AuthenticationProvider: a TLS client's
// certificate subject (RFC 2253, as X500Principal.getName()). ZooKeeper registers the provider
// when a secure client port is configured; Corral accepts x509 ACLs everywhere, because ACLs are
// validated in the replicated apply, which cannot depend on one server's configuration
// (docs/compatibility.md). Ids match by equality.
const SchemeX509 = "x509"

// x500Keywords are the attribute keywords Java's X500Principal(String) accepts (AVAKeyword,
// any case); OIDs are accepted as "1.2.3" or "OID.1.2.3".
var x500Keywords = map[string]bool{
	"CN": true, "C": true, "L": true, "S": true, "ST": true, "O": true, "OU": true, "T": true,
	"IP": true, "STREET": true, "DC": true, "DNQUALIFIER": true, "DNQ": true, "SURNAME": true,
	"GIVENNAME": true, "INITIALS": true, "GENERATION": true, "EMAIL": true, "EMAILADDRESS": true,
	"UID": true, "SERIALNUMBER": true,
}

// x509Valid approximates X509AuthenticationProvider.isValid (new X500Principal(id) succeeds):
// the empty name, or RDNs separated by ',' or ';', each one or more keyword=value pairs joined
// by '+', where a value is a string with \-escapes, a "quoted" string or #hex.
func x509Valid(id string) bool {
	if strings.TrimSpace(id) == "" {
		return true
	}
	for _, rdn := range splitUnescaped(id, ",;") {
		if rdn == nil {
			return false
		}
		for _, ava := range splitUnescaped(*rdn, "+") {
			if ava == nil || !avaValid(*ava) {
				return false
			}
		}
	}
	return true
}

// splitUnescaped splits s at the separator bytes that are neither \-escaped nor inside double
// quotes; a nil part marks a dangling escape or an unclosed quote.
func splitUnescaped(s, seps string) []*string {
	var out []*string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) {
				return append(out, nil)
			}
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && strings.IndexByte(seps, c) >= 0:
			part := s[start:i]
			out = append(out, &part)
			start = i + 1
		}
	}
	if quoted {
		return append(out, nil)
	}
	part := s[start:]
	return append(out, &part)
}

func avaValid(ava string) bool {
	k, v, ok := strings.Cut(ava, "=")
	if !ok {
		return false
	}
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !x500Keywords[strings.ToUpper(k)] && !oidValid(strings.TrimPrefix(strings.TrimPrefix(k, "OID."), "oid.")) {
		return false
	}
	if strings.HasPrefix(v, "#") {
		h := v[1:]
		if len(h) == 0 || len(h)%2 != 0 {
			return false
		}
		for i := 0; i < len(h); i++ {
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(h[i])) {
				return false
			}
		}
	}
	return true
}

func oidValid(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}
