package sasl

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// rfcOptions is RFC 2831 section 4's example: user chris, password secret, realm
// elwood.innosoft.com, service imap.
func rfcOptions() DigestOptions {
	return DigestOptions{Realm: "elwood.innosoft.com", DigestURI: "imap/elwood.innosoft.com", Nonce: "OA6MG9tEQGm2hh",
		Password: func(u string) (string, bool) { return "secret", u == "chris" }}
}

const rfcResponse = `charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",nc=00000001,cnonce="OA6MHXh6VqTrRk",digest-uri="imap/elwood.innosoft.com",response=d388dad90d4bbd760a152321f2143af7,qop=auth`

func TestRFC2831Example(t *testing.T) {
	d := NewDigestMD5(rfcOptions())
	ch, err := d.Step(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",charset=utf-8,algorithm=md5-sess`; string(ch) != want {
		t.Fatalf("challenge %s, want %s", ch, want)
	}
	rsp, err := d.Step([]byte(rfcResponse))
	if err != nil {
		t.Fatal(err)
	}
	if want := "rspauth=ea40f60335c427b5527b84dbabcdfffd"; string(rsp) != want {
		t.Fatalf("got %s, want %s", rsp, want)
	}
	if !d.Complete() || d.User() != "chris" {
		t.Fatalf("complete %v user %q", d.Complete(), d.User())
	}
	if _, err := d.Step(nil); !errors.Is(err, ErrProtocol) {
		t.Fatalf("a step after completion: %v, want ErrProtocol", err)
	}
}

// clientResponse computes a digest-response as a client does (independently of the server's
// helpers: the formula of RFC 2831 2.1.2.1 written out).
func clientResponse(user, realm, pass, nonce, cnonce, uri, authzid string) string {
	h := func(s string) []byte { b := md5.Sum([]byte(s)); return b[:] }
	hx := func(s string) string { return hex.EncodeToString(h(s)) }
	a1 := string(h(user+":"+realm+":"+pass)) + ":" + nonce + ":" + cnonce
	if authzid != "" {
		a1 += ":" + authzid
	}
	resp := hx(hx(a1) + ":" + nonce + ":00000001:" + cnonce + ":auth:" + hx("AUTHENTICATE:"+uri))
	s := fmt.Sprintf(`username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		user, realm, nonce, cnonce, uri, resp)
	if authzid != "" {
		s += `,authzid="` + authzid + `"`
	}
	return s
}

func TestExchangeCases(t *testing.T) {
	users := map[string]string{"bob": "bobsecret", "alice": "pässwort"}
	for i, tc := range []struct {
		user, pass, uri, authzid string
		nonce, realm             string // "" = the offered ones
		initial                  string // a non-empty first token
		want                     error
	}{
		0: {user: "bob", pass: "bobsecret"},
		1: {user: "bob", pass: "bobsecret", authzid: "bob"},
		2: {user: "bob", pass: "bobsecret", authzid: "super"}, // authzid is hashed, never adopted
		3: {user: "bob", pass: "wrong", want: ErrBadResponse},
		4: {user: "carol", pass: "x", want: ErrUnknownUser},
		5: {user: "bob", pass: "bobsecret", uri: "zookeeper/other", want: ErrProtocol},
		6: {user: "bob", pass: "bobsecret", nonce: "stale", want: ErrProtocol},
		7: {user: "bob", pass: "bobsecret", realm: "other", want: ErrProtocol},
		8: {user: "bob", pass: "bobsecret", initial: "x", want: ErrProtocol},
		9: {user: "bob", pass: "bobsecret", uri: "ZOOKEEPER/ZK-SASL-MD5"},
		// Latin-1 password under charset utf-8 is hashed in ISO 8859-1.
		10: {user: "alice", pass: "p\xe4sswort"},
	} {
		d := NewDigestMD5(DigestOptions{Realm: ZooKeeperRealm, DigestURI: ZooKeeperDigestURI, Nonce: "n0nce",
			Password: func(u string) (string, bool) { p, ok := users[u]; return p, ok }})
		ch, err := d.Step([]byte(tc.initial))
		if tc.initial != "" {
			if !errors.Is(err, tc.want) {
				t.Errorf("%d: initial response: %v, want %v", i, err, tc.want)
			}
			continue
		}
		if err != nil || !strings.Contains(string(ch), `realm="zk-sasl-md5"`) {
			t.Fatalf("%d: challenge %q, %v", i, ch, err)
		}
		uri, nonce, realm := ZooKeeperDigestURI, "n0nce", ZooKeeperRealm
		if tc.uri != "" {
			uri = tc.uri
		}
		if tc.nonce != "" {
			nonce = tc.nonce
		}
		if tc.realm != "" {
			realm = tc.realm
		}
		rsp, err := d.Step([]byte("charset=utf-8," + clientResponse(tc.user, realm, tc.pass, nonce, "c", uri, tc.authzid)))
		if !errors.Is(err, tc.want) || (tc.want == nil) != d.Complete() {
			t.Errorf("%d: %v (complete %v), want %v", i, err, d.Complete(), tc.want)
			continue
		}
		if tc.want == nil && (!strings.HasPrefix(string(rsp), "rspauth=") || d.User() != tc.user) {
			t.Errorf("%d: reply %q user %q", i, rsp, d.User())
		}
		if tc.want != nil {
			if _, err := d.Step([]byte(clientResponse(tc.user, realm, tc.pass, nonce, "c", uri, ""))); err == nil {
				t.Errorf("%d: a second try after a failure succeeded", i)
			}
		}
	}
}

func TestParseDirectives(t *testing.T) {
	for i, tc := range []struct {
		in   string
		want map[string]string
		err  bool
	}{
		0: {in: `a=b`, want: map[string]string{"a": "b"}},
		1: {in: ` A = "x,\"y\"" ,, b=c ,`, want: map[string]string{"a": `x,"y"`, "b": "c"}},
		2: {in: ``, want: map[string]string{}},
		3: {in: `a=b,a=c`, err: true},
		4: {in: `a="b`, err: true},
		5: {in: `a`, err: true},
		6: {in: `a=b c=d`, err: true},
		7: {in: `=b`, err: true},
		8: {in: `a=`, want: map[string]string{"a": ""}},
	} {
		got, err := parseDirectives([]byte(tc.in))
		if (err != nil) != tc.err {
			t.Errorf("%d: %q: err %v", i, tc.in, err)
			continue
		}
		if err == nil && fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%d: %q: got %v, want %v", i, tc.in, got, tc.want)
		}
	}
}

