package inspect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/corralproc"
)

type quietLog struct{}

func (quietLog) Printf(string, ...interface{}) {}

// TestInspectStoppedEnsemble builds a tree through server 1 of a 3-server ensemble with the
// default shards (three top-level subtrees, null and empty data, three ephemerals of a session
// that stays open, eleven more open sessions; Raft snapshots every 10 entries), checks that inspecting server 1's running directory is refused, stops the
// servers gracefully and inspects server 1's data directory: znodes and data bytes per
// subtree, the sessions (timeout, owner, ephemerals) from the meta shard's snapshot and log, and a
// dump of one subtree that returns exactly its znodes and data. The command's exit codes and
// messages are checked on the same directories, and nothing under the directory changed.
func TestInspectStoppedEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-server ensemble")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A snapshot every 10 entries: the meta shard's table comes from a snapshot and the log.
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Config: map[string]string{"corral.snapshotEntries": "10"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	// Sessions on server 1 only: their reads see their writes, so server 1 has applied them.
	// c writes everything; the others stay open without writing.
	c := connect(t, e.Addr(0))
	for i := 0; i < 11; i++ {
		connect(t, e.Addr(0))
	}
	acl := zk.WorldACL(zk.PermAll)
	want := map[string][]byte{} // the /beta subtree, for the dump
	create := func(p string, data []byte, flags int32) {
		t.Helper()
		if _, err := c.Create(p, data, flags, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		if strings.HasPrefix(p, "/beta") {
			want[p] = data
		}
	}
	create("/alpha", []byte("a"), 0)
	for i := 0; i < 10; i++ {
		create(fmt.Sprintf("/alpha/n%d", i), bytes.Repeat([]byte("x"), 100), 0)
	}
	create("/beta", nil, 0)
	create("/beta/empty", []byte{}, 0)
	create("/beta/p", []byte("persistent"), 0)
	for i := 0; i < 3; i++ {
		create(fmt.Sprintf("/beta/e%d", i), []byte{byte(i)}, zk.FlagEphemeral)
	}
	create("/gamma", []byte("g"), 0)
	create("/gamma/deep", []byte("dd"), 0)
	create("/gamma/deep/er", []byte("eee"), 0)
	for _, p := range []string{"/alpha/n9", "/beta/e2", "/gamma/deep/er"} {
		if _, _, err := c.Get(p); err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
	}
	sessionID, timeout := c.SessionID(), 10*time.Second

	dir := filepath.Join(e.ServerDir(0), "data")
	o := Options{DataDir: dir}
	if _, err := Inspect(o); !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), "stop the server first") {
		t.Fatalf("inspecting a running server's directory: %v, want ErrRunning saying to stop the server first", err)
	}
	out, code := run(t, e.Binary(), "inspect", dir)
	if code != 1 || !strings.Contains(out, "stop the server first") {
		t.Fatalf("corral inspect on a running server: exit %d, output %q", code, out)
	}

	for i := 0; i < 3; i++ {
		if err := e.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, dir)

	rep, err := Inspect(Options{Config: e.ConfigPath(0)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.MyID != 1 || rep.DataDir != dir {
		t.Errorf("myid %d, data dir %s; want 1, %s", rep.MyID, rep.DataDir, dir)
	}
	if len(rep.Shards) != 4 || rep.Shards[0].Kind != "root" {
		t.Errorf("shards %+v, want 4 with the root shard first", rep.Shards)
	}
	got := map[string]Subtree{}
	for _, s := range rep.Subtrees() {
		got[s.Path] = s
	}
	for _, w := range []Subtree{{"/alpha", 11, 1001}, {"/beta", 6, 13}, {"/gamma", 3, 6}, {"/zookeeper", 3, 0}, {"/", 1, 0}} {
		if got[w.Path] != w {
			t.Errorf("subtree %s: %+v, want %+v", w.Path, got[w.Path], w)
		}
	}
	if len(got) != 5 {
		t.Errorf("subtrees %v, want 5", got)
	}
	if rep.Meta == nil {
		t.Fatalf("meta shard not read: %v", rep.MetaErr)
	}
	if rep.Meta.SnapshotIndex == 0 || rep.Meta.Applied <= rep.Meta.SnapshotIndex {
		t.Errorf("meta shard: snapshot at %d, applied %d; want a snapshot and entries after it", rep.Meta.SnapshotIndex, rep.Meta.Applied)
	}
	if !rep.SessionsFromMeta || len(rep.Sessions) != 12 {
		t.Fatalf("sessions %+v (from meta %v), want the test's 12", rep.Sessions, rep.SessionsFromMeta)
	}
	for _, s := range rep.Sessions {
		eph := 0
		if s.ID == sessionID {
			eph = 3
		}
		if s.Ephemerals != eph || s.Closing || s.Owner != 1 || s.Timeout != int32(timeout/time.Millisecond) {
			t.Errorf("session %+v, want %d ephemerals, owner 1, timeout %s, open", s, eph, timeout)
		}
	}
	for _, s := range rep.Shards {
		if s.Znodes > 0 && (s.Applied == 0 || s.LastZxid == 0) {
			t.Errorf("shard %d: applied %d, last zxid %x", s.ID, s.Applied, s.LastZxid)
		}
	}

	var buf bytes.Buffer
	n, err := Dump(o, "/beta", &buf)
	if err != nil || n != len(want) {
		t.Fatalf("dump /beta: %d znodes, %v; want %d", n, err, len(want))
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var d DumpNode
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("dump line %q: %v", sc.Text(), err)
		}
		w, ok := want[d.Path]
		if !ok || seen[d.Path] || !bytes.Equal(d.Data, w) || (d.Data == nil) != (w == nil) {
			t.Errorf("dumped %s with data %q (null %v): want %q (null %v), once", d.Path, d.Data, d.Data == nil, w, w == nil)
		}
		seen[d.Path] = true
		if wantKind := map[bool]string{true: "ephemeral", false: "persistent"}[strings.HasPrefix(d.Path, "/beta/e") && d.Path != "/beta/empty"]; d.Kind != wantKind {
			t.Errorf("%s: kind %s, want %s", d.Path, d.Kind, wantKind)
		}
		if d.Kind == "ephemeral" && d.Stat.EphemeralOwner != fmt.Sprintf("0x%x", uint64(sessionID)) {
			t.Errorf("%s: ephemeralOwner %s, want 0x%x", d.Path, d.Stat.EphemeralOwner, sessionID)
		}
		if len(d.ACL) != 1 || d.ACL[0].Scheme != "world" || d.ACL[0].Perms != zk.PermAll {
			t.Errorf("%s: ACL %+v", d.Path, d.ACL)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("dumped %d znodes, want %d", len(seen), len(want))
	}

	out, code = run(t, e.Binary(), "inspect", dir, "--sessions")
	if code != 0 || !strings.Contains(out, "/alpha") || !strings.Contains(out, fmt.Sprintf("0x%016x", uint64(sessionID))) {
		t.Errorf("corral inspect: exit %d, output:\n%s", code, out)
	}
	t.Logf("corral inspect %s --sessions:\n%s", dir, out)
	out, code = run(t, e.Binary(), "inspect", dir, "--dump", "/gamma")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("corral inspect --dump /gamma: exit %d, output:\n%s", code, out)
	}
	if _, code = run(t, e.Binary(), "inspect"); code != 2 {
		t.Errorf("corral inspect without a directory: exit %d, want 2", code)
	}
	if after := tree(t, dir); after != before {
		t.Errorf("the data directory changed:\nbefore\n%s\nafter\n%s", before, after)
	}

	missing := filepath.Join(e.Dir(), "no-such-dir")
	if _, err := Inspect(Options{DataDir: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("inspecting a missing directory: %v, want an error naming it", err)
	}
	if _, err := Inspect(Options{DataDir: e.ServerDir(0)}); !errors.Is(err, ErrNotDataDir) {
		t.Errorf("inspecting a directory without Corral data: %v, want ErrNotDataDir", err)
	}
	out, code = run(t, e.Binary(), "inspect", missing)
	if code != 1 || !strings.Contains(out, missing) {
		t.Errorf("corral inspect on a missing directory: exit %d, output %q", code, out)
	}
}

// connect opens a session with addr, closed at the end of the test.
func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLog{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	go func() {
		for range events { // drained until c.Close closes the channel
		}
	}()
	return c
}

// run runs the corral binary and returns its combined output and exit code.
func run(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// tree lists every file under dir with its size and modification time.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
