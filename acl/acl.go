package acl

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/corral/corral/wire"
)

// Scheme names.
const (
	SchemeWorld  = "world"
	SchemeAuth   = "auth"
	SchemeDigest = "digest"
	SchemeIP     = "ip"
	SchemeSuper  = "super"
	SchemeSASL   = "sasl"
)

// Check reports whether ids may perform perm (one or more wire.Perm* bits; any overlapping bit
// suffices, as for getACL's READ|ADMIN) on a node with the given ACL. It is ZooKeeper's checkACL:
// an empty ACL allows everything, a "super" id allows everything, world:anyone matches everyone,
// digest ids match by equality and ip ACLs match by address or address/prefix-bits.
func Check(acls []wire.ACL, perm int32, ids []wire.ID) bool {
	if len(acls) == 0 {
		return true
	}
	for i := range ids {
		if ids[i].Scheme == SchemeSuper {
			return true
		}
	}
	for i := range acls {
		a := &acls[i]
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == SchemeWorld && a.ID.ID == "anyone" {
			return true
		}
		for j := range ids {
			if ids[j].Scheme == a.ID.Scheme && matches(a.ID.Scheme, ids[j].ID, a.ID.ID) {
				return true
			}
		}
	}
	return false
}

// matches is the provider's matches(id, aclExpr): equality for digest and for schemes this
// package has no provider for (Fixup never admits those, so they only occur in ACLs written by
// Corral itself), address/prefix matching for ip.
func matches(scheme, id, expr string) bool {
	switch scheme {
	case SchemeDigest:
		return id == expr
	case SchemeIP:
		return ipMatches(id, expr)
	case SchemeSASL:
		// SASLAuthenticationProvider.matches: a SASL user named "super" matches every sasl
		// entry (zookeeper.letAnySaslUserDoX is not supported).
		return id == expr || id == "super"
	case SchemeWorld:
		return false // only world:anyone grants, handled by Check
	}
	return id == expr
}

// Digest derives the digest-scheme id of a "user:password" credential, as
// DigestAuthenticationProvider.generateDigest: the user part (everything before the first ':',
// or the whole string) followed by ':' and the base64 of SHA-1 over the whole credential.
func Digest(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// Fixup validates and normalises the ACL list of a create or setACL request for a caller with
// the given ids, as PrepRequestProcessor.fixupACL:
//   - exact duplicates (same perms, scheme and id) are removed first, keeping the first
//     occurrence; an empty (or null) list is INVALIDACL;
//   - world:anyone is kept; any other world id is INVALIDACL;
//   - an "auth" entry is replaced by one entry with its perms for each of the caller's
//     authenticated ids (digest and x509 ids; not ip, not super), in the caller's order; INVALIDACL when
//     the caller has none. The expansion is not deduplicated again, as in ZooKeeper;
//   - digest ids must split on ':' into exactly two parts (Java split semantics: trailing empty
//     parts are dropped, so "user:" is invalid and "a:b:" is valid);
//   - ip ids must be an IPv4 or IPv6 address with an optional /bits suffix within range;
//   - sasl ids must be Kerberos-style names (saslValid), and the "auth" scheme expands to the
//     caller's sasl ids too: Corral always has ZooKeeper's SASLAuthenticationProvider
//     (authProvider.N), see the package doc;
//   - x509 ids must parse as an X.500 name (x509Valid);
//   - any other scheme is INVALIDACL.
//
// acls is not modified. The returned slice is acls itself when that is one world:anyone entry
// (nothing to fix), else freshly allocated: a caller that keeps it copies it.
func Fixup(acls []wire.ACL, ids []wire.ID) ([]wire.ACL, wire.Err) {
	if len(acls) == 1 && acls[0].ID.Scheme == SchemeWorld && acls[0].ID.ID == "anyone" {
		return acls, wire.ErrOK // the common case (OPEN_ACL_UNSAFE), already in final form
	}
	uniq := make([]wire.ACL, 0, len(acls))
	for _, a := range acls {
		dup := false
		for _, u := range uniq {
			if u == a {
				dup = true
				break
			}
		}
		if !dup {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, wire.ErrInvalidACL
	}
	out := make([]wire.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case a.ID.Scheme == SchemeWorld && a.ID.ID == "anyone":
			out = append(out, a)
		case a.ID.Scheme == SchemeAuth:
			found := false
			for _, id := range ids {
				if authenticated(id.Scheme) {
					found = true
					out = append(out, wire.ACL{Perms: a.Perms, ID: id})
				}
			}
			if !found {
				return nil, wire.ErrInvalidACL
			}
		default:
			if !ValidID(a.ID) {
				return nil, wire.ErrInvalidACL
			}
			out = append(out, a)
		}
	}
	return out, wire.ErrOK
}

// authenticated reports whether ids of the scheme are expanded by the "auth" ACL scheme
// (ServerAuthenticationProvider.isAuthenticated: digest and x509; ip is not, and schemes without
// a provider, such as super, are skipped).
func authenticated(scheme string) bool {
	return scheme == SchemeDigest || scheme == SchemeSASL || scheme == SchemeX509
}

// ValidID reports whether id is acceptable in an ACL entry of a known provider (isValid of the
// ip and digest providers). world:anyone is valid; "auth" is not an id (Fixup expands it).
func ValidID(id wire.ID) bool {
	switch id.Scheme {
	case SchemeWorld:
		return id.ID == "anyone"
	case SchemeDigest:
		return digestValid(id.ID)
	case SchemeIP:
		return ipValid(id.ID)
	case SchemeSASL:
		return saslValid(id.ID)
	case SchemeX509:
		return x509Valid(id.ID)
	}
	return false
}

// saslValid is SASLAuthenticationProvider.isValid: the id parses as a KerberosName (at most
// one '@'; with one, no '/' after it and at most one before it).
func saslValid(id string) bool {
	principal, realm, found := strings.Cut(id, "@")
	return !found || (!strings.ContainsAny(realm, "/@") && strings.Count(principal, "/") <= 1)
}

// digestValid is DigestAuthenticationProvider.isValid: id.split(":").length == 2, with Java's
// removal of trailing empty strings.
func digestValid(id string) bool {
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// Mask returns the ACL list getACL reports. Callers with ADMIN permission see it unchanged;
// others (they passed the READ|ADMIN check with READ) see every digest id with its hash replaced
// by "x" ("user:x"), as ZooKeeper 3.8's FinalRequestProcessor does with
// id.replaceAll(":.*", ":x"). The input is never modified; a new slice is returned only when an
// entry changes.
func Mask(acls []wire.ACL, canAdmin bool) []wire.ACL {
	if canAdmin {
		return acls
	}
	var out []wire.ACL
	for i, a := range acls {
		if a.ID.Scheme != SchemeDigest {
			continue
		}
		m := maskDigest(a.ID.ID)
		if m == a.ID.ID {
			continue
		}
		if out == nil {
			out = make([]wire.ACL, len(acls))
			copy(out, acls)
		}
		out[i].ID.ID = m
	}
	if out == nil {
		return acls
	}
	return out
}

// maskDigest applies Java's s.replaceAll(":.*", ":x"): every ':' followed by the longest run of
// characters that are not line terminators ('.' does not match \n, \r, U+0085, U+2028, U+2029
// without DOTALL) is replaced by ":x".
func maskDigest(s string) string {
	if !strings.Contains(s, ":") {
		return s
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+j])
		b.WriteString(":x")
		i += j + 1
		// skip to the next line terminator
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029' {
				break
			}
			i += size
		}
	}
	return b.String()
}