func TestAuthorizationID(t *testing.T) {
	for i, tc := range []struct {
		name                    string
		removeHost, removeRealm bool
		want                    string
		err                     bool
	}{
		0: {name: "bob", want: "bob"},
		1: {name: "bob/host", want: "bob/host"},
		2: {name: "bob/host@", want: "bob/host@"},
		3: {name: "bob/host@", removeHost: true, removeRealm: true, want: "bob"},
		4: {name: "bob@", removeRealm: true, want: "bob"},
		5: {name: "bob@EXAMPLE.COM", removeRealm: true, removeHost: true, want: "bob@EXAMPLE.COM"},
		6: {name: "a@b@c", err: true},
		7: {name: "a/b/c@R", err: true},
		8: {name: "a@b/c", err: true},
	} {
		got, err := AuthorizationID(tc.name, "", tc.removeHost, tc.removeRealm)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%d: %q: got %q, %v; want %q (err %v)", i, tc.name, got, err, tc.want, tc.err)
		}
	}
}

// FuzzDigestResponse feeds arbitrary digest-responses to a server exchange: no panic, and
// success only with the right digest.
func FuzzDigestResponse(f *testing.F) {
	f.Add([]byte(rfcResponse))
	f.Add([]byte(`username="chris",realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",nc=1,cnonce="",digest-uri=x,response=0`))
	f.Add([]byte(`,,, a = "\"" , b=`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := parseDirectives(b); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("parse error %v is not ErrMalformed", err)
		}
		d := NewDigestMD5(rfcOptions())
		if _, err := d.Step(nil); err != nil {
			t.Fatal(err)
		}
		rsp, err := d.Step(b)
		if err == nil && (string(rsp) != "rspauth=ea40f60335c427b5527b84dbabcdfffd" || d.User() != "chris") {
			t.Fatalf("accepted %q with reply %q user %q", b, rsp, d.User())
		}
	})
}
