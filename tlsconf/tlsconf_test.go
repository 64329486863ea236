package tlsconf

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/internal/testcerts"
	"github.com/corral/corral/wire"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestStores(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "test-ca")
	srv := ca.Issue(t, pkix.Name{CommonName: "server"}, nil)
	const pw = "secret1"
	keyStores := []struct {
		name string
		make func() string
		typ  string
	}{
		0: {"pem", func() string { return ca.WritePEM(t, srv, "server.pem") }, ""},
		1: {"p12 (go-pkcs12)", func() string { return ca.WriteP12(t, srv, "server.p12", pw) }, ""},
		2: {"pfx", func() string { return ca.WriteP12(t, srv, "server.pfx", pw) }, ""},
		3: {"p12 typed, other name", func() string { return ca.WriteP12(t, srv, "server.bin", pw) }, "PKCS12"},
		4: {"p12 (keytool)", func() string { return ca.KeytoolKeyStore(t, srv, "kt.p12", "PKCS12", pw) }, ""},
		5: {"jks (keytool)", func() string { return ca.KeytoolKeyStore(t, srv, "kt.jks", "JKS", pw) }, ""},
	}
	for i, tc := range keyStores {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.make()
			cert, err := LoadKeyStore(Store{Location: p, Password: pw, Type: tc.typ}, "ssl.keyStore")
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			if !cert.Leaf.Equal(srv.Cert) || len(cert.Certificate) != 2 {
				t.Fatalf("%d: got leaf %v, chain of %d", i, cert.Leaf.Subject, len(cert.Certificate))
			}
		})
	}
	trustStores := []struct {
		name string
		make func() string
	}{
		0: {"pem", func() string { return ca.WriteTrustPEM(t, "ca.pem") }},
		1: {"p12 (keytool)", func() string { return ca.KeytoolTrustStore(t, "trust.p12", "PKCS12", pw) }},
		2: {"jks (keytool)", func() string { return ca.KeytoolTrustStore(t, "trust.jks", "JKS", pw) }},
	}
	for i, tc := range trustStores {
		t.Run("trust "+tc.name, func(t *testing.T) {
			pool, err := LoadTrustStore(Store{Location: tc.make(), Password: pw}, "ssl.trustStore")
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			if _, err := srv.Cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
				t.Fatalf("%d: the CA is not trusted: %v", i, err)
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		p12 := ca.WriteP12(t, srv, "e.p12", pw)
		cases := []struct {
			st   Store
			want string
		}{
			0: {Store{Location: p12, Password: "wrong"}, "ssl.keyStore " + p12},
			1: {Store{Location: filepath.Join(dir, "server.bin"), Password: pw}, "set ssl.keyStore.type"},
			2: {Store{Location: filepath.Join(dir, "missing.pem")}, "ssl.keyStore.location"},
			3: {Store{Location: filepath.Join(dir, "x.bcfks")}, "BCFKS"},
			4: {Store{Location: p12, PasswordPath: filepath.Join(dir, "nope")}, "ssl.keyStore.passwordPath"},
		}
		for i, tc := range cases {
			_, err := LoadKeyStore(tc.st, "ssl.keyStore")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrStore) {
				t.Errorf("%d: err %v, want one with %q", i, err, tc.want)
			}
		}
	})
	t.Run("passwordPath", func(t *testing.T) {
		pp := filepath.Join(dir, "pw")
		os.WriteFile(pp, []byte(pw+"\n"), 0o600)
		if _, err := LoadKeyStore(Store{Location: ca.WriteP12(t, srv, "pp.p12", pw), PasswordPath: pp}, "ssl.keyStore"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSettings(t *testing.T) {
	cases := []struct {
		lines []string
		want  string // "" valid; else a substring of the error
	}{
		0:  {[]string{"secureClientPort=2281", "ssl.keyStore.location=/k.pem", "ssl.trustStore.location=/t.pem"}, ""},
		1:  {[]string{"secureClientPort=2281"}, "ssl.keyStore.location"},
		2:  {[]string{"secureClientPort=2281", "ssl.keyStore.location=/k.pem"}, "ssl.trustStore.location"},
		3:  {[]string{"secureClientPort=2281", "ssl.keyStore.location=/k.pem", "ssl.clientAuth=none"}, ""},
		4:  {[]string{"ssl.clientAuth=maybe"}, "want need, want or none"},
		5:  {[]string{"ssl.protocol=SSLv3"}, "TLSv1.2"},
		6:  {[]string{"secureClientPort=2281", "ssl.keyStore.location=/k.pem", "ssl.clientAuth=none", "ssl.enabledProtocols=TLSv1,TLSv1.3"}, "gap"},
		7:  {[]string{"secureClientPort=2281", "ssl.keyStore.location=/k.pem", "ssl.clientAuth=none", "ssl.ocsp=true"}, "ssl.ocsp"},
		8:  {[]string{"secureClientPort=2281", "ssl.keyStore.location=/k.pem", "ssl.clientAuth=none", "ssl.authProvider=foo"}, "ssl.authProvider=foo"},
		9:  {[]string{"authProvider.x509=com.example.Mine"}, "X509AuthenticationProvider"},
		10: {[]string{"ssl.keyStore.type=BCFKS"}, "BCFKS"},
		11: {[]string{"secureClientPortAddress=127.0.0.1"}, "secureClientPort is not set"},
		12: {[]string{"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory", "authProvider.1=" + X509ProviderClass}, ""},
		13: {[]string{"ssl.context.supplier.class=x.Y"}, "SSLContext"},
	}
	for i, tc := range cases {
		s := Defaults()
		var err error
		for _, l := range tc.lines {
			k, v, _ := strings.Cut(l, "=")
			ok, e := s.Set(k, v)
			if !ok {
				t.Fatalf("%d: %s not taken as a TLS key", i, k)
			}
			if e != nil && err == nil {
				err = e
			}
		}
		if err == nil {
			err = s.Validate()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d: %v", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d: err %v, want one with %q", i, err, tc.want)
		}
	}
	s := Defaults()
	if ok, _ := s.Set("zookeeper.ssl.keyStore.location", "/x"); ok {
		t.Error("zookeeper.ssl.keyStore.location is taken; ZooKeeper ignores it in zoo.cfg")
	}
	if ok, _ := s.Set("authProvider.sasl", "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"); ok {
		t.Error("authProvider.sasl is taken; it is not TLS's")
	}
}

func TestCiphers(t *testing.T) {
	r := mapCiphers([]string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "SSL_RSA_WITH_3DES_EDE_CBC_SHA",
		"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "nonsense"})
	want := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}
	if len(r.ids) != len(want) {
		t.Fatalf("ids %x, want %x", r.ids, want)
	}
	for i := range want {
		if r.ids[i] != want[i] {
			t.Fatalf("ids %x, want %x", r.ids, want)
		}
	}
	if strings.Join(r.unsupported, ",") != "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384,nonsense" || strings.Join(r.tls13, ",") != "TLS_AES_128_GCM_SHA256" {
		t.Fatalf("unsupported %v, tls13 %v", r.unsupported, r.tls13)
	}
	if d := mapCiphers(defaultCiphers); len(d.ids) != 10 {
		t.Fatalf("ZooKeeper's default list gives %d Go suites, want 10", len(d.ids))
	}
}

// names are subjects whose RFC 2253 form is compared with Java's.
func testSubjects(t *testing.T) [][]byte {
	type atv struct {
		Type  asn1.ObjectIdentifier
		Value asn1.RawValue
	}
	type rdnSET []atv
	str := func(tag int, s string) asn1.RawValue {
		return asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: []byte(s)}
	}
	cn, ou, o, c := asn1.ObjectIdentifier{2, 5, 4, 3}, asn1.ObjectIdentifier{2, 5, 4, 11}, asn1.ObjectIdentifier{2, 5, 4, 10}, asn1.ObjectIdentifier{2, 5, 4, 6}
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	serial := asn1.ObjectIdentifier{2, 5, 4, 5}
	dc := asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	seqs := [][]rdnSET{
		{{{c, str(asn1.TagPrintableString, "US")}}, {{o, str(asn1.TagUTF8String, "corp")}}, {{ou, str(asn1.TagUTF8String, "eng")}}, {{cn, str(asn1.TagUTF8String, "alice")}}},
		{{{cn, str(asn1.TagUTF8String, `a,b+c=d"e\f<g>h;i#j`)}}},
		{{{cn, str(asn1.TagUTF8String, " lead and trail ")}}},
		{{{cn, str(asn1.TagUTF8String, "#x")}, {ou, str(asn1.TagUTF8String, "multi")}}},
		{{{dc, str(asn1.TagIA5String, "com")}}, {{email, str(asn1.TagIA5String, "a@b.c")}}, {{serial, str(asn1.TagPrintableString, "42")}}},
		{{{cn, str(asn1.TagUTF8String, "Jürgen 名前")}}},
		{{{cn, str(asn1.TagT61String, "t\xe9l\xe9\xc3\xa9")}}},
		{{{cn, asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagBMPString, Bytes: []byte{0, 'b', 0, 'm', 0x4e, 0x2d}}}}},
	}
	var out [][]byte
	for _, s := range seqs {
		der, err := asn1.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, der)
	}
	return out
}

