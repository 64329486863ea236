package kerberos_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/bothtest"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/difftext"
	"github.com/corral/corral/sasl"
	"github.com/corral/corral/wire"
)

func TestMain(m *testing.M) {
	// The corral binary corralproc built for this process goes with it.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		corralproc.RemoveBinary()
		os.Exit(code)
	}))
}

const (
	realm = "EXAMPLE.COM"
	// python is the interpreter with kazoo, pure-sasl and python3-kerberos.
	python = "/usr/bin/python3"
	// installHint says what provides the KDC and the client tools.
	installHint = "run scripts/install-deps.sh (Debian packages krb5-kdc, krb5-admin-server, krb5-user)"
)

// kdcTools are the MIT Kerberos programs the test runs.
var kdcTools = []string{"/usr/sbin/krb5kdc", "/usr/sbin/kdb5_util", "/usr/sbin/kadmin.local", "/usr/bin/kinit"}

// kdc is an MIT KDC in a temporary directory, with its krb5.conf and keytabs.
type kdc struct {
	dir       string
	krb5Conf  string
	env       []string // KRB5_CONFIG and KRB5_KDC_PROFILE
	zkKeytab  string   // zookeeper/localhost@EXAMPLE.COM
	cliKeytab string   // client@EXAMPLE.COM
}

// freePort returns a port that was free on 127.0.0.1 for TCP and UDP a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port for the KDC")
	return 0
}

