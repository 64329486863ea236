package clustertest

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcluster"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// dragonboat keeps a few process-wide goroutines (logger, pools) alive after NodeHost.Close.
		goleak.IgnoreTopFunction("github.com/lni/goutils/syncutil.(*Stopper).runWorker.func1"),
		goleak.IgnoreAnyFunction("github.com/cockroachdb/pebble.(*tableCacheShard).releaseLoop"),
		goleak.IgnoreAnyFunction("github.com/lni/dragonboat/v4/internal/transport.(*Transport).connectAndProcess"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreAnyFunction("time.Sleep"),
	)
}

func connect(t *testing.T, addrs []string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(15 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-deadline:
			t.Fatalf("no session with %v (state %v)", addrs, c.State())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return c, ev
}

func TestBasicOperations(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 2})
	c, _ := connect(t, cl.Addrs()[:1])
	acl := zk.WorldACL(zk.PermAll)
	if p, err := c.Create("/a", []byte("x"), 0, acl); err != nil || p != "/a" {
		t.Fatalf("create /a = %q, %v", p, err)
	}
	if _, err := c.Create("/a", nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second create: %v, want node exists", err)
	}
	data, st, err := c.Get("/a")
	if err != nil || string(data) != "x" || st.Version != 0 || st.Czxid != st.Mzxid || st.Czxid <= 0 {
		t.Fatalf("get /a = %q %+v %v", data, st, err)
	}
	st2, err := c.Set("/a", []byte("yy"), 0)
	if err != nil || st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.DataLength != 2 {
		t.Fatalf("set = %+v %v", st2, err)
	}
	if _, err := c.Set("/a", []byte("z"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale set: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Create("/a/s-", nil, zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
	}
	kids, st3, err := c.Children("/a")
	sort.Strings(kids)
	want := []string{"s-0000000000", "s-0000000001", "s-0000000002"}
	if err != nil || fmt.Sprint(kids) != fmt.Sprint(want) || st3.NumChildren != 3 || st3.Cversion != 3 {
		t.Fatalf("children = %v %+v %v", kids, st3, err)
	}
	if err := c.Delete("/a", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete non-empty: %v", err)
	}
	// Reads on another server see the write once they sync.
	c2, _ := connect(t, cl.Addrs()[2:])
	if _, err := c2.Sync("/a"); err != nil {
		t.Fatal(err)
	}
	if d, _, err := c2.Get("/a"); err != nil || !bytes.Equal(d, []byte("yy")) {
		t.Fatalf("get on server 3 = %q %v", d, err)
	}
	res, err := c.Multi(&zk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: acl},
		&zk.SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0})
	if err != nil || len(res) != 2 {
		t.Fatalf("multi = %+v %v", res, err)
	}
	_, err = c.Multi(&zk.CreateRequest{Path: "/m2", Acl: acl}, &zk.DeleteRequest{Path: "/nope", Version: -1})
	if !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("failing multi: %v", err)
	}
	if ok, _, _ := c.Exists("/m2"); ok {
		t.Fatal("failed multi left /m2 behind")
	}
}

// TestWatchBeforeReply: a data watch set on one server fires when another server's client
// changes the node, and the event arrives before the reply to a later read that shows the change.
func TestWatchBeforeReply(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	w, _ := connect(t, cl.Addrs()[1:2])
	c, _ := connect(t, cl.Addrs()[:1])
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/w", []byte("0"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sync("/w"); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := w.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/w", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/w" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	_, _, ch2, err := w.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/w/k", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	// Poll reads on the watcher's server; the first read that shows the child must come after the event.
	for {
		kids, _, err := w.Children("/w")
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == 1 {
			select {
			case ev := <-ch2:
				if ev.Type != zk.EventNodeChildrenChanged {
					t.Fatalf("event %+v", ev)
				}
			default:
				t.Fatal("a read showed the new child before its watch event arrived")
			}
			break
		}
	}
}

// TestEphemeralsDieWithSession: closing a session removes its ephemerals, and the removal is
// seen from another server.
func TestEphemeralsDieWithSession(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	owner, _ := connect(t, cl.Addrs()[:1])
	other, _ := connect(t, cl.Addrs()[1:2])
	acl := zk.WorldACL(zk.PermAll)
	if _, err := owner.Create("/e", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create("/e/child", nil, 0, acl); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral: %v", err)
	}
	if _, err := other.Sync("/e"); err != nil {
		t.Fatal(err)
	}
	ok, st, ch, err := other.ExistsW("/e")
	if err != nil || !ok || st.EphemeralOwner != owner.SessionID() {
		t.Fatalf("exists = %v %+v %v (owner %x)", ok, st, err, owner.SessionID())
	}
	owner.Close()
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ephemeral not deleted after close")
	}
}

