package acl

import (
	"reflect"
	"testing"

	"github.com/corral/corral/wire"
)

func id(s, i string) wire.ID { return wire.ID{Scheme: s, ID: i} }

func entry(perms int32, s, i string) wire.ACL { return wire.ACL{Perms: perms, ID: id(s, i)} }

func TestDigest(t *testing.T) {
	tests := []struct{ in, want string }{
		0: {"super:test", "super:D/InIHSb7yEEbrWz8b9l71RjZJU="},
		// The user part stops at the first ':'; the hash covers the whole credential.
		1: {"u:p:q", "u:" + Digest("u:p:q")[2:]},
		2: {"nopassword", "nopassword:" + Digest("nopassword")[len("nopassword:"):]},
	}
	for i, tt := range tests {
		if got := Digest(tt.in); got != tt.want {
			t.Errorf("%d: Digest(%q) = %q, want %q", i, tt.in, got, tt.want)
		}
	}
	// Known value computed with ZooKeeper's generateDigest.
	if got := Digest("user:password"); got != "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=" {
		t.Errorf("Digest(user:password) = %q", got)
	}
}

func TestCheck(t *testing.T) {
	alice := Digest("alice:pw")
	tests := []struct {
		acls []wire.ACL
		perm int32
		ids  []wire.ID
		want bool
	}{
		0: {nil, wire.PermAdmin, nil, true}, // empty ACL allows everything
		1: {[]wire.ACL{}, wire.PermRead, nil, true},
		2: {wire.OpenACLUnsafe, wire.PermDelete, nil, true},
		3: {wire.ReadACLUnsafe, wire.PermWrite, nil, false},
		4: {wire.ReadACLUnsafe, wire.PermWrite, []wire.ID{id("super", "")}, true},
		5: {wire.ReadACLUnsafe, wire.PermRead | wire.PermAdmin, nil, true}, // any overlapping bit
		6: {[]wire.ACL{entry(wire.PermAll, "digest", alice)}, wire.PermRead, []wire.ID{id("digest", alice)}, true},
		7: {[]wire.ACL{entry(wire.PermAll, "digest", alice)}, wire.PermRead, []wire.ID{id("digest", Digest("alice:other"))}, false},
		8: {[]wire.ACL{entry(wire.PermWrite, "digest", alice)}, wire.PermRead, []wire.ID{id("digest", alice)}, false},
		// scheme must be equal: an ip id never matches a digest entry
		9:  {[]wire.ACL{entry(wire.PermAll, "digest", "10.0.0.1")}, wire.PermRead, []wire.ID{id("ip", "10.0.0.1")}, false},
		10: {[]wire.ACL{entry(wire.PermAll, "ip", "10.0.0.1")}, wire.PermRead, []wire.ID{id("ip", "10.0.0.1")}, true},
		11: {[]wire.ACL{entry(wire.PermAll, "ip", "10.0.0.0/8")}, wire.PermRead, []wire.ID{id("ip", "10.200.3.4")}, true},
		12: {[]wire.ACL{entry(wire.PermAll, "ip", "10.0.0.0/8")}, wire.PermRead, []wire.ID{id("ip", "11.0.0.1")}, false},
		13: {[]wire.ACL{entry(wire.PermAll, "ip", "10.1.2.3/0")}, wire.PermRead, []wire.ID{id("ip", "192.168.1.1")}, true},
		14: {[]wire.ACL{entry(wire.PermAll, "ip", "192.168.1.128/25")}, wire.PermRead, []wire.ID{id("ip", "192.168.1.200")}, true},
		15: {[]wire.ACL{entry(wire.PermAll, "ip", "192.168.1.128/25")}, wire.PermRead, []wire.ID{id("ip", "192.168.1.127")}, false},
		16: {[]wire.ACL{entry(wire.PermAll, "ip", "2001:db8::/32")}, wire.PermRead, []wire.ID{id("ip", "2001:db8:1:2:3:4:5:6")}, true},
		17: {[]wire.ACL{entry(wire.PermAll, "ip", "2001:db8::/32")}, wire.PermRead, []wire.ID{id("ip", "2001:db9::1")}, false},
		18: {[]wire.ACL{entry(wire.PermAll, "ip", "::1")}, wire.PermRead, []wire.ID{id("ip", "0:0:0:0:0:0:0:1")}, true},
		// families never match each other
		19: {[]wire.ACL{entry(wire.PermAll, "ip", "0.0.0.0/0")}, wire.PermRead, []wire.ID{id("ip", "::1")}, false},
		20: {[]wire.ACL{entry(wire.PermAll, "ip", "10.0.0.1/33")}, wire.PermRead, []wire.ID{id("ip", "10.0.0.1")}, false},
		21: {[]wire.ACL{entry(wire.PermAll, "world", "other")}, wire.PermRead, []wire.ID{id("world", "other")}, false},
		// a later entry can grant what an earlier one does not
		22: {[]wire.ACL{entry(wire.PermRead, "world", "anyone"), entry(wire.PermWrite, "ip", "127.0.0.1")}, wire.PermWrite, []wire.ID{id("ip", "127.0.0.1")}, true},
		23: {[]wire.ACL{entry(wire.PermAll, "x509", "CN=a")}, wire.PermRead, []wire.ID{id("x509", "CN=a")}, true},
		24: {[]wire.ACL{entry(wire.PermAll, "sasl", "bob")}, wire.PermRead, []wire.ID{id("sasl", "bob")}, true},
		25: {[]wire.ACL{entry(wire.PermAll, "sasl", "bob")}, wire.PermRead, []wire.ID{id("sasl", "alice")}, false},
		// SASLAuthenticationProvider.matches: the SASL user "super" matches every sasl entry
		26: {[]wire.ACL{entry(wire.PermAll, "sasl", "bob")}, wire.PermRead, []wire.ID{id("sasl", "super")}, true},
		27: {[]wire.ACL{entry(wire.PermAll, "sasl", "bob")}, wire.PermRead, []wire.ID{id("digest", "bob")}, false},
	}
	for i, tt := range tests {
		if got := Check(tt.acls, tt.perm, tt.ids); got != tt.want {
			t.Errorf("%d: Check(%v, %d, %v) = %v, want %v", i, tt.acls, tt.perm, tt.ids, got, tt.want)
		}
	}
}

