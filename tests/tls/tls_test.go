package tls_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcerts"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/wire"
)

// env is a one-server ensemble with a plaintext and a secure client port.
type env struct {
	c       *testcluster.Cluster
	secure  string
	ca      *testcerts.CA
	keyPath string
	dir     string
}

func start(t *testing.T, clientAuth string, extra ...string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{ca: testcerts.NewCA(t, dir, "test-ca"), dir: dir}
	e.keyPath = e.ca.WritePEM(t, e.ca.Issue(t, pkix.Name{CommonName: "corral-1"}, nil), "server.pem")
	port := testcluster.FreePorts(t, 1)[0]
	lines := append([]string{
		fmt.Sprintf("secureClientPort=%d", port), "secureClientPortAddress=127.0.0.1",
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=" + e.keyPath,
		"ssl.trustStore.location=" + e.ca.WriteTrustPEM(t, "ca.pem"),
		"ssl.clientAuth=" + clientAuth,
	}, extra...)
	e.c = testcluster.Start(t, testcluster.Options{Servers: 1, Extra: lines})
	e.secure = e.c.Server(0).SecureClientAddr()
	if e.secure != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Fatalf("secure client address %q", e.secure)
	}
	return e
}

// tlsConfig is a client configuration trusting the test CA, with the certificate of cn ("":
// none).
func (e *env) tlsConfig(t *testing.T, cn string) *tls.Config {
	cfg := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost"}
	cfg.RootCAs.AddCert(e.ca.Cert)
	if cn != "" {
		l := e.ca.Issue(t, pkix.Name{CommonName: cn, Organization: []string{"corp"}}, nil)
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key}}
	}
	return cfg
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// connect opens a go-zookeeper session over TLS (cfg) or plaintext (nil) and waits for it.
func connect(t *testing.T, addr string, cfg *tls.Config) (*zk.Conn, error) {
	t.Helper()
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		if cfg == nil {
			return net.DialTimeout(network, address, timeout)
		}
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg)
	}
	conn, events, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogger(quiet{}), zk.WithDialer(dial))
	if err != nil {
		return nil, err
	}
	deadline := time.After(3 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				t.Cleanup(conn.Close)
				return conn, nil
			}
		case <-deadline:
			conn.Close()
			return nil, errors.New("no session within 3 s")
		}
	}
}

// connectFrame is a framed ConnectRequest for a new session.
func connectFrame() []byte {
	e := wire.NewEncoder(nil)
	m := wire.BeginFrame(e)
	(&wire.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}).Encode(e)
	wire.EndFrame(e, m)
	return e.Bytes()
}

// whoAmI asks the server over a raw TLS connection who the client with cfg is.
func whoAmI(t *testing.T, addr string, cfg *tls.Config) []wire.ClientInfo {
	t.Helper()
	nc, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	e := wire.NewEncoder(connectFrame())
	m := wire.BeginFrame(e)
	(&wire.RequestHeader{Xid: 1, Op: wire.OpWhoAmI}).Encode(e)
	wire.EndFrame(e, m)
	if _, err := nc.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	if _, err := wire.ReadFrame(r, nil, 1<<20); err != nil {
		t.Fatalf("connect response: %v", err)
	}
	frame, err := wire.ReadFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatalf("whoAmI reply: %v", err)
	}
	d := wire.NewDecoder(frame)
	var h wire.ReplyHeader
	if err := h.Decode(d); err != nil || h.Err != wire.ErrOK {
		t.Fatalf("whoAmI reply header %+v %v", h, err)
	}
	var resp wire.WhoAmIResponse
	if err := resp.Decode(d); err != nil {
		t.Fatal(err)
	}
	return resp.ClientInfo
}

