package sasl

import (
	"fmt"
	"strings"
)

// AuthorizationID returns the identity ZooKeeper 3.8 records for an authenticated name
// (SaslServerCallbackHandler.handleAuthorizeCallback through KerberosName), on a host without
// a Kerberos configuration, whose default realm is therefore empty:
//   - a name without '@' is kept as it is ("bob", "bob/host");
//   - a name of the Kerberos form primary[/instance]@REALM keeps its primary, then
//     "/instance" unless removeHost (zookeeper.kerberos.removeHostFromPrincipal) and
//     "@REALM" unless removeRealm (zookeeper.kerberos.removeRealmFromPrincipal), when REALM
//     is the default (empty) realm;
//   - with another realm no auth_to_local rule applies and the name is kept whole
//     (ZooKeeper then falls back to the authorization id the client asked for, which Corral
//     does not adopt: see docs/compatibility.md);
//   - any other name with '@' is malformed (ErrBadName).
//
// An authzid the client sends is never used: ZooKeeper authorises every client as its
// canonical authentication id.
func AuthorizationID(name, defaultRealm string, removeHost, removeRealm bool) (string, error) {
	at := strings.IndexByte(name, '@')
	if at < 0 {
		return name, nil
	}
	principal, realm := name[:at], name[at+1:]
	if strings.ContainsAny(realm, "/@") || strings.Count(principal, "/") > 1 {
		return "", fmt.Errorf("%w: %q", ErrBadName, name)
	}
	if realm != defaultRealm {
		return name, nil
	}
	primary, host, hasHost := strings.Cut(principal, "/")
	out := primary
	if hasHost && !removeHost {
		out += "/" + host
	}
	if !removeRealm {
		out += "@" + realm
	}
	return out, nil
}
