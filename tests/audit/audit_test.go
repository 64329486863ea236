package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/corral/corral/format"
	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/difftest"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// session runs the same writes on both servers. Each step's error is ignored: the failures are
// what some lines are about.
func session(t *testing.T, ctx context.Context, addr string) {
	c := zktest.Connect(t, ctx, addr)
	defer c.Close()
	world := zk.WorldACL(zk.PermAll)
	c.Create("/a", []byte("x"), 0, world)
	c.Create("/a", nil, 0, world) // NODEEXISTS
	seq, _ := c.Create("/a/s-", nil, zk.FlagEphemeral|zk.FlagSequence, world)
	c.Set("/a", []byte("y"), -1)
	c.Set("/a", []byte("y"), 42)    // BADVERSION
	c.Set("/nope", []byte("y"), -1) // NONODE
	c.CreateContainer("/c", nil, zk.FlagContainer, world)
	c.CreateTTL("/t", nil, zk.FlagTTL, world, time.Hour) // not audited
	c.Delete("/t", -1)
	c.Delete("/a", -1) // NOTEMPTY
	c.SetACL("/a", append(zk.WorldACL(zk.PermRead|zk.PermAdmin), zk.DigestACL(zk.PermAll, "bob", "pw")...), -1)
	if err := c.AddAuth("digest", []byte("bob:pw")); err != nil {
		t.Errorf("addAuth: %v", err)
	}
	c.Set("/a", []byte("z"), -1)
	other := zktest.Connect(t, ctx, addr)
	other.Set("/a", []byte("w"), -1) // NOAUTH: world may only read and administer /a
	other.Close()
	c.SetACL("/nope", world, -1) // NONODE, with the request's ACL
	c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: world},
		&zk.CreateRequest{Path: "/m/q-", Acl: world, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: "/m", Data: []byte("2"), Version: -1},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.CreateRequest{Path: "/a/e", Acl: world, Flags: zk.FlagEphemeral},
		&zk.DeleteRequest{Path: "/a/e", Version: -1},
	)
	c.Multi( // fails on the delete
		&zk.CreateRequest{Path: "/x", Acl: world},
		&zk.DeleteRequest{Path: "/nope", Version: -1},
	)
	c.Multi()                                     // empty: nothing to audit
	c.IncrementalReconfig(nil, []string{"2"}, -1) // reconfig is disabled
	c.Exists("/a")
	c.Get("/a")
	c.Delete(seq, -1)
	c.Delete("/a", -1)
	c.Delete("/c", 0)
}

// sessionRE matches a session id in a message.
var sessionRE = regexp.MustCompile(`session=0x[0-9a-f]+`)

// zkLines reads ZooKeeper's audit lines out of its log4j file (layout
// "%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n") as "LEVEL message".
func zkLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\] - (INFO|ERROR) +\[[^\]]*:Slf4jAuditLogger@\d+\] - (.*)$`)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			out = append(out, m[1]+" "+m[2])
		}
	}
	return out
}

// corralLines reads Corral's audit file ("yyyy-MM-dd HH:mm:ss,SSS LEVEL audit.Slf4jAuditLogger:
// message") as "LEVEL message".
func corralLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|ERROR) audit\.Slf4jAuditLogger: (.*)$`)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("corral audit line %q is not in the format", l)
			continue
		}
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// clientLines keeps the lines of client operations, session ids normalised.
func clientLines(lines []string) []string {
	out := sessionLines(lines)
	for i, l := range out {
		out[i] = sessionRE.ReplaceAllString(l, "session=S")
	}
	return out
}

// sessionLines keeps the lines with a session (client operations and session-end deletions).
func sessionLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "session=") {
			out = append(out, l)
		}
	}
	return out
}

// waitFor polls f for up to 20 s; when it never holds, the test fails (and goes on, so that
// what the caller compares next shows what is missing).
func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if f() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("timed out waiting for %s", what)
}

