package quorumtls_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcerts"
	"github.com/corral/corral/internal/testcluster"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitLog waits until the logs hold want.
func waitLog(t *testing.T, logs *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line %q", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stores writes a CA's trust store and one key store that every server shares (its
// certificate names 127.0.0.1 and localhost), and returns their zoo.cfg lines.
func stores(t *testing.T, ca *testcerts.CA) []string {
	key := ca.WritePEM(t, ca.Issue(t, pkix.Name{CommonName: "corral-server"}, nil), "quorum.pem")
	return []string{
		"ssl.quorum.keyStore.location=" + key,
		"ssl.quorum.trustStore.location=" + ca.WriteTrustPEM(t, "quorum-ca.pem"),
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
}

// TestQuorumTLS: three servers with sslQuorum=true elect leaders for every shard and replicate
// writes (a write through one server is read through the others after a sync); a plaintext
// peer, a peer with no certificate and a peer whose certificate another CA signed are each
// refused on the Raft port with one log line; no live link looks ended to raftnet's peek
// (nothing is written back on a message link). Under TLS 1.2 (the default) and TLS 1.3.
func TestQuorumTLS(t *testing.T) {
	for _, proto := range []string{"TLSv1.2", "TLSv1.3"} {
		t.Run(proto, func(t *testing.T) { testQuorumTLS(t, proto) })
	}
}

func testQuorumTLS(t *testing.T, proto string) {
	logs := &lockedBuffer{}
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "quorum-ca")
	extra := append(stores(t, ca), "sslQuorum=true", "sslQuorumReloadCertFiles=true", "ssl.quorum.protocol="+proto)
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 2, Extra: extra,
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for _, id := range []uint64{cluster.MetaShardID, cluster.DataShardID(0), cluster.DataShardID(1)} {
		if cl.Leader(id) < 0 {
			t.Fatalf("shard %d has no leader", id)
		}
	}
	addrs := cl.Addrs()
	w := connect(t, addrs[0])
	for i := range 10 {
		if _, err := w.Create(fmt.Sprintf("/q%d", i), []byte("over tls"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range addrs[1:] {
		r := connect(t, a)
		for i := range 10 {
			p := fmt.Sprintf("/q%d", i)
			if _, err := r.Sync(p); err != nil {
				t.Fatal(err)
			}
			if b, _, err := r.Get(p); err != nil || string(b) != "over tls" {
				t.Fatalf("%s via %s: %q %v", p, a, b, err)
			}
		}
	}
	if strings.Contains(logs.String(), "TLS handshake failed") || strings.Contains(logs.String(), "peer closed an idle link") {
		t.Fatalf("servers refused each other or saw live links as ended:\n%s", logs.String())
	}

	raft := cl.RaftAddr(1)
	// A plaintext peer: a dragonboat frame's first bytes.
	nc, err := net.Dial("tcp", raft)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte{0xAE, 0x7D, 0, 100, 0, 0, 0, 0, 0, 0, 0, 1})
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := nc.Read(make([]byte, 64)); err == nil {
		t.Fatalf("plaintext peer read %d bytes", n)
	}
	nc.Close()
	waitLog(t, logs, "quorum TLS: not a TLS client (plaintext?), closing")

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	other := testcerts.NewCA(t, filepath.Join(dir), "other-ca")
	ol := other.Issue(t, pkix.Name{CommonName: "intruder"}, nil)
	for i, cfg := range []*tls.Config{
		{RootCAs: roots, ServerName: "localhost"}, // no certificate
		{RootCAs: roots, ServerName: "localhost", Certificates: []tls.Certificate{{Certificate: [][]byte{ol.Cert.Raw}, PrivateKey: ol.Key}}},
	} {
		before := strings.Count(logs.String(), "quorum TLS: TLS handshake failed")
		tc, err := tls.Dial("tcp", raft, cfg)
		if err == nil {
			// TLS 1.2: the server refuses the client's certificate within the handshake, so
			// Dial fails; should it not, the link must still carry nothing.
			tc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = tc.Read(make([]byte, 1))
			tc.Close()
			if err == nil {
				t.Fatalf("peer %d: link accepted", i)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(logs.String(), "quorum TLS: TLS handshake failed") <= before {
			if time.Now().After(deadline) {
				t.Fatalf("peer %d refused without a log line", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The ensemble still works.
	if _, err := w.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// TestAdminHTTPS: with admin.forceHttps the admin port serves HTTPS from the ssl.quorum stores
// and plain HTTP gets no answer from a handler; a verified client certificate that
// corral.admin.x509 names is an operator, other certificates and none are not. With
// admin.needClientAuth a client without a certificate is refused in the handshake.
func TestAdminHTTPS(t *testing.T) {
	logs := &lockedBuffer{}
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "quorum-ca")
	extra := append(stores(t, ca), "admin.forceHttps=true", "corral.admin.x509=CN=op,O=corp", "corral.admin.trustLoopback=false")
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Admin: true, Extra: extra,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	addr := cl.AdminAddr(0)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	client := func(cn string) *http.Client {
		cfg := &tls.Config{RootCAs: roots}
		if cn != "" {
			l := ca.Issue(t, pkix.Name{CommonName: cn, Organization: []string{"corp"}}, nil)
			cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key}}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	status := func(c *http.Client, method, u string) int {
		t.Helper()
		req, _ := http.NewRequest(method, u, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, u, err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if got := status(client(""), http.MethodGet, "https://"+addr+"/health"); got != http.StatusOK {
		t.Fatalf("GET https /health: %d", got)
	}
	if got := status(http.DefaultClient, http.MethodGet, "http://"+addr+"/health"); got == http.StatusOK {
		t.Fatalf("GET http /health over plaintext: %d", got)
	}
	if got := status(client("op"), http.MethodPost, "https://"+addr+"/health"); got != http.StatusOK {
		t.Fatalf("POST with the operator's certificate: %d", got)
	}
	if got := status(client("someone"), http.MethodPost, "https://"+addr+"/health"); got == http.StatusOK {
		t.Fatalf("POST with another certificate: %d", got)
	}
	if got := status(client(""), http.MethodPost, "https://"+addr+"/health"); got == http.StatusOK {
		t.Fatalf("POST without a certificate: %d", got)
	}
	waitLog(t, logs, "x509:CN=op,O=corp")

	// admin.needClientAuth: no certificate, no answer; a certificate the trust store verifies
	// reads.
	cl2 := testcluster.Start(t, testcluster.Options{Servers: 1, Admin: true, Extra: append(stores(t, ca), "admin.forceHttps=true", "admin.needClientAuth=true")})
	if _, err := client("").Get("https://" + cl2.AdminAddr(0) + "/health"); err == nil {
		t.Fatal("admin.needClientAuth: served a client without a certificate")
	}
	if got := status(client("reader"), http.MethodGet, "https://"+cl2.AdminAddr(0)+"/health"); got != http.StatusOK {
		t.Fatalf("admin.needClientAuth: GET with a certificate: %d", got)
	}
}

// TestAdminPortUnification: with admin.portUnification the admin port answers plain HTTP and
// HTTPS (the ssl.quorum stores) on one port; over HTTPS a verified client certificate that
// corral.admin.x509 names is an operator, over plain HTTP only digest credentials are (loopback
// is not trusted here).
func TestAdminPortUnification(t *testing.T) {
	logs := &lockedBuffer{}
	ca := testcerts.NewCA(t, t.TempDir(), "quorum-ca")
	extra := append(stores(t, ca), "admin.portUnification=true", "corral.admin.x509=CN=op,O=corp",
		"corral.admin.digest=ops:CzCEOKcNDOImQNsA1kmK0V5DZ/A=") // ops:s3cret
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Admin: true, Extra: extra,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	addr := cl.AdminAddr(0)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	https := func(cn string) *http.Client {
		cfg := &tls.Config{RootCAs: roots}
		if cn != "" {
			l := ca.Issue(t, pkix.Name{CommonName: cn, Organization: []string{"corp"}}, nil)
			cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key}}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	for i, tc := range []struct {
		c            *http.Client
		method, url  string
		auth         string
		want         int
		wantTLSState bool
	}{
		0: {plain, http.MethodGet, "http://" + addr + "/health", "", http.StatusOK, false},
		1: {https(""), http.MethodGet, "https://" + addr + "/health", "", http.StatusOK, true},
		2: {https("op"), http.MethodPost, "https://" + addr + "/health", "", http.StatusOK, true},
		3: {https("someone"), http.MethodPost, "https://" + addr + "/health", "", http.StatusUnauthorized, true},
		4: {plain, http.MethodPost, "http://" + addr + "/health", "", http.StatusUnauthorized, false},
		5: {plain, http.MethodPost, "http://" + addr + "/health", "digest ops:s3cret", http.StatusOK, false},
		6: {https(""), http.MethodPost, "https://" + addr + "/health", "digest ops:s3cret", http.StatusOK, true},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := tc.c.Do(req)
		if err != nil {
			t.Fatalf("%d: %s %s: %v", i, tc.method, tc.url, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || (resp.TLS != nil) != tc.wantTLSState {
			t.Errorf("%d: %s %s: %d (TLS %v), want %d (TLS %v)", i, tc.method, tc.url, resp.StatusCode, resp.TLS != nil, tc.want, tc.wantTLSState)
		}
	}
	waitLog(t, logs, "x509:CN=op,O=corp")
}

// TestConfig: each mistake stops the server with the key at fault named.
func TestConfig(t *testing.T) {
	for i, tc := range []struct {
		cfg, want string
	}{
		0:  {"sslQuorum=true\nssl.quorum.trustStore.location=/x\n", "ssl.quorum.keyStore.location"},
		1:  {"sslQuorum=true\nssl.quorum.keyStore.location=/x\n", "ssl.quorum.trustStore.location"},
		2:  {"ssl.quorum.clientAuth=sometimes\n", "ssl.quorum.clientAuth"},
		3:  {"ssl.quorum.keyStore.type=BCFKS\n", "ssl.quorum.keyStore.type"},
		4:  {"portUnification=true\n", "portUnification"},
		5:  {"admin.forceHttps=true\n", "ssl.quorum.keyStore.location"},
		6:  {"admin.portUnification=true\n", "admin.portUnification"},
		7:  {"admin.needClientAuth=true\nadmin.forceHttps=true\nssl.quorum.keyStore.location=/x\n", "ssl.quorum.trustStore.location"},
		8:  {"sslQuorum=true\nssl.quorum.keyStore.location=/x\nssl.quorum.trustStore.location=/y\nssl.quorum.enabledProtocols=TLSv1,TLSv1.3\n", "ssl.quorum.enabledProtocols"},
		9:  {"admin.portUnification=true\nadmin.needClientAuth=true\nssl.quorum.keyStore.location=/x\nssl.quorum.trustStore.location=/y\n", "admin.forceHttps"},
		10: {"corral.admin.x509=CN=op\nssl.quorum.keyStore.location=/x\n", "admin.portUnification"},
	} {
		cfg, err := cluster.ParseConfig(strings.NewReader("dataDir=/tmp/x\n" + tc.cfg))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: %q: err %v, want it to name %s", i, tc.cfg, err, tc.want)
		}
	}
	// Corral's TLS timing keys apply to the quorum's TLS too.
	cfg, err := cluster.ParseConfig(strings.NewReader("dataDir=/tmp/x\ncorral.ssl.reloadIntervalMs=70\ncorral.ssl.handshakeTimeoutMs=900\n"))
	if err != nil || cfg.TLS.ReloadInterval != 70*time.Millisecond || cfg.QuorumTLS.ReloadInterval != 70*time.Millisecond ||
		cfg.QuorumTLS.HandshakeTimeout != 900*time.Millisecond {
		t.Errorf("timing keys: %v %v %v %v", err, cfg.TLS.ReloadInterval, cfg.QuorumTLS.ReloadInterval, cfg.QuorumTLS.HandshakeTimeout)
	}
	// A bad store stops the server at start, naming the key.
	dir := t.TempDir()
	cfg, err = cluster.ParseConfig(strings.NewReader(fmt.Sprintf("dataDir=%s\nclientPort=%d\nsslQuorum=true\nssl.quorum.keyStore.location=%s/none.pem\nssl.quorum.trustStore.location=%s/none.pem\n",
		dir, testcluster.FreePorts(t, 1)[0], dir, dir)))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := cluster.Start(t.Context(), cfg, nil); err == nil || !strings.Contains(err.Error(), "ssl.quorum.keyStore") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Start with a missing key store: %v", err)
	}
}

// TestForeignServerCannotJoin: a fourth server added to a TLS ensemble (POST /members/add) whose
// quorum stores come from another CA never catches up: each side refuses the other's links, and
// the ensemble logs the refusals and goes on serving writes.
func TestForeignServerCannotJoin(t *testing.T) {
	logs := &lockedBuffer{}
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "quorum-ca")
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Admin: true, Extra: append(stores(t, ca), "sslQuorum=true"),
		Log: slog.New(slog.NewTextHandler(logs, nil))})

	sdir := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	other := testcerts.NewCA(t, sdir, "other-ca")
	ports := testcluster.FreePorts(t, 2)
	var b strings.Builder
	for i := range 3 {
		host, port, _ := net.SplitHostPort(cl.RaftAddr(i))
		fmt.Fprintf(&b, "server.%d=%s:%s:%s1\n", i+1, host, port, port)
	}
	raft := fmt.Sprintf("127.0.0.1:%d", ports[1])
	fmt.Fprintf(&b, "server.4=%s:%d\n", raft, ports[1]+1)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\ntickTime=500\ncorral.shards=1\ncorral.join=true\n%s\nsslQuorum=true\n",
		sdir, ports[0], strings.Join(stores(t, other), "\n"))
	if err := os.WriteFile(filepath.Join(sdir, "myid"), []byte("4"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(sdir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	flogs := &lockedBuffer{}
	flog := slog.New(slog.NewTextHandler(flogs, nil))
	cfg, err := cluster.LoadConfig(cfgPath, flog)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+cl.AdminAddr(0)+"/members/add?id=4&raft="+raft, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("members/add: %s %s", resp.Status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if s, err := cluster.Start(ctx, cfg, flog); err == nil {
		s.Close()
		t.Fatal("a server with another CA's certificate joined the ensemble")
	}
	waitLog(t, flogs, "quorum TLS: TLS handshake failed")
	w := connect(t, cl.Addrs()[0])
	if _, err := w.Create("/still", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