// TestSessionExpiry: a session whose client stops talking expires after its timeout and its
// ephemerals are removed.
func TestSessionExpiry(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	watcher, _ := connect(t, cl.Addrs()[2:])
	c, _, err := zk.Connect(cl.Addrs()[:1], 1*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for c.State() != zk.StateHasSession {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Create("/x", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	watcher.Sync("/x")
	ok, _, ch, err := watcher.ExistsW("/x")
	if err != nil || !ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
	// Freeze the client: stop its pings by closing the socket path (the server sees silence).
	cl.Stop(0)
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("session did not expire")
	}
}

// TestRestartKeepsData: every acknowledged write survives a full-ensemble restart.
func TestRestartKeepsData(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 2})
	c, _ := connect(t, cl.Addrs())
	acl := zk.WorldACL(zk.PermAll)
	for i := 0; i < 50; i++ {
		if _, err := c.Create(fmt.Sprintf("/r%d", i), []byte{byte(i)}, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	_, before, _ := c.Get("/r49")
	c.Close()
	for i := 0; i < 3; i++ {
		cl.Stop(i)
	}
	doneRestart := make(chan int, 3)
	for i := 0; i < 3; i++ {
		go func() { cl.Restart(i); doneRestart <- i }()
	}
	for i := 0; i < 3; i++ {
		<-doneRestart
	}
	c2, _ := connect(t, cl.Addrs())
	for i := 0; i < 50; i++ {
		d, _, err := c2.Get(fmt.Sprintf("/r%d", i))
		if err != nil || len(d) != 1 || d[0] != byte(i) {
			t.Fatalf("after restart /r%d = %v %v", i, d, err)
		}
	}
	_, after, _ := c2.Get("/r49")
	if after.Mzxid != before.Mzxid {
		t.Fatalf("mzxid changed across restart: %x -> %x", before.Mzxid, after.Mzxid)
	}
	if _, err := c2.Create("/after", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, st, _ := c2.Get("/after")
	if st.Czxid <= before.Mzxid {
		t.Fatalf("zxid went backwards after restart: %x <= %x", st.Czxid, before.Mzxid)
	}
}

// TestLeaderFailover: when the server leading the data shard stops, the other two elect a new
// leader and keep serving writes; every acknowledged write is there afterwards.
func TestLeaderFailover(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	leader := cl.Leader(cluster.DataShardID(0))
	if leader < 0 {
		t.Fatal("no leader")
	}
	var others []string
	for i, a := range cl.Addrs() {
		if i != leader {
			others = append(others, a)
		}
	}
	c, _ := connect(t, others)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/f", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	cl.Stop(leader)
	start := time.Now()
	deadline := start.Add(15 * time.Second)
	acked := 0
	for acked < 20 {
		if _, err := c.Set("/f", []byte{byte(acked)}, -1); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("writes did not resume: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		acked++
	}
	t.Logf("20 writes acknowledged %v after stopping the leader", time.Since(start))
	if nl := cl.Leader(cluster.DataShardID(0)); nl < 0 || nl == leader {
		t.Fatalf("new leader %d (old %d)", nl, leader)
	}
	d, _, err := c.Get("/f")
	if err != nil || len(d) != 1 || d[0] != 19 {
		t.Fatalf("get = %v %v", d, err)
	}
}

// TestLaggingReplicaCatchesUpFromSnapshot: a server that was down while the log was compacted
// past its position receives a snapshot and serves every write made meanwhile.
func TestLaggingReplicaCatchesUpFromSnapshot(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1, Extra: []string{"corral.snapshotEntries=20"}})
	cl.Stop(2)
	c, _ := connect(t, cl.Addrs()[:2])
	acl := zk.WorldACL(zk.PermAll)
	for i := 0; i < 300; i++ {
		// Synchronous writes: one Raft entry each, so the log passes several snapshot points.
		// A loaded machine may close the connection (a lease not renewed in time with one
		// server down); go-zookeeper reconnects, and the create is sent again: NODEEXISTS then
		// means the first attempt landed.
		p := fmt.Sprintf("/s%03d", i)
		for attempt := 0; ; attempt++ {
			_, err := c.Create(p, []byte{byte(i)}, 0, acl)
			if err == nil || attempt > 0 && errors.Is(err, zk.ErrNodeExists) {
				break
			}
			if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) || attempt == 4 {
				t.Fatalf("create %s (attempt %d): %v", p, attempt+1, err)
			}
		}
	}
	cl.Restart(2)
	late, _ := connect(t, cl.Addrs()[2:])
	if _, err := late.Sync("/"); err != nil {
		t.Fatal(err)
	}
	kids, _, err := late.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 301 { // 300 + /zookeeper
		t.Fatalf("lagging replica shows %d children of /, want 301", len(kids))
	}
	if d, _, err := late.Get("/s299"); err != nil || len(d) != 1 || d[0] != byte(299%256) {
		t.Fatalf("get /s299 = %v %v", d, err)
	}
}

// TestLeadersSpread: with five shards (meta + 4 data) on three servers, all led by one server,
// the balancer spreads leadership so that no server leads two more shards than another.
func TestLeadersSpread(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4})
	ids := []uint64{cluster.MetaShardID}
	for i := 0; i < 4; i++ {
		ids = append(ids, cluster.DataShardID(i))
	}
	// Concentrate every leadership on server 1 first.
	if concentrateLeaders(cl, ids) < 4 {
		t.Log("could not concentrate leadership first; checking the spread anyway")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		count := make([]int, 3)
		complete := true
		for _, id := range ids {
			l := cl.Leader(id)
			if l < 0 {
				complete = false
				break
			}
			count[l]++
		}
		lo, hi := count[0], count[0]
		for _, n := range count {
			lo, hi = min(lo, n), max(hi, n)
		}
		if complete && hi-lo < 2 {
			t.Logf("leaders per server: %v", count)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leadership not balanced: %v", count)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