// TestRFC2253NameJava compares RFC2253Name with X500Principal.getName() of Java (the identity
// ZooKeeper's X509AuthenticationProvider gives), on subjects with every escape and value type.
func TestRFC2253NameJava(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java is not installed: X500Principal.getName() cannot be asked")
	}
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	var paths []string
	var ours []string
	for i, raw := range testSubjects(t) {
		l := ca.Issue(t, pkix.Name{}, raw)
		p := filepath.Join(dir, "c"+string(rune('0'+i))+".der")
		os.WriteFile(p, l.Cert.Raw, 0o644)
		paths = append(paths, p)
		n, err := RFC2253Name(l.Cert)
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, n)
	}
	prog := filepath.Join(dir, "Name.java")
	os.WriteFile(prog, []byte(`import java.io.*; import java.security.cert.*;
public class Name { public static void main(String[] a) throws Exception {
  CertificateFactory f = CertificateFactory.getInstance("X.509");
  PrintStream out = new PrintStream(System.out, true, "UTF-8");
  for (String p : a) { try (InputStream in = new FileInputStream(p)) {
    out.println(((X509Certificate) f.generateCertificate(in)).getSubjectX500Principal().getName()); } } } }`), 0o644)
	cmd := exec.Command(java, append([]string{prog}, paths...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	theirs := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(theirs) != len(ours) {
		t.Fatalf("java printed %d names, want %d: %q", len(theirs), len(ours), out)
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Errorf("%d: ours %q, Java %q", i, ours[i], theirs[i])
		}
	}
}

