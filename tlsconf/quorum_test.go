package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/corral/corral/internal/testcerts"
)

// quorumSource makes a quorum Source with ca's trust store and a certificate it signed, plus
// the lines given.
func quorumSource(t *testing.T, ca *testcerts.CA, lines ...string) *Source {
	t.Helper()
	s := QuorumDefaults()
	lines = append([]string{"sslQuorum=true",
		"ssl.quorum.keyStore.location=" + ca.WritePEM(t, ca.Issue(t, pkix.Name{CommonName: "peer"}, nil), "peer.pem"),
		"ssl.quorum.trustStore.location=" + ca.WriteTrustPEM(t, "peer-ca.pem")}, lines...)
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		if ok, err := s.Set(k, v); !ok || err != nil {
			t.Fatalf("%s: %v %v", l, ok, err)
		}
	}
	src, err := NewSource(s, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestQuorumClientConfig: a dialling server presents its certificate (the peer requires one),
// verifies the peer's chain against the quorum trust store, and its host name unless
// ssl.quorum.hostnameVerification=false.
func TestQuorumClientConfig(t *testing.T) {
	f := newFixture(t, "need") // the peer: certificate for localhost and 127.0.0.1, client certificates required
	other := testcerts.NewCA(t, t.TempDir(), "other")
	for i, tc := range []struct {
		src    *Source
		target string
		ok     bool
	}{
		0: {quorumSource(t, f.ca), "localhost:1", true},
		1: {quorumSource(t, f.ca), "127.0.0.1:1", true},
		2: {quorumSource(t, f.ca), "peer.example:1", false},
		3: {quorumSource(t, f.ca, "ssl.quorum.hostnameVerification=false"), "peer.example:1", true},
		4: {quorumSource(t, other, "ssl.quorum.hostnameVerification=false"), "localhost:1", false},
		5: {quorumSource(t, other), "localhost:1", false},
	} {
		c, err := tls.Dial("tcp", f.addr, tc.src.ClientConfig(tc.target))
		if err == nil {
			// The peer echoes the ids it gave this server's certificate: proof it was presented.
			c.SetDeadline(time.Now().Add(5 * time.Second))
			b, rerr := io.ReadAll(c)
			c.Close()
			if !strings.Contains(string(b), "x509:CN=peer") {
				err = rerr
				if err == nil {
					t.Errorf("%d: the peer saw %q", i, b)
				}
			}
		}
		if (err == nil) != tc.ok {
			t.Errorf("%d: dial %s: %v, want ok=%v", i, tc.target, err, tc.ok)
		}
	}
}

// TestQuorumSettings: the quorum settings take only ssl.quorum.* (and sslQuorum,
// sslQuorumReloadCertFiles, portUnification), and their errors name ssl.quorum keys.
func TestQuorumSettings(t *testing.T) {
	for i, tc := range []struct {
		k, v string
		ok   bool
		err  bool
	}{
		0: {"ssl.quorum.protocol", "TLSv1.3", true, false},
		1: {"ssl.quorum.protocol", "SSLv3", true, true},
		2: {"ssl.quorum.clientAuth", "want", true, false},
		3: {"ssl.keyStore.location", "/x", false, false},
		4: {"secureClientPort", "2281", false, false},
		5: {"ssl.quorum.authProvider", "x509", false, false},
		6: {"sslQuorumReloadCertFiles", "true", true, false},
		7: {"portUnification", "true", true, true},
		8: {"portUnification", "false", true, false},
		9: {"ssl.quorum.allowReverseDnsLookup", "false", true, false},
	} {
		s := QuorumDefaults()
		ok, err := s.Set(tc.k, tc.v)
		if ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%d: Set(%s, %s) = %v, %v", i, tc.k, tc.v, ok, err)
		}
		if !s.Quorum {
			t.Errorf("%d: the settings lost their quorum mark", i)
		}
	}
	c := Defaults()
	if ok, _ := c.Set("ssl.quorum.keyStore.location", "/x"); ok {
		t.Error("the client port's settings took ssl.quorum.keyStore.location")
	}
	r := QuorumDefaults()
	if r.Set("ssl.quorum.allowReverseDnsLookup", "false"); r.AllowReverseDNS || !QuorumDefaults().AllowReverseDNS {
		t.Error("ssl.quorum.allowReverseDnsLookup: default true, false when set so")
	}
	s := QuorumDefaults()
	if s.Enabled() || s.Validate() != nil || s.Reload {
		t.Errorf("defaults: enabled %v, reload %v, validate %v", s.Enabled(), s.Reload, s.Validate())
	}
	s.Set("sslQuorum", "true")
	s.Set("ssl.quorum.keyStore.location", "/x")
	s.Set("ssl.quorum.trustStore.location", "/y")
	s.Set("ssl.quorum.enabledProtocols", "TLSv1,TLSv1.3")
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "ssl.quorum.enabledProtocols") {
		t.Errorf("a gap in the protocols: %v", err)
	}
}

