package sasl_test

import (
	"context"
	"fmt"
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
)

func TestMain(m *testing.M) {
	// The corral binary corralproc built for this process goes with it.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		corralproc.RemoveBinary()
		os.Exit(code)
	}))
}

// python is the interpreter with kazoo and pure-sasl (Debian's python3-kazoo and
// python3-pure-sasl).
const python = "/usr/bin/python3"

// target is one server under test.
type target struct {
	name string
	addr string
}

// startBoth starts a standalone Apache ZooKeeper with the JVM flags and a one-server Corral
// with the zoo.cfg keys, concurrently, and stops both when the test ends.
func startBoth(ctx context.Context, t *testing.T, zkFlags []string, corralCfg map[string]string) []target {
	t.Helper()
	if err := zkcliAvailable(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	zk, c := bothtest.Start(ctx, t, apachezk.Options{JVMFlags: zkFlags, Config: map[string]string{"forceSync": "no"}},
		corralproc.Options{Config: corralCfg})
	return []target{{"zookeeper", zk.Addr(0)}, {"corral", c.Addr(0)}}
}

func zkcliAvailable() error {
	if _, err := os.Stat(apachezk.CLIPath); err != nil {
		return fmt.Errorf("zkCli.sh is missing (%v); %s", err, apachezk.InstallHint)
	}
	return apachezk.Available()
}

// kazooAvailable says why kazoo with SASL cannot run, or nil.
func kazooAvailable() error {
	out, err := exec.Command(python, "-c", "import kazoo.client, puresasl.client").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kazoo with pure-sasl is not importable by %s (%v: %s); install python3-kazoo and python3-pure-sasl (make deps)",
			python, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// scenario is one client session: a zkCli session logged in from a Client JAAS file (user ""
// for none) running lines, or kazoo running ops.
type scenario struct {
	name       string
	user, pass string
	zkcli      []string
	kazoo      []string
}

// transcript runs the scenarios in order against addr and returns their normalised output.
func transcript(ctx context.Context, t *testing.T, addr string, scenarios []scenario) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for _, s := range scenarios {
		fmt.Fprintf(&b, "== %s\n", s.name)
		if s.zkcli != nil {
			flags := ""
			if s.user != "" {
				flags = "-Djava.security.auth.login.config=" + writeFile(t, dir, s.name+".jaas", clientJAAS(s.user, s.pass))
			}
			b.WriteString(apachezk.NormaliseCLI(apachezk.RunCLI(ctx, addr, flags, s.zkcli...)))
			continue
		}
		_, file, _, _ := runtime.Caller(0)
		args := append([]string{filepath.Join(filepath.Dir(file), "kazoo_sasl.py"), addr, s.user, s.pass}, s.kazoo...)
		kctx, kcancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(kctx, python, args...).CombinedOutput()
		kcancel()
		if err != nil {
			t.Fatalf("kazoo_sasl.py %v: %v\n%s", args[1:], err, out)
		}
		b.Write(out)
	}
	return b.String()
}

// compare runs the scenarios against both targets, requires identical transcripts and
// returns Corral's.
func compare(ctx context.Context, t *testing.T, targets []target, scenarios []scenario) string {
	t.Helper()
	got := map[string]string{}
	for _, tg := range targets {
		began := time.Now()
		got[tg.name] = transcript(ctx, t, tg.addr, scenarios)
		t.Logf("%s: %v\n%s", tg.name, time.Since(began).Round(time.Millisecond), got[tg.name])
	}
	if got["corral"] != got["zookeeper"] {
		t.Fatalf("Corral's transcript differs from Apache ZooKeeper's (- zookeeper, + corral):\n%s",
			difftext.Unified(t, "zookeeper", got["zookeeper"], "corral", got["corral"]))
	}
	return got["corral"]
}

// mustContain fails t unless every want line is in out: the transcripts must not only agree
// but show SASL working.
func mustContain(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("transcript lacks %q", w)
		}
	}
}

