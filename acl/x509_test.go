package acl

import (
	"testing"

	"github.com/corral/corral/wire"
)

// TestX509Valid: ids X500Principal accepts (X509AuthenticationProvider.isValid) and some it
// refuses.
func TestX509Valid(t *testing.T) {
	cases := []struct {
		id    string
		valid bool
	}{
		0:  {"CN=alice,OU=eng,O=corp", true},
		1:  {"", true},
		2:  {"cn=alice; o=corp", true},
		3:  {`CN=a\,b,O=x`, true},
		4:  {`CN="a,b",O=x`, true},
		5:  {"CN=a+OU=b,O=c", true},
		6:  {"1.2.840.113549.1.9.1=#1605612e622e63,CN=x", true},
		7:  {"OID.2.5.4.3=alice", true},
		8:  {"alice", false},
		9:  {"FOO=bar", false},
		10: {"CN=alice,", false},
		11: {`CN="unclosed`, false},
		12: {"CN=#abc", false},
		13: {`CN=trailing\`, false},
	}
	for i, tc := range cases {
		if got := ValidID(wire.ID{Scheme: SchemeX509, ID: tc.id}); got != tc.valid {
			t.Errorf("%d: %q valid=%v, want %v", i, tc.id, got, tc.valid)
		}
	}
}

// TestX509ACL: an x509 ACL grants the client with that subject and nobody else; "auth"
// expands to a caller's x509 id as to its digest ids.
func TestX509ACL(t *testing.T) {
	alice := []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: SchemeX509, ID: "CN=alice,O=corp"}}
	bob := []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: SchemeX509, ID: "CN=bob,O=corp"}}
	acls, err := Fixup([]wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: SchemeAuth}}}, alice)
	if err != wire.ErrOK || len(acls) != 1 || acls[0].ID != alice[1] {
		t.Fatalf("auth expansion: %v %v", acls, err)
	}
	if !Check(acls, wire.PermRead, alice) || Check(acls, wire.PermRead, bob) {
		t.Fatal("x509 ACL: alice must pass and bob must not")
	}
	if _, err := Fixup([]wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: SchemeX509, ID: "nonsense"}}}, nil); err != wire.ErrInvalidACL {
		t.Fatalf("x509:nonsense: %v, want INVALIDACL", err)
	}
}