// TestQuorumReload: with sslQuorumReloadCertFiles=true a new quorum key store on disk is what
// the next dial presents (every corral.ssl.reloadIntervalMs); without it the first stays.
func TestQuorumReload(t *testing.T) {
	for _, reload := range []bool{true, false} {
		ca := testcerts.NewCA(t, t.TempDir(), "ca")
		src := quorumSource(t, ca, fmt.Sprintf("sslQuorumReloadCertFiles=%v", reload), "corral.ssl.reloadIntervalMs=20")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); src.Run(ctx) }()
		ca.WritePEM(t, ca.Issue(t, pkix.Name{CommonName: "peer-2"}, nil), "peer.pem")
		deadline := time.Now().Add(2 * time.Second)
		cn := ""
		for time.Now().Before(deadline) {
			if cn = src.ClientConfig("localhost:1").Certificates[0].Leaf.Subject.CommonName; cn == "peer-2" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
		if (cn == "peer-2") != reload {
			t.Errorf("sslQuorumReloadCertFiles=%v: the dial presents %s", reload, cn)
		}
	}
}

// TestQuorumAcceptHostnameVerification: with ssl.quorum.hostnameVerification (the default) the
// accepting side of a quorum link refuses a dialler whose certificate names neither its
// address (IP SAN) nor, with allowReverseDnsLookup, a reverse DNS name of it (DNS SAN); the
// refusal fails the handshake and is logged with the address. Off, the chain alone decides.
// Diallers bind loopback addresses 127.0.0.x; reverse DNS is a fixed table.
func TestQuorumAcceptHostnameVerification(t *testing.T) {
	defer func(f func(context.Context, string) ([]string, error)) { lookupAddr = f }(lookupAddr)
	lookupAddr = func(_ context.Context, ip string) ([]string, error) {
		if ip == "127.0.0.3" {
			return []string{"peer3.test."}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: ip, IsNotFound: true}
	}
	ca := testcerts.NewCA(t, t.TempDir(), "quorum-ca")
	byIP := ca.IssueFor(t, pkix.Name{CommonName: "peer-2"}, []net.IP{net.ParseIP("127.0.0.2")}, nil)
	byName := ca.IssueFor(t, pkix.Name{CommonName: "peer-3"}, nil, []string{"peer3.test"})
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for i, tc := range []struct {
		lines []string
		leaf  testcerts.Leaf
		from  string
		ok    bool
	}{
		0: {nil, byIP, "127.0.0.2", true},
		1: {nil, byIP, "127.0.0.1", false},
		2: {[]string{"ssl.quorum.hostnameVerification=false"}, byIP, "127.0.0.1", true},
		3: {nil, byName, "127.0.0.3", true},
		4: {[]string{"ssl.quorum.allowReverseDnsLookup=false"}, byName, "127.0.0.3", false},
		5: {nil, byName, "127.0.0.4", false},
	} {
		logs := &syncBuf{}
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := NewListener(raw, quorumSource(t, ca, tc.lines...), slog.New(slog.NewTextHandler(logs, nil)))
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("ok"))
				c.Close()
			}
		}()
		d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.from)}}
		cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS12,
			Certificates: []tls.Certificate{{Certificate: [][]byte{tc.leaf.Cert.Raw}, PrivateKey: tc.leaf.Key}}}
		got := ""
		c, err := tls.DialWithDialer(d, "tcp", raw.Addr().String(), cfg)
		if err == nil {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			b, _ := io.ReadAll(c)
			got = string(b)
			c.Close()
		}
		if (got == "ok") != tc.ok {
			t.Errorf("%d: %s dialling from %s: got %q (%v), want ok=%v", i, tc.leaf.Cert.Subject, tc.from, got, err, tc.ok)
		}
		if !tc.ok {
			want := "ssl.quorum.hostnameVerification: the peer's certificate (" + tc.leaf.Cert.Subject.String() + ")"
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(logs.String(), want) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !strings.Contains(logs.String(), "quorum TLS: TLS handshake failed, closing") || !strings.Contains(logs.String(), want) {
				t.Errorf("%d: log %q, want the refusal with %q", i, logs.String(), want)
			}
			if !strings.Contains(logs.String(), "its address "+tc.from) {
				t.Errorf("%d: the refusal does not name the address %s: %q", i, tc.from, logs.String())
			}
		}
		l.Close()
	}
}