// startKDC creates the realm, its principals and keytabs, and runs krb5kdc in the foreground
// until the test ends.
func startKDC(ctx context.Context, t *testing.T) *kdc {
	t.Helper()
	for _, p := range kdcTools {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("MIT Kerberos is missing (%v); %s", err, installHint)
		}
	}
	dir := t.TempDir()
	port := freePort(t)
	k := &kdc{dir: dir, krb5Conf: filepath.Join(dir, "krb5.conf"),
		zkKeytab: filepath.Join(dir, "zk.keytab"), cliKeytab: filepath.Join(dir, "client.keytab")}
	writeFile(t, dir, "krb5.conf", fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	rdns = false
	udp_preference_limit = 1
	default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
	default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
	permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
[realms]
	%[1]s = {
		kdc = 127.0.0.1:%[2]d
	}
[domain_realm]
	localhost = %[1]s
`, realm, port))
	writeFile(t, dir, "kdc.conf", fmt.Sprintf(`[kdcdefaults]
	kdc_ports = %[2]d
	kdc_tcp_ports = %[2]d
[realms]
	%[1]s = {
		database_name = %[3]s/principal
		key_stash_file = %[3]s/stash
		acl_file = %[3]s/kadm5.acl
		max_life = 1h
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}
[logging]
	kdc = FILE:%[3]s/kdc.log
`, realm, port, dir))
	writeFile(t, dir, "kadm5.acl", "")
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.krb5Conf, "KRB5_KDC_PROFILE="+filepath.Join(dir, "kdc.conf"))
	run := func(name string, args ...string) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = k.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("/usr/sbin/kdb5_util", "create", "-s", "-r", realm, "-P", "master-secret")
	for _, q := range []string{
		"addprinc -randkey zookeeper/localhost", "addprinc -randkey client",
		"ktadd -k " + k.zkKeytab + " zookeeper/localhost", "ktadd -k " + k.cliKeytab + " client",
	} {
		run("/usr/sbin/kadmin.local", "-r", realm, "-q", q)
	}
	cmd := exec.Command("/usr/sbin/krb5kdc", "-n", "-r", realm)
	cmd.Env = k.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("krb5kdc: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "kdc.log"))
			t.Logf("krb5kdc output:\n%s\nkdc.log:\n%s", out.String(), log)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("krb5kdc does not listen on port %d: %v\n%s", port, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return k
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// krbJAAS is a JAAS section logging in from a keytab.
func krbJAAS(section, keytab, principal string) string {
	return fmt.Sprintf("%s {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab=%q\n"+
		"  storeKey=true\n  useTicketCache=false\n  principal=%q;\n};\n", section, keytab, principal)
}

// scenario is one client session: zkCli logged in with Kerberos (or not) running lines, or
// kazoo with a mechanism running ops.
type scenario struct {
	name     string
	kerberos bool     // zkCli: log in as client@EXAMPLE.COM
	digest   bool     // zkCli: log in as the DIGEST-MD5 user bob
	zkcli    []string // zkCli lines
	mech     string   // kazoo (tests/sasl/kazoo_sasl.py): "GSSAPI" or "" (no SASL)
	kazoo    []string // kazoo ops
}

// kazooGSSAPI says why kazoo cannot run GSSAPI, or nil.
func kazooGSSAPI() error {
	out, err := exec.Command(python, "-c", "import kazoo.client, puresasl.mechanisms as m, kerberos; assert 'GSSAPI' in m.mechanisms").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kazoo with pure-sasl's GSSAPI is not usable by %s (%v: %s); install python3-kazoo, python3-pure-sasl and python3-kerberos",
			python, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// badToken opens a session on addr, sends one sasl packet with token and reports the reply's
// error code and whether the server then closed the connection.
func badToken(t *testing.T, addr string, token []byte) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	e := wire.NewEncoder(nil)
	(&wire.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}).Encode(e)
	r := bufio.NewReader(c)
	if err := wire.WriteFrame(c, e.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadFrame(r, nil, 1<<20); err != nil {
		t.Fatalf("connect response: %v", err)
	}
	e = wire.NewEncoder(nil)
	(&wire.RequestHeader{Xid: 1, Op: wire.OpSASL}).Encode(e)
	(&wire.GetSASLRequest{Token: token}).Encode(e)
	if err := wire.WriteFrame(c, e.Bytes()); err != nil {
		t.Fatal(err)
	}
	rep, err := wire.ReadFrame(r, nil, 1<<20)
	if err != nil || len(rep) < 16 {
		return fmt.Sprintf("no reply (%v)", err)
	}
	out := fmt.Sprintf("xid %d err %d", int32(binary.BigEndian.Uint32(rep)), int32(binary.BigEndian.Uint32(rep[12:])))
	if _, err := wire.ReadFrame(r, nil, 1<<20); err != nil {
		return out + ", then closed\n"
	}
	return out + ", then open\n"
}

// transcript runs the scenarios in order against addr and returns their normalised output.
func transcript(ctx context.Context, t *testing.T, k *kdc, addr string, scenarios []scenario) string {
	t.Helper()
	var b strings.Builder
	cliJAAS := writeFile(t, k.dir, "client.jaas", krbJAAS("Client", k.cliKeytab, "client@"+realm))
	digestJAAS := writeFile(t, k.dir, "digest.jaas",
		"Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required username=\"bob\" password=\"bobsecret\";\n};\n")
	// Bad input first: each closes its own connection only, the sessions after it are served.
	garbage := []byte("\x60\x03garbage")
	oversize := bytes.Repeat([]byte{0x60}, 70<<10)
	fmt.Fprintf(&b, "== garbage token\n%s== oversize token\n%s", badToken(t, addr, garbage), badToken(t, addr, oversize))
	for _, s := range scenarios {
		fmt.Fprintf(&b, "== %s\n", s.name)
		if s.zkcli != nil {
			flags := "-Djava.security.krb5.conf=" + k.krb5Conf
			if s.kerberos {
				flags += " -Djava.security.auth.login.config=" + cliJAAS
			}
			if s.digest {
				flags += " -Djava.security.auth.login.config=" + digestJAAS
			}
			b.WriteString(apachezk.NormaliseCLI(apachezk.RunCLI(ctx, addr, flags, s.zkcli...)))
			continue
		}
		_, file, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(file), "..", "sasl", "kazoo_sasl.py")
		args := append([]string{script, addr, s.mech, ""}, s.kazoo...)
		kctx, kcancel := context.WithTimeout(ctx, time.Minute)
		cmd := exec.CommandContext(kctx, python, args...)
		cmd.Env = append(k.env, "KRB5CCNAME=FILE:"+filepath.Join(k.dir, "ccache"))
		out, err := cmd.CombinedOutput()
		kcancel()
		if err != nil {
			t.Fatalf("kazoo_sasl.py %v: %v\n%s", args[1:], err, out)
		}
		b.Write(out)
	}
	return b.String()
}

// localhostAddr names a server by "localhost", the host of the service principal (the
// clients ask for a ticket to zookeeper/<the host they connect to>).
func localhostAddr(t *testing.T, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return "localhost:" + port
}

// startAll starts a KDC, then Apache ZooKeeper (JVM flags) and Corral (SERVER_JVMFLAGS, as
// zkServer.sh users give it) from the same JAAS Server section (Krb5LoginModule with the
// zookeeper/localhost keytab), krb5.conf, SASL provider and extra -D flags; all stop when the
// test ends. It skips with -short.
func startAll(ctx context.Context, t *testing.T, extra ...string) (*kdc, *apachezk.Ensemble, *corralproc.Ensemble) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: starts a KDC, Apache ZooKeeper and Corral")
	}
	if _, err := os.Stat(apachezk.CLIPath); err != nil {
		t.Fatalf("zkCli.sh is missing (%v); %s", err, apachezk.InstallHint)
	}
	if err := apachezk.Available(); err != nil {
		t.Fatal(err)
	}
	k := startKDC(ctx, t)
	serverJAAS := writeFile(t, k.dir, "server.jaas", krbJAAS("Server", k.zkKeytab, "zookeeper/localhost@"+realm))
	flags := append([]string{"-Djava.security.auth.login.config=" + serverJAAS, "-Djava.security.krb5.conf=" + k.krb5Conf,
		"-Dzookeeper.authProvider.1=" + sasl.ProviderClass}, extra...)
	t.Setenv("SERVER_JVMFLAGS", strings.Join(flags, " "))
	zk, c := bothtest.Start(ctx, t, apachezk.Options{JVMFlags: flags, Config: map[string]string{"forceSync": "no"}},
		corralproc.Options{})
	return k, zk, c
}

// TestKerberosMatchesApacheZooKeeper: a KDC, then Apache ZooKeeper (JVM flags) and Corral
// (SERVER_JVMFLAGS, as zkServer.sh users give it) from the same JAAS Server section and
// krb5.conf. The Java client authenticates as client@EXAMPLE.COM, creates a node with ACL
// sasl:client@EXAMPLE.COM:cdrwa and reads it back; a client without SASL is refused it;
// kazoo does the same over GSSAPI; a DIGEST-MD5 client (zkCli) fails against a Kerberos server; a
// garbage and an oversize token are answered AUTHFAILED and close their connection only.
func TestKerberosMatchesApacheZooKeeper(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, zk, c := startAll(ctx, t)
	targets := []struct{ name, addr string }{{"zookeeper", localhostAddr(t, zk.Addr(0))}, {"corral", localhostAddr(t, c.Addr(0))}}

	id := "client@" + realm
	scenarios := []scenario{
		{name: "zkcli-kerberos", kerberos: true, zkcli: []string{
			"create /k x sasl:" + id + ":cdrwa", "get /k", "getAcl /k", "whoami"}},
		{name: "zkcli-no-sasl", zkcli: []string{"get /k", "whoami"}},
		// A DIGEST-MD5 client fails: the server runs GSSAPI only. (zkCli, not kazoo: kazoo's
		// start() races with its own AUTH_FAILED handling when the failure comes at once.)
		{name: "zkcli-digest", digest: true, zkcli: []string{"get /k"}},
	}
	kazooOK := kazooGSSAPI() == nil
	if err := kazooGSSAPI(); err != nil {
		t.Logf("kazoo scenarios skipped: %v", err)
	} else {
		kinit := exec.CommandContext(ctx, "/usr/bin/kinit", "-k", "-t", k.cliKeytab, id)
		kinit.Env = append(k.env, "KRB5CCNAME=FILE:"+filepath.Join(k.dir, "ccache"))
		if out, err := kinit.CombinedOutput(); err != nil {
			t.Fatalf("kinit: %v\n%s", err, out)
		}
		scenarios = append(scenarios,
			scenario{name: "kazoo-gssapi", mech: "GSSAPI", kazoo: []string{"create:/kz:" + id, "get:/kz", "getacl:/kz", "get:/k"}},
			scenario{name: "kazoo-no-sasl", kazoo: []string{"get:/kz"}},
		)
	}
	got := map[string]string{}
	for _, tg := range targets {
		began := time.Now()
		got[tg.name] = transcript(ctx, t, k, tg.addr, scenarios)
		t.Logf("%s: %v\n%s", tg.name, time.Since(began).Round(time.Millisecond), got[tg.name])
	}
	if got["corral"] != got["zookeeper"] {
		t.Fatalf("Corral's transcript differs from Apache ZooKeeper's (- zookeeper, + corral):\n%s",
			difftext.Unified(t, "zookeeper", got["zookeeper"], "corral", got["corral"]))
	}
	want := []string{
		"== garbage token\nxid 1 err -115, then closed\n== oversize token\nxid 1 err -115, then closed\n",
		"== zkcli-kerberos\nstates: Closed,SaslAuthenticated,SyncConnected\nCreated /k\nx\n'sasl,'" + id + "\n: cdrwa\n",
		"sasl: " + id + "\n",
		"== zkcli-no-sasl\nstates: Closed,SyncConnected\nInsufficient permission : /k\n",
		"== zkcli-digest\nstates: AuthFailed,SyncConnected\nKeeperErrorCode = AuthFailed for /k\n",
	}
	if kazooOK {
		want = append(want, "getacl: ['sasl:"+id+":31']", "== kazoo-no-sasl\nstart: ok\nget: NoAuthError\n")
	}
	for _, w := range want {
		if !strings.Contains(got["corral"], w) {
			t.Errorf("transcript lacks %q", w)
		}
	}
}

// TestKerberosNameOptions: kerberos.removeRealmFromPrincipal and removeHostFromPrincipal
// shorten names in the default realm of krb5.conf (EXAMPLE.COM), and superUser names the
// shortened id, on both servers alike.
func TestKerberosNameOptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, zk, c := startAll(ctx, t, "-Dzookeeper.kerberos.removeRealmFromPrincipal=true",
		"-Dzookeeper.kerberos.removeHostFromPrincipal=true", "-Dzookeeper.superUser=client")
	cliJAAS := writeFile(t, k.dir, "client.jaas", krbJAAS("Client", k.cliKeytab, "client@"+realm))
	got := map[string]string{}
	for name, addr := range map[string]string{"zookeeper": zk.Addr(0), "corral": c.Addr(0)} {
		got[name] = apachezk.NormaliseCLI(apachezk.RunCLI(ctx, localhostAddr(t, addr),
			"-Djava.security.krb5.conf="+k.krb5Conf+" -Djava.security.auth.login.config="+cliJAAS,
			"create /r x sasl:client:cdrwa", "getAcl /r", "whoami"))
		t.Logf("%s:\n%s", name, got[name])
	}
	if got["corral"] != got["zookeeper"] {
		t.Fatalf("Corral's transcript differs from Apache ZooKeeper's (- zookeeper, + corral):\n%s",
			difftext.Unified(t, "zookeeper", got["zookeeper"], "corral", got["corral"]))
	}
	if want := "Created /r\n'sasl,'client\n: cdrwa\n"; !strings.Contains(got["corral"], want) {
		t.Errorf("transcript lacks %q", want)
	}
}

// TestKerberosThreeServers: a 3-server Corral ensemble (two data shards) from one JAAS Server
// section and keytab (every server is zookeeper/localhost). A zkCli session logged in with
// Kerberos through server 1 creates a node with ACL sasl:client@EXAMPLE.COM:cdrwa; the ACL is
// enforced through the other servers: a session without SASL through server 2 is refused the
// node, a Kerberos session through server 3 reads it and is sasl:client@EXAMPLE.COM there, and
// one Kerberos session given all three servers (it connects to one of them) writes it.
func TestKerberosThreeServers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: starts a KDC and three Corral servers")
	}
	if _, err := os.Stat(apachezk.CLIPath); err != nil {
		t.Fatalf("zkCli.sh is missing (%v); %s", err, apachezk.InstallHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k := startKDC(ctx, t)
	serverJAAS := writeFile(t, k.dir, "server.jaas", krbJAAS("Server", k.zkKeytab, "zookeeper/localhost@"+realm))
	t.Setenv("SERVER_JVMFLAGS", strings.Join([]string{"-Djava.security.auth.login.config=" + serverJAAS,
		"-Djava.security.krb5.conf=" + k.krb5Conf, "-Dzookeeper.authProvider.1=" + sasl.ProviderClass}, " "))
	c, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2, TickTime: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("start Corral: %v", err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("close Corral: %v", err)
		}
	}()
	cliJAAS := writeFile(t, k.dir, "client.jaas", krbJAAS("Client", k.cliKeytab, "client@"+realm))
	kerberos := "-Djava.security.krb5.conf=" + k.krb5Conf + " -Djava.security.auth.login.config=" + cliJAAS
	id := "client@" + realm
	var all []string
	for i := 0; i < 3; i++ {
		all = append(all, localhostAddr(t, c.Addr(i)))
	}
	for i, tc := range []struct {
		addr, flags string
		lines       []string
		want        string
	}{
		0: {all[0], kerberos, []string{"create /k3 x sasl:" + id + ":cdrwa", "getAcl /k3", "whoami"},
			"states: Closed,SaslAuthenticated,SyncConnected\nCreated /k3\n'sasl,'" + id + "\n: cdrwa\nAuth scheme: User\nsasl: " + id + "\nip: 127.0.0.1\n"},
		1: {all[1], "-Djava.security.krb5.conf=" + k.krb5Conf, []string{"get /k3", "set /k3 y"},
			"states: Closed,SyncConnected\nInsufficient permission : /k3\nInsufficient permission : /k3\n"},
		2: {all[2], kerberos, []string{"get /k3", "whoami"},
			"states: Closed,SaslAuthenticated,SyncConnected\nx\nAuth scheme: User\nsasl: " + id + "\nip: 127.0.0.1\n"},
		3: {strings.Join(all, ","), kerberos, []string{"set /k3 z", "get /k3"},
			"states: Closed,SaslAuthenticated,SyncConnected\nz\n"},
	} {
		got := apachezk.NormaliseCLI(apachezk.RunCLI(ctx, tc.addr, tc.flags, tc.lines...))
		if got != tc.want {
			t.Errorf("%d: zkCli %s %v:\n%s\nwant:\n%s", i, tc.addr, tc.lines, got, tc.want)
		}
	}
}
