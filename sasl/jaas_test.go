package sasl

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral/corral/wire"
)

const realJAAS = `/* ZooKeeper server and client sections,
   as operators write them */
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="adminsecret"   // the super user
    user_bob="bob\"secret"
    user_alice='alicesecret';
};

// the client side
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule Required
  username="bob" password="bobsecret";
};
QuorumServer {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_test="test" zookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider;
};
"com.example.Other" { com.sun.security.auth.module.Krb5LoginModule optional useKeyTab=true keyTab=/etc/zk.keytab principal="zookeeper/host@EXAMPLE.COM"; };
`

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS("jaas.conf", strings.NewReader(realJAAS))
	if err != nil {
		t.Fatal(err)
	}
	srv := j.Sections["Server"]
	if len(srv) != 1 || srv[0].Flag != "required" || srv[0].Line != 4 {
		t.Fatalf("Server: %+v", srv)
	}
	for k, want := range map[string]string{"user_super": "adminsecret", "user_bob": `bob"secret`, "user_alice": "alicesecret"} {
		if got := srv[0].Options[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if c := j.Sections["Client"]; len(c) != 1 || c[0].Flag != "required" || c[0].Options["username"] != "bob" {
		t.Errorf("Client: %+v", c)
	}
	if q := j.Sections["QuorumServer"]; len(q) != 1 || q[0].Options["zookeeper.authProvider.1"] != ProviderClass {
		t.Errorf("QuorumServer: %+v", q)
	}
	if o := j.Sections["com.example.Other"]; len(o) != 1 || o[0].Options["keyTab"] != "/etc/zk.keytab" {
		t.Errorf("Other: %+v", o)
	}
}

func TestParseJAASErrors(t *testing.T) {
	for i, tc := range []struct{ in, want string }{
		0: {"Server {\n m required a=b\n}", "f:3: login module m: want an option name or ';', got '}'"},
		1: {"Server {\n m mandatory;\n};", `f:2: login module m: control flag "mandatory"`},
		2: {"Server {\n\n m required a=\"b\n};", "f:3: quoted string not closed"},
		3: {"Server { m required; };\nServer { m required; };", `f:2: section "Server" appears twice`},
		4: {"/* never\nclosed", "f:1: unterminated /* comment"},
		5: {"Server {\n m required a b;\n};", "f:2: want '=', got \"b\""},
		6: {"Server {\n};", `f:1: section "Server" has no login module`},
		7: {"{ m required; };", "f:1: want a section name, got '{'"},
	} {
		_, err := ParseJAAS("f", strings.NewReader(tc.in))
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: %v, want %q", i, err, tc.want)
		}
	}
}