// fixture is a Listener on loopback with a CA, a server certificate and client certificates.
type fixture struct {
	ca       *testcerts.CA
	addr     string
	log      *syncBuf
	src      *Source
	settings Settings
	keyPath  string
}

func newFixture(t *testing.T, clientAuth string, extra ...string) *fixture {
	dir := t.TempDir()
	f := &fixture{ca: testcerts.NewCA(t, dir, "ca"), log: &syncBuf{}}
	srv := f.ca.Issue(t, pkix.Name{CommonName: "server-1"}, nil)
	f.keyPath = f.ca.WritePEM(t, srv, "server.pem")
	s := Defaults()
	lines := append([]string{"secureClientPort=1", "ssl.keyStore.location=" + f.keyPath,
		"ssl.trustStore.location=" + f.ca.WriteTrustPEM(t, "ca.pem"), "ssl.clientAuth=" + clientAuth,
		"corral.ssl.reloadIntervalMs=50", "X509AuthenticationProvider.superUser=CN=root"}, extra...)
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		if _, err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	f.settings = s
	log := slog.New(slog.NewTextHandler(f.log, nil))
	src, err := NewSource(s, log)
	if err != nil {
		t.Fatal(err)
	}
	f.src = src
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(raw, src, log)
	f.addr = raw.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); src.Run(ctx) }()
	// The server side: echo each accepted connection's ids, then close it.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var names []string
			for _, id := range c.(*Conn).PeerIDs() {
				names = append(names, id.Scheme+":"+id.ID)
			}
			io.WriteString(c, strings.Join(names, ";")+"\n")
			c.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		cancel()
		<-done
	})
	return f
}

// dial connects with the client certificate of cn ("" none) and returns the ids the server saw
// and the server certificate's subject.
func (f *fixture) dial(t *testing.T, cn string) (string, string, error) {
	cfg := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost"}
	cfg.RootCAs.AddCert(f.ca.Cert)
	if cn != "" {
		l := f.ca.Issue(t, pkix.Name{CommonName: cn, Organization: []string{"corp"}}, nil)
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key}}
	}
	c, err := tls.Dial("tcp", f.addr, cfg)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", "", err
	}
	return strings.TrimSpace(string(b)), c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func TestListenerClientAuth(t *testing.T) {
	cases := []struct {
		auth       string
		cn         string
		wantErr    bool
		wantIDs    string
		wantServer string
	}{
		0: {"need", "alice", false, "x509:CN=alice,O=corp", "server-1"},
		1: {"need", "", true, "", ""},
		2: {"want", "", false, "", "server-1"},
		3: {"want", "alice", false, "x509:CN=alice,O=corp", "server-1"},
		4: {"none", "", false, "", "server-1"},
		5: {"none", "alice", false, "", "server-1"}, // no certificate is asked for
	}
	for i, tc := range cases {
		f := newFixture(t, tc.auth)
		ids, _, err := f.dial(t, tc.cn)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%d: clientAuth=%s without a certificate was accepted (ids %q)", i, tc.auth, ids)
			}
			continue
		}
		if err != nil || ids != tc.wantIDs {
			t.Errorf("%d: clientAuth=%s cert %q: ids %q err %v, want %q", i, tc.auth, tc.cn, ids, err, tc.wantIDs)
		}
	}
	// A certificate from another CA is refused even under want.
	f := newFixture(t, "want")
	other := testcerts.NewCA(t, t.TempDir(), "other")
	l := other.Issue(t, pkix.Name{CommonName: "mallory"}, nil)
	cfg := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key}}}
	c, err := tls.Dial("tcp", f.addr, cfg)
	if err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c)
		b, _ := io.ReadAll(c)
		if len(b) > 0 {
			t.Errorf("an untrusted client certificate was accepted under want: %q", b)
		}
		c.Close()
	}
	// The super user is CN=root; CN=root,O=corp is not.
	f = newFixture(t, "need")
	if ids, _, err := f.dial(t, "root"); err != nil || ids != "x509:CN=root,O=corp" {
		t.Errorf("ids %q, err %v; want x509:CN=root,O=corp alone", ids, err)
	}
}