// TestGoZookeeperOverTLS: a go-zookeeper client with a certificate creates and reads znodes over
// TLS; an x509 ACL grants its subject and refuses another certificate and a plaintext client;
// whoAmI lists the x509 id; a client without a certificate is refused (clientAuth=need); a
// four-letter word works over TLS.
func TestGoZookeeperOverTLS(t *testing.T) {
	e := start(t, "need")
	alice, err := connect(t, e.secure, e.tlsConfig(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Create("/tls", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if b, _, err := alice.Get("/tls"); err != nil || string(b) != "hello" {
		t.Fatalf("get /tls: %q %v", b, err)
	}
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=alice,O=corp"}}
	if _, err := alice.Create("/tls/alice", []byte("secret"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if b, _, err := alice.Get("/tls/alice"); err != nil || string(b) != "secret" {
		t.Fatalf("alice reads her node: %q %v", b, err)
	}
	if _, err := alice.Create("/tls/auth", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatalf("auth ACL with an x509 id: %v", err)
	}
	if got, _, err := alice.GetACL("/tls/auth"); err != nil || len(got) != 1 || got[0].Scheme != "x509" || got[0].ID != "CN=alice,O=corp" {
		t.Fatalf("auth ACL expanded to %v (%v), want x509:CN=alice,O=corp", got, err)
	}
	bob, err := connect(t, e.secure, e.tlsConfig(t, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bob.Get("/tls/alice"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("bob reads alice's node: %v, want NOAUTH", err)
	}
	plain, err := connect(t, e.c.Addrs()[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _, err := plain.Get("/tls"); err != nil || string(b) != "hello" {
		t.Fatalf("the plaintext port serves the same tree: %q %v", b, err)
	}
	if _, _, err := plain.Get("/tls/alice"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a plaintext client reads alice's node: %v, want NOAUTH", err)
	}
	ids := whoAmI(t, e.secure, e.tlsConfig(t, "alice"))
	found := false
	for _, id := range ids {
		found = found || (id.AuthScheme == "x509" && id.User == "CN=alice,O=corp")
	}
	if !found {
		t.Fatalf("whoAmI %+v has no x509 CN=alice,O=corp", ids)
	}
	if _, err := connect(t, e.secure, e.tlsConfig(t, "")); err == nil {
		t.Fatal("a client without a certificate got a session under ssl.clientAuth=need")
	}
	nc, err := tls.Dial("tcp", e.secure, e.tlsConfig(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("ruok"))
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(nc); string(b) != "imok" {
		t.Fatalf("ruok over TLS: %q", b)
	}
	nc.Close()
}

// TestClientAuthWantNone: without a certificate a client gets a session under want and none.
func TestClientAuthWantNone(t *testing.T) {
	for i, mode := range []string{"want", "none"} {
		e := start(t, mode)
		c, err := connect(t, e.secure, e.tlsConfig(t, ""))
		if err != nil {
			t.Fatalf("%d: ssl.clientAuth=%s, no certificate: %v", i, mode, err)
		}
		if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
}

// TestPlaintextOnSecurePort: a plaintext ZooKeeper client on the secure port is closed with
// nothing written; the server goes on serving.
func TestPlaintextOnSecurePort(t *testing.T) {
	e := start(t, "need")
	nc, err := net.Dial("tcp", e.secure)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write(connectFrame())
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(nc)
	nc.Close()
	if len(b) != 0 || err != nil {
		t.Fatalf("plaintext on the secure port: got %q, err %v; want it closed with nothing written", b, err)
	}
	if _, err := connect(t, e.secure, e.tlsConfig(t, "alice")); err != nil {
		t.Fatalf("after a plaintext client: %v", err)
	}
}

// TestReloadServed: a key store replaced on disk is served to the next connection.
func TestReloadServed(t *testing.T) {
	e := start(t, "need", "corral.ssl.reloadIntervalMs=100")
	subject := func() string {
		nc, err := tls.Dial("tcp", e.secure, e.tlsConfig(t, "alice"))
		if err != nil {
			return "error: " + err.Error()
		}
		defer nc.Close()
		return nc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if s := subject(); s != "corral-1" {
		t.Fatalf("server certificate %q", s)
	}
	tmp := e.ca.WritePEM(t, e.ca.Issue(t, pkix.Name{CommonName: "corral-1-renewed"}, nil), "next.pem")
	if err := os.Rename(tmp, e.keyPath); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for subject() != "corral-1-renewed" {
		if time.Now().After(deadline) {
			t.Fatalf("server certificate still %q 5 s after the key store was replaced", subject())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := connect(t, e.secure, e.tlsConfig(t, "alice")); err != nil {
		t.Fatalf("a session with the renewed certificate: %v", err)
	}
}

// TestConfig: secureClientPort alone means no plaintext port; bad keys are errors naming them.
func TestConfig(t *testing.T) {
	cfg, err := cluster.ParseConfig(strings.NewReader("dataDir=/d\nsecureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.clientAuth=none\n"))
	if err != nil || cfg.ClientPort != 0 || cfg.TLS.SecurePort != 2281 {
		t.Fatalf("clientPort %d secure %d err %v", cfg.ClientPort, cfg.TLS.SecurePort, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, _ = cluster.ParseConfig(strings.NewReader("dataDir=/d\nclientPort=2181\nsecureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.clientAuth=none\n"))
	if cfg.ClientPort != 2181 {
		t.Fatalf("clientPort %d beside secureClientPort", cfg.ClientPort)
	}
	for i, tc := range []struct{ text, want string }{
		0: {"dataDir=/d\nsecureClientPort=2281\n", "ssl.keyStore.location"},
		1: {"dataDir=/d\nssl.clientAuth=sometimes\n", "ssl.clientAuth"},
		2: {"dataDir=/d\nsecureClientPort=2281\nssl.keyStore.location=/nonexistent.pem\nssl.clientAuth=none\n", ""},
	} {
		cfg, err := cluster.ParseConfig(strings.NewReader(tc.text))
		if err == nil {
			err = cfg.Validate()
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("%d: %v", i, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: err %v, want one naming %s", i, err, tc.want)
		}
	}
	// A key store that cannot be read stops the server at start, naming the key.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte("dataDir="+dir+"\nclientPort=1\nsecureClientPort=2\nssl.keyStore.location="+dir+"/missing.pem\nssl.clientAuth=none\n"), 0o644)
	cfg, err = cluster.LoadConfig(filepath.Join(dir, "zoo.cfg"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Start(t.Context(), cfg, nil); err == nil || !strings.Contains(err.Error(), "ssl.keyStore.location") {
		t.Fatalf("start with a missing key store: %v", err)
	}
}

// TestKazooOverTLS: kazoo (python3-kazoo) with use_ssl, a CA and a client certificate creates
// and reads a znode with an x509 ACL for its own subject.
func TestKazooOverTLS(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Skip("python3-kazoo is not installed (/usr/bin/python3 -c 'import kazoo' failed)")
	}
	e := start(t, "need")
	certFile, keyFile := e.ca.WriteCertPEM(t, e.ca.Issue(t, pkix.Name{CommonName: "kazoo", Organization: []string{"corp"}}, nil), "kazoo")
	caFile := e.ca.WriteTrustPEM(t, "kazoo-ca.pem")
	script := `
import sys
from kazoo.client import KazooClient
from kazoo.security import make_acl
zk = KazooClient(hosts=sys.argv[1], use_ssl=True, verify_certs=True, ca=sys.argv[2], certfile=sys.argv[3], keyfile=sys.argv[4], timeout=10)
zk.start(timeout=10)
zk.create("/kz", b"over tls", acl=[make_acl("x509", "CN=kazoo,O=corp", all=True)])
data, stat = zk.get("/kz")
print(data.decode(), zk.get_acls("/kz")[0][0].id.scheme, zk.get_acls("/kz")[0][0].id.id)
zk.stop()
`
	out, err := exec.Command(python, "-c", script, e.secure, caFile, certFile, keyFile).CombinedOutput()
	if err != nil {
		t.Fatalf("kazoo: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "over tls x509 CN=kazoo,O=corp" {
		t.Fatalf("kazoo printed %q", got)
	}
	plain, err := connect(t, e.c.Addrs()[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := plain.Get("/kz"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a plaintext client reads kazoo's node: %v, want NOAUTH", err)
	}
}