func TestFixup(t *testing.T) {
	alice := Digest("alice:pw")
	bob := Digest("bob:pw")
	ipID := id("ip", "127.0.0.1")
	tests := []struct {
		acls []wire.ACL
		ids  []wire.ID
		want []wire.ACL
		err  wire.Err
	}{
		0: {nil, nil, nil, wire.ErrInvalidACL},
		1: {[]wire.ACL{}, nil, nil, wire.ErrInvalidACL},
		2: {wire.OpenACLUnsafe, nil, wire.OpenACLUnsafe, wire.ErrOK},
		3: {[]wire.ACL{entry(wire.PermAll, "world", "someone")}, nil, nil, wire.ErrInvalidACL},
		// auth expands to digest ids only; ip and super are skipped
		4: {wire.CreatorAllACL, []wire.ID{ipID, id("super", ""), id("digest", alice), id("digest", bob)},
			[]wire.ACL{entry(wire.PermAll, "digest", alice), entry(wire.PermAll, "digest", bob)}, wire.ErrOK},
		5: {wire.CreatorAllACL, []wire.ID{ipID}, nil, wire.ErrInvalidACL},
		6: {wire.CreatorAllACL, []wire.ID{ipID, id("super", "")}, nil, wire.ErrInvalidACL},
		7: {wire.CreatorAllACL, nil, nil, wire.ErrInvalidACL},
		// duplicates are removed before expansion (first occurrence kept) ...
		8: {[]wire.ACL{entry(1, "world", "anyone"), entry(3, "world", "anyone"), entry(1, "world", "anyone")}, nil,
			[]wire.ACL{entry(1, "world", "anyone"), entry(3, "world", "anyone")}, wire.ErrOK},
		// ... but not after it
		9: {[]wire.ACL{entry(wire.PermAll, "auth", ""), entry(wire.PermAll, "digest", alice)}, []wire.ID{id("digest", alice)},
			[]wire.ACL{entry(wire.PermAll, "digest", alice), entry(wire.PermAll, "digest", alice)}, wire.ErrOK},
		// the id of an auth entry is ignored
		10: {[]wire.ACL{entry(wire.PermRead, "auth", "whatever")}, []wire.ID{id("digest", alice)},
			[]wire.ACL{entry(wire.PermRead, "digest", alice)}, wire.ErrOK},
		11: {[]wire.ACL{entry(wire.PermAll, "digest", "user:hash")}, nil, []wire.ACL{entry(wire.PermAll, "digest", "user:hash")}, wire.ErrOK},
		12: {[]wire.ACL{entry(wire.PermAll, "digest", "user")}, nil, nil, wire.ErrInvalidACL},
		13: {[]wire.ACL{entry(wire.PermAll, "digest", "user:")}, nil, nil, wire.ErrInvalidACL},
		14: {[]wire.ACL{entry(wire.PermAll, "digest", "a:b:c")}, nil, nil, wire.ErrInvalidACL},
		15: {[]wire.ACL{entry(wire.PermAll, "digest", "a:b:")}, nil, []wire.ACL{entry(wire.PermAll, "digest", "a:b:")}, wire.ErrOK},
		16: {[]wire.ACL{entry(wire.PermAll, "digest", ":b")}, nil, []wire.ACL{entry(wire.PermAll, "digest", ":b")}, wire.ErrOK},
		17: {[]wire.ACL{entry(wire.PermAll, "ip", "10.0.0.0/8")}, nil, []wire.ACL{entry(wire.PermAll, "ip", "10.0.0.0/8")}, wire.ErrOK},
		18: {[]wire.ACL{entry(wire.PermAll, "ip", "10.0.0.0/33")}, nil, nil, wire.ErrInvalidACL},
		19: {[]wire.ACL{entry(wire.PermAll, "ip", "10.0.0")}, nil, nil, wire.ErrInvalidACL},
		20: {[]wire.ACL{entry(wire.PermAll, "ip", "host.example")}, nil, nil, wire.ErrInvalidACL},
		21: {[]wire.ACL{entry(wire.PermAll, "ip", "::1/128")}, nil, []wire.ACL{entry(wire.PermAll, "ip", "::1/128")}, wire.ErrOK},
		22: {[]wire.ACL{entry(wire.PermAll, "ip", "::1/129")}, nil, nil, wire.ErrInvalidACL},
		23: {[]wire.ACL{entry(wire.PermAll, "super", "")}, []wire.ID{id("super", "")}, nil, wire.ErrInvalidACL},
		// the sasl provider is always there (authProvider.N=...SASLAuthenticationProvider)
		24: {[]wire.ACL{entry(wire.PermAll, "sasl", "bob")}, nil, []wire.ACL{entry(wire.PermAll, "sasl", "bob")}, wire.ErrOK},
		26: {[]wire.ACL{entry(wire.PermAll, "sasl", "bob/h@R/x")}, nil, nil, wire.ErrInvalidACL},
		27: {[]wire.ACL{entry(wire.PermRead, "auth", "")}, []wire.ID{id("ip", "1.2.3.4"), id("sasl", "bob")},
			[]wire.ACL{entry(wire.PermRead, "sasl", "bob")}, wire.ErrOK},
		// one bad entry rejects the whole list
		25: {[]wire.ACL{entry(wire.PermAll, "world", "anyone"), entry(wire.PermAll, "ip", "1.2.3.256")}, nil, nil, wire.ErrInvalidACL},
	}
	for i, tt := range tests {
		got, err := Fixup(tt.acls, tt.ids)
		if err != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%d: Fixup(%v, %v) = %v, %v; want %v, %v", i, tt.acls, tt.ids, got, err, tt.want, tt.err)
		}
	}
}