func TestAuditLinesMatchZooKeeper(t *testing.T) {
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ens, err := apachezk.Start(ctx, apachezk.Options{Config: map[string]string{"audit.enable": "true"},
		JVMFlags: []string{apachezk.FlagExtendedTypes, apachezk.FlagNoContainerGC}})
	if err != nil {
		t.Fatal(err)
	}
	defer ens.Close()
	session(t, ctx, ens.Addr(0))
	zkLog := filepath.Join(ens.ServerDir(0), "zookeeper.log")
	var want []string
	waitFor(t, "ZooKeeper's audit lines", func() bool {
		want = clientLines(zkLines(t, zkLog))
		return len(want) > 0 && strings.Contains(want[len(want)-1], "znode=/c")
	})
	zkAll := zkLines(t, zkLog)
	if len(zkAll) == 0 || !strings.Contains(zkAll[0], "operation=serverStart\tresult=success") {
		t.Fatalf("ZooKeeper's first audit line is not serverStart: %q", zkAll)
	}

	auditFile := filepath.Join(t.TempDir(), "audit.log")
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 2,
		Extra: []string{"audit.enable=true", "corral.audit.file=" + auditFile, "corral.extendedTypes=true"}})
	session(t, ctx, cl.Addrs()[0])
	var got []string
	waitFor(t, "Corral's audit lines", func() bool {
		got = clientLines(corralLines(t, auditFile))
		return len(got) >= len(want)
	})
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("line %d:\n zookeeper: %q\n corral:    %q", i, w, g)
		}
	}
	t.Logf("zookeeper:\n%s\ncorral:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	all := corralLines(t, auditFile)
	if len(all) == 0 || all[0] != zkAll[0] { // "INFO user=<OS user>\toperation=serverStart\tresult=success"
		t.Errorf("Corral's first audit line is %q, ZooKeeper's %q", all[0], zkAll[0])
	}
	cl.Close()
	all = corralLines(t, auditFile)
	if last := all[len(all)-1]; !strings.HasSuffix(last, "operation=serverStop\tresult=invoked") {
		t.Errorf("Corral's last audit line after stop is %q, want serverStop", last)
	}
}

// TestAuditPipelinedWrites: writes pipelined by one session over both shards (grouped writes,
// group.go, and cross-shard group transactions) are audited once each, with their outcome. After
// 50 top-level znodes (spread over the shards) are created one by one, eight goroutines create
// the same child of each: each child has one success line and seven failures.
func TestAuditPipelinedWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	auditFile := filepath.Join(t.TempDir(), "audit.log")
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 2,
		Extra: []string{"audit.enable=true", "corral.audit.file=" + auditFile}})
	// Grouped writes need the format level with group transactions (or a later one).
	want := fmt.Sprintf("format level=%d ", format.Supported)
	waitFor(t, "the newest format level", func() bool {
		text, err := cl.Server(0).MembersText(ctx)
		return err == nil && strings.Contains(text, want)
	})
	c := zktest.Connect(t, ctx, cl.Addrs()[0])
	const paths, writers = 50, 8
	for i := 0; i < paths; i++ {
		if _, err := c.Create(fmt.Sprintf("/g%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < paths; i++ {
				c.Create(fmt.Sprintf("/g%d/c", (i+w*7)%paths), nil, 0, zk.WorldACL(zk.PermAll))
			}
		}()
	}
	wg.Wait()
	count := map[string]int{}
	waitFor(t, "the audit lines", func() bool {
		clear(count)
		n := 0
		for _, l := range clientLines(corralLines(t, auditFile)) {
			f := strings.Split(l, "\t")
			count[f[len(f)-3]+" "+f[len(f)-1]]++
			n++
		}
		return n >= paths+paths*writers
	})
	for i := 0; i < paths; i++ {
		if n := count[fmt.Sprintf("znode=/g%d result=success", i)]; n != 1 {
			t.Errorf("/g%d: %d success lines, want 1", i, n)
		}
		z := fmt.Sprintf("znode=/g%d/c", i)
		if s, f := count[z+" result=success"], count[z+" result=failure"]; s != 1 || f != writers-1 {
			t.Errorf("%s: %d success and %d failure lines, want 1 and %d", z, s, f, writers-1)
		}
	}
	if len(count) != 3*paths {
		t.Errorf("lines for other znodes or results: %v", count)
	}
}