// TestSASLMatchesApacheZooKeeper: the same JAAS file on both servers (Apache ZooKeeper through
// -Djava.security.auth.login.config, Corral through corral.jaasConfig), with the SASL
// provider enabled. bob creates a node with ACL sasl:bob:cdrwa and reads it; alice is refused
// it; a wrong password fails the session; a client without SASL is refused it too.
func TestSASLMatchesApacheZooKeeper(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	jaas := writeFile(t, t.TempDir(), "server.jaas", jaasText)
	targets := startBoth(ctx, t,
		[]string{"-Djava.security.auth.login.config=" + jaas, "-Dzookeeper.authProvider.1=" + sasl.ProviderClass},
		map[string]string{"corral.jaasConfig": jaas, "authProvider.1": sasl.ProviderClass})
	scenarios := []scenario{
		{name: "zkcli-bob", user: "bob", pass: "bobsecret", zkcli: []string{
			"create /s x sasl:bob:cdrwa", "get /s", "getAcl /s", "whoami", "create /s/auth y auth::r", "getAcl /s/auth"}},
		{name: "zkcli-alice", user: "alice", pass: "alicesecret", zkcli: []string{"get /s", "whoami", "ls /s"}},
		{name: "zkcli-bob-wrong-password", user: "bob", pass: "wrong", zkcli: []string{"get /s"}},
		{name: "zkcli-no-sasl", zkcli: []string{"get /s", "whoami"}},
	}
	if err := kazooAvailable(); err != nil {
		t.Logf("kazoo scenarios skipped: %v", err)
	} else {
		scenarios = append(scenarios,
			scenario{name: "kazoo-bob", user: "bob", pass: "bobsecret", kazoo: []string{"create:/k:bob", "get:/k", "getacl:/k", "get:/s"}},
			scenario{name: "kazoo-alice", user: "alice", pass: "alicesecret", kazoo: []string{"get:/k", "get:/s"}},
			scenario{name: "kazoo-bob-wrong-password", user: "bob", pass: "wrong", kazoo: []string{"get:/k"}},
			scenario{name: "kazoo-unknown-user", user: "carol", pass: "x", kazoo: []string{"get:/k"}},
		)
	}
	out := compare(ctx, t, targets, scenarios)
	mustContain(t, out,
		"states: Closed,SaslAuthenticated,SyncConnected\nCreated /s\nx\n'sasl,'bob\n: cdrwa\nAuth scheme: User\nsasl: bob\n",
		"== zkcli-alice\nstates: Closed,SaslAuthenticated,SyncConnected\nInsufficient permission : /s\n",
		"== zkcli-bob-wrong-password\nstates: AuthFailed,SyncConnected\nKeeperErrorCode = AuthFailed for /s\n",
	)
	if kazooAvailable() == nil {
		mustContain(t, out, "getacl: ['sasl:bob:31']", "== kazoo-alice\nstart: ok\nget: NoAuthError\n",
			"== kazoo-bob-wrong-password\nstart: auth failed\nlog: AUTH_FAILED closing: \n", "== kazoo-unknown-user\nstart: auth failed\n")
	}
}

// TestRequireSASL: sessionRequireClientSASLAuth=true, given to Corral as -D flags in
// SERVER_JVMFLAGS (as zkServer.sh users do) together with the JAAS file. A client without SASL
// is refused its requests (SESSIONCLOSEDREQUIRESASLAUTH, connection closed); bob is served; a
// wrong password is answered SESSIONCLOSEDREQUIRESASLAUTH instead of AUTHFAILED.
func TestRequireSASL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	jaas := writeFile(t, t.TempDir(), "server.jaas", jaasText)
	flags := []string{"-Djava.security.auth.login.config=" + jaas, "-Dzookeeper.authProvider.1=" + sasl.ProviderClass,
		"-Dzookeeper.sessionRequireClientSASLAuth=true"}
	t.Setenv("SERVER_JVMFLAGS", strings.Join(flags, " "))
	targets := startBoth(ctx, t, flags, nil)
	scenarios := []scenario{
		{name: "zkcli-no-sasl", zkcli: []string{"ls /zookeeper"}},
		{name: "zkcli-bob", user: "bob", pass: "bobsecret", zkcli: []string{"ls /zookeeper", "whoami"}},
		{name: "zkcli-bob-wrong-password", user: "bob", pass: "wrong", zkcli: []string{"ls /zookeeper"}},
	}
	if err := kazooAvailable(); err != nil {
		t.Logf("kazoo scenarios skipped: %v", err)
	} else {
		// kazoo 2.8 does not know SESSIONCLOSEDREQUIRESASLAUTH (-124): its connection thread
		// dies on it ("Invalid error code") and the request hangs, with either server, so only
		// the authenticated session is run.
		scenarios = append(scenarios, scenario{name: "kazoo-bob", user: "bob", pass: "bobsecret", kazoo: []string{"get:/zookeeper"}})
	}
	out := compare(ctx, t, targets, scenarios)
	mustContain(t, out, "== zkcli-bob\nstates: Closed,SaslAuthenticated,SyncConnected\n[config, quota]\n")
}