func writeJAAS(t *testing.T, text string) string {
	p := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	good := writeJAAS(t, realJAAS)
	krb := writeJAAS(t, "Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal=x; };")
	ktFile := filepath.Join(t.TempDir(), "zk.keytab")
	ktBytes, err := testKeytab(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ktFile, ktBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	krbJAAS := func(principal string) string {
		return writeJAAS(t, `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="`+
			ktFile+`" principal="`+principal+`"; org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="x"; };`)
	}
	krbOK, krbOther := krbJAAS("zookeeper/localhost@EXAMPLE.COM"), krbJAAS("HTTP/localhost@EXAMPLE.COM")
	krb5Conf := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(krb5Conf, []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		cfg    map[string]string
		flags  string
		err    string
		server bool
	}{
		0:  {},
		1:  {cfg: map[string]string{"corral.jaasConfig": good}, server: true},
		2:  {flags: "-Xmx1g '-D" + JAASFlag + "=" + good + "' -Dfoo=bar", server: true},
		3:  {cfg: map[string]string{"corral.jaasConfig": "/nonexistent"}, flags: "-D" + JAASFlag + "=" + good, err: "nonexistent"},
		4:  {cfg: map[string]string{"corral.jaasConfig": good, "zookeeper.sasl.serverconfig": "Nope"}},
		5:  {cfg: map[string]string{"corral.jaasConfig": krb}, err: "keyTab /etc/krb5.keytab"},
		6:  {cfg: map[string]string{"enforce.auth.enabled": "true"}, err: "schemes must be configured"},
		7:  {cfg: map[string]string{"enforce.auth.enabled": "true", "enforce.auth.schemes": "sasl"}, err: `"sasl" is not available`},
		8:  {cfg: map[string]string{"sessionRequireClientSASLAuth": "true"}, err: `"sasl" is not available`},
		9:  {cfg: map[string]string{"sessionRequireClientSASLAuth": "true", "authProvider.1": ProviderClass}},
		10: {cfg: map[string]string{"enforce.auth.enabled": "true", "enforce.auth.schemes": "digest, ip"}},
		11: {cfg: map[string]string{"enforce.auth.enabled": "true", "enforce.auth.schemes": "x509"}, err: `"x509" is not available`},
		12: {cfg: map[string]string{"corral.jaasConfig": krbOK}, server: true},
		13: {cfg: map[string]string{"corral.jaasConfig": krbOther}, err: "has no key for HTTP/localhost@EXAMPLE.COM"},
		14: {cfg: map[string]string{"corral.jaasConfig": writeJAAS(t, "Server { com.sun.security.auth.module.Krb5LoginModule required keyTab=x; };")}, err: "useKeyTab=true is required"},
		15: {cfg: map[string]string{"corral.jaasConfig": writeJAAS(t, "Server { org.example.Other required; };")}, err: "only org.apache"},
		16: {cfg: map[string]string{"corral.krb5Conf": krb5Conf, "kerberos.removeRealmFromPrincipal": "true", "superUser": "client"},
			flags: "-D" + JAASFlag + "=" + krbOK + " -D" + Krb5ConfFlag + "=/nonexistent", server: true},
	} {
		var c Config
		for k, v := range tc.cfg {
			if !IsKey(k) {
				t.Fatalf("%d: %s is not a key", i, k)
			}
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.ApplyJVMFlags(tc.flags); err != nil {
			t.Fatal(err)
		}
		a, err := c.Load(log)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%d: %v, want %q", i, err, tc.err)
			}
			continue
		}
		if err != nil || a.Server() != tc.server {
			t.Errorf("%d: server %v, %v", i, a.Server(), err)
		}
		if want := map[bool]string{false: "DIGEST-MD5", true: "GSSAPI"}[i >= 12]; a.Server() && a.Mechanism() != want {
			t.Errorf("%d: mechanism %s", i, a.Mechanism())
		}
		if i == 12 || i == 16 {
			if _, ok := a.NewExchange(nil).(*GSSAPI); !ok {
				t.Errorf("%d: exchange %T", i, a.NewExchange(nil))
			}
			want := map[int]string{12: "client@EXAMPLE.COM", 16: "client"}[i]
			if id, super, err := a.Identity("client@EXAMPLE.COM"); id != want || super != (i == 16) || err != nil {
				t.Errorf("%d: identity %q %v %v, want %q", i, id, super, err, want)
			}
		}
	}
}

func TestAuthPolicy(t *testing.T) {
	var c Config
	for k, v := range map[string]string{"corral.jaasConfig": writeJAAS(t, realJAAS), "zookeeper.authProvider.1": ProviderClass,
		"zookeeper.sessionRequireClientSASLAuth": "true", "superUser": "alice", "SASLAuthenticationProvider.superPassword": "sp"} {
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	a, err := c.Load(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := a.password("super"); !ok || p != "sp" {
		t.Errorf("super's password %q %v", p, ok)
	}
	if _, ok := a.password("carol"); ok {
		t.Error("carol has a password")
	}
	if id, super, _ := a.Identity("alice"); id != "alice" || !super {
		t.Errorf("alice: %q super %v", id, super)
	}
	ip := []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}}
	if a.Admits(ip) || !a.Admits(append(ip, wire.ID{Scheme: "sasl", ID: "bob"})) {
		t.Error("sessionRequireClientSASLAuth admits by the sasl scheme only")
	}
	if a.FailureCode() != wire.ErrSessionClosedRequireSASL || a.KeepFailed() {
		t.Error("a required SASL failure closes with SESSIONCLOSEDREQUIRESASLAUTH")
	}
	var none *Auth
	if none.Server() || !none.Admits(nil) {
		t.Error("a nil Auth is no SASL and no enforcement")
	}
}

// FuzzParseJAAS: no panic, and every error is a configuration error naming the file.
func FuzzParseJAAS(f *testing.F) {
	f.Add(realJAAS)
	f.Add("a{b c;};/*")
	f.Fuzz(func(t *testing.T, s string) {
		_, err := ParseJAAS("f", strings.NewReader(s))
		if err != nil && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "f:")) {
			t.Fatalf("error %v", err)
		}
	})
}