// sessionEnds ends two sessions that hold ephemerals under /eph: the first closes (go-zookeeper
// sends closeSession), the second (a raw connection with a 2 s timeout) drops its connection and
// expires. done reports whether /eph has no child left; each end is waited for, so that the
// lines of the two come in this order.
func sessionEnds(t *testing.T, ctx context.Context, addr string, done func() bool) {
	world := zk.WorldACL(zk.PermAll)
	c := zktest.Connect(t, ctx, addr)
	if _, err := c.Create("/eph", nil, 0, world); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/eph/a", "/eph/b", "/eph/c"} {
		if _, err := c.Create(p, nil, zk.FlagEphemeral, world); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Create("/eph/s-", nil, zk.FlagEphemeral|zk.FlagSequence, world); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete("/eph/c", -1); err != nil { // a delete line; not deleted again at close
		t.Fatal(err)
	}
	c.Close()
	waitFor(t, "the closed session's ephemerals to go", done)

	raw, err := difftest.DialRaw(ctx, addr, difftest.NewSessionRequest(2*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	r, err := raw.Call(ctx, wire.OpCreate, &wire.CreateRequest{Path: "/eph/x", ACL: wire.OpenACLUnsafe, Flags: wire.FlagEphemeral})
	if err != nil || r.Header.Err != wire.ErrOK {
		t.Fatalf("raw create: %v %v", err, r.Header.Err)
	}
	raw.Close() // no closeSession: the session expires
	waitFor(t, "the expired session's ephemeral to go", done)
}

// ephemeralsGone reports whether /eph has no children, read through a connection of its own.
func ephemeralsGone(t *testing.T, ctx context.Context, addr string) func() bool {
	c := zktest.Connect(t, ctx, addr)
	return func() bool {
		ch, _, err := c.Children("/eph")
		return err == nil && len(ch) == 0
	}
}

// numberSessions replaces session ids by S1, S2, ... in the order they first appear, so that
// lines of one session can be told from another's across servers.
func numberSessions(lines []string) []string {
	ids := map[string]string{}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = sessionRE.ReplaceAllStringFunc(l, func(s string) string {
			if _, ok := ids[s]; !ok {
				ids[s] = fmt.Sprintf("session=S%d", len(ids)+1)
			}
			return ids[s]
		})
	}
	return out
}

// deletionLines keeps the ephemeralZNodeDeletionOnSessionCloseOrExpire lines.
func deletionLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "operation=ephemeralZNodeDeletionOnSessionCloseOrExpire") {
			out = append(out, l)
		}
	}
	return out
}

// compareLines reports the lines that differ.
func compareLines(t *testing.T, who string, want, got []string) {
	t.Helper()
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("%s line %d:\n zookeeper: %q\n corral:    %q", who, i, w, g)
		}
	}
}

// TestAuditEphemeralsAtSessionEnd: a session's ephemerals removed when it closes or expires
// get one ephemeralZNodeDeletionOnSessionCloseOrExpire line each, with the session, the server's
// own user and no ip, as ZooKeeper 3.8 writes them, in its order. ZooKeeper writes them on
// every server (DataTree.deleteNodes); so does Corral: each of the three servers' logs has
// them, while the create and delete lines are only in the log of the server the client used.
func TestAuditEphemeralsAtSessionEnd(t *testing.T) {
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ens, err := apachezk.Start(ctx, apachezk.Options{TickTime: 500 * time.Millisecond,
		Config: map[string]string{"audit.enable": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ens.Close()
	sessionEnds(t, ctx, ens.Addr(0), ephemeralsGone(t, ctx, ens.Addr(0)))
	zkLog := filepath.Join(ens.ServerDir(0), "zookeeper.log")
	var want []string
	waitFor(t, "ZooKeeper's audit lines", func() bool {
		want = numberSessions(sessionLines(zkLines(t, zkLog)))
		return len(want) > 0 && strings.Contains(want[len(want)-1], "znode=/eph/x")
	})
	if n := len(deletionLines(want)); n != 5 {
		t.Fatalf("ZooKeeper wrote %d deletion lines, want 5:\n%s", n, strings.Join(want, "\n"))
	}

	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1,
		Extra: []string{"audit.enable=true"}})
	addr := cl.Addrs()[0]
	sessionEnds(t, ctx, addr, ephemeralsGone(t, ctx, addr))
	files := make([]string, 3)
	for i := range files {
		files[i] = filepath.Join(cl.DataDir(i), "zookeeper_audit.log")
	}
	got := make([][]string, 3)
	waitFor(t, "Corral's audit lines", func() bool {
		for i, f := range files {
			got[i] = numberSessions(sessionLines(corralLines(t, f)))
			if len(got[i]) == 0 || !strings.Contains(got[i][len(got[i])-1], "znode=/eph/x") {
				return false
			}
		}
		return true
	})
	compareLines(t, "server 1", want, got[0])
	for i := 1; i < 3; i++ {
		compareLines(t, fmt.Sprintf("server %d", i+1), deletionLines(want), got[i])
	}
	t.Logf("zookeeper:\n%s\ncorral (server 1):\n%s", strings.Join(want, "\n"), strings.Join(got[0], "\n"))
}