func TestIdentitiesSuper(t *testing.T) {
	ca := testcerts.NewCA(t, t.TempDir(), "ca")
	l := ca.Issue(t, pkix.Name{CommonName: "root"}, nil)
	ids, err := Identities(tls.ConnectionState{PeerCertificates: []*x509.Certificate{l.Cert}}, "CN=root")
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.ID{{Scheme: "super", ID: "CN=root"}, {Scheme: "x509", ID: "CN=root"}}
	if len(ids) != 2 || ids[0] != want[0] || ids[1] != want[1] {
		t.Fatalf("ids %v, want %v", ids, want)
	}
}

// TestPlaintextClosed sends a ZooKeeper connect request and a four-letter word in plaintext to
// the secure port: the connection is closed with nothing written, one line is logged, and the
// port goes on serving TLS.
func TestPlaintextClosed(t *testing.T) {
	f := newFixture(t, "need")
	for i, payload := range [][]byte{
		{0, 0, 0, 44, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x75, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		[]byte("ruok\n"), // a four-letter word as nc sends it (four bytes alone wait for a fifth: the handshake timeout)
	} {
		before := strings.Count(f.log.String(), "not a TLS client")
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(payload)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if len(b) != 0 || err != nil {
			t.Errorf("%d: plaintext got %q, err %v; want the connection closed with nothing written", i, b, err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for strings.Count(f.log.String(), "not a TLS client") != before+1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := strings.Count(f.log.String(), "not a TLS client") - before; n != 1 {
			t.Errorf("%d: %d log lines for a plaintext client, want 1:\n%s", i, n, f.log.String())
		}
	}
	if ids, _, err := f.dial(t, "alice"); err != nil || ids != "x509:CN=alice,O=corp" {
		t.Fatalf("after plaintext clients: ids %q err %v", ids, err)
	}
}

// TestReload replaces the key store on disk: a new connection gets the new certificate; a bad
// file keeps the previous one and says so in the log.
func TestReload(t *testing.T) {
	f := newFixture(t, "need")
	if _, subj, err := f.dial(t, "alice"); err != nil || subj != "server-1" {
		t.Fatalf("server certificate %q, err %v", subj, err)
	}
	next := f.ca.Issue(t, pkix.Name{CommonName: "server-2"}, nil)
	tmp := f.ca.WritePEM(t, next, "next.pem")
	if err := os.Rename(tmp, f.keyPath); err != nil {
		t.Fatal(err)
	}
	waitSubject(t, f, "server-2")
	if !strings.Contains(f.log.String(), "TLS stores reloaded") {
		t.Errorf("no log line for the reload:\n%s", f.log.String())
	}
	// A broken file: the previous certificate stays.
	if err := os.WriteFile(f.keyPath, []byte("not a key store"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(f.log.String(), "cannot be loaded") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(f.log.String(), "keeps the previous certificates") {
		t.Fatalf("no log line for the bad store:\n%s", f.log.String())
	}
	if _, subj, err := f.dial(t, "alice"); err != nil || subj != "server-2" {
		t.Fatalf("after a bad store: server certificate %q, err %v; want server-2 kept", subj, err)
	}
	// Fixed again.
	third := f.ca.Issue(t, pkix.Name{CommonName: "server-3"}, nil)
	tmp = f.ca.WritePEM(t, third, "third.pem")
	os.Rename(tmp, f.keyPath)
	waitSubject(t, f, "server-3")
}

func waitSubject(t *testing.T, f *fixture, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, subj, err := f.dial(t, "alice")
		if err == nil && subj == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server certificate %q (err %v), want %q after the reload", subj, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMerge(t *testing.T) {
	a, _ := net.Listen("tcp", "127.0.0.1:0")
	b, _ := net.Listen("tcp", "127.0.0.1:0")
	m := Merge(a, b)
	for _, addr := range []string{a.Addr().String(), b.Addr().String()} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if s.LocalAddr().String() != addr {
			t.Errorf("accepted on %s, dialed %s", s.LocalAddr(), addr)
		}
		s.Close()
		c.Close()
	}
	m.Close()
	if _, err := m.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}