func TestValidIP(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		0: {"1.2.3.4", true}, 1: {"1.2.3.4/0", true}, 2: {"1.2.3.4/32", true}, 3: {"1.2.3.4/-1", false},
		4: {"1.2.3.4/", false}, 5: {"1.2.3", false}, 6: {"1.2.3.4.5", false}, 7: {"1.2.3.256", false},
		8: {"+1.2.3.4", true}, // Java's parseInt accepts a sign
		9: {"1..3.4", false}, 10: {"a.b.c.d", false}, 11: {"1.2.3.4/+8", true}, 12: {"1.2.3.4/8/8", false},
		13: {"::", true}, 14: {"::1", true}, 15: {"1::", true}, 16: {"fe80::1:2", true},
		17: {"1:2:3:4:5:6:7:8", true}, 18: {"1:2:3:4:5:6:7", false}, 19: {"1:2:3:4:5:6:7:8:9", false},
		20: {"1::2::3", false}, 21: {"1:2:3:4::5:6:7:8", false}, 22: {"12345::", false}, 23: {"g::", false},
		24: {"::ffff:1.2.3.4", false}, 25: {"fe80::1%eth0", false}, 26: {":::", false}, 27: {"1:2:3:4:5:6:7::", true},
		28: {"", false}, 29: {"localhost", false}, 30: {"::/128", true}, 31: {"::/129", false},
	}
	for i, tt := range tests {
		if got := ValidID(id("ip", tt.in)); got != tt.want {
			t.Errorf("%d: ValidID(ip:%q) = %v, want %v", i, tt.in, got, tt.want)
		}
	}
}

func TestMask(t *testing.T) {
	in := []wire.ACL{
		entry(wire.PermAll, "digest", "alice:hash="),
		entry(wire.PermRead, "world", "anyone"),
		entry(wire.PermRead, "ip", "1.2.3.4"),
		entry(wire.PermRead, "digest", "odd:a\nb:c"),
		entry(wire.PermRead, "digest", "nocolon"),
	}
	orig := append([]wire.ACL(nil), in...)
	got := Mask(in, false)
	want := []wire.ACL{
		entry(wire.PermAll, "digest", "alice:x"),
		entry(wire.PermRead, "world", "anyone"),
		entry(wire.PermRead, "ip", "1.2.3.4"),
		entry(wire.PermRead, "digest", "odd:x\nb:x"),
		entry(wire.PermRead, "digest", "nocolon"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Mask = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Errorf("Mask modified its input")
	}
	if got := Mask(in, true); !reflect.DeepEqual(got, orig) {
		t.Errorf("Mask(admin) = %v", got)
	}
	if got := Mask(wire.OpenACLUnsafe, false); &got[0] != &wire.OpenACLUnsafe[0] {
		t.Errorf("Mask copied an ACL without digest entries")
	}
}
