package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/format"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/router"
)

// TestCloseSessionRemovesEphemeralsBeforeReply: once closeSession is answered, no server shows
// the session's ephemerals any more (ZooKeeper deletes them in the closeSession txn).
func TestCloseSessionRemovesEphemeralsBeforeReply(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	owner, _ := connect(t, cl.Addrs()[:1])
	other, _ := connect(t, cl.Addrs()[:1])
	acl := zk.WorldACL(zk.PermAll)
	if _, err := owner.Create("/e", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	owner.Close()
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("closeSession took %v (go-zookeeper gives up waiting after 1s)", d)
	}
	if ok, _, err := other.Exists("/e"); err != nil || ok {
		t.Fatalf("after closeSession: exists=%v err=%v", ok, err)
	}
}

// TestCloseOnWrittenShards: a client's close ends its session on the data shards it wrote to
// only (corral_session_close_shard_ops_total of its server grows by their number, where a close
// on every shard adds 4), and once the close is answered nobody sees any of its ephemerals:
// ephemerals under subtrees of two shards, some made by a multi across them; a top-level
// ephemeral, whose node lives on one shard and its stub on the root shard; a session that never
// wrote costs no data-shard op. (A subtree that moves after the session wrote to it makes the
// close reach every shard: TestOnlineMove closes a session whose ephemeral moved.)
func TestCloseOnWrittenShards(t *testing.T) {
	ids := []uint64{2, 3, 4, 5} // 4 data shards; the root shard is the first
	var names []string          // top-level names on distinct non-root shards
	used := map[uint64]bool{ids[0]: true}
	for i := 0; len(names) < 3 && i < 1000; i++ {
		n := fmt.Sprintf("w%d", i)
		if sh := router.TopLevelShard(n, ids); !used[sh] {
			used[sh] = true
			names = append(names, n)
		}
	}
	if len(names) < 3 {
		t.Fatal("no three top-level names on distinct non-root shards")
	}
	cl := startAtSupportedLevel(t, 3, 4)
	acl := zk.WorldACL(zk.PermAll)
	other, _ := connect(t, cl.Addrs()[1:2])
	for _, n := range names[:2] {
		if _, err := other.Create("/"+n, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	closeOps := func() int {
		t.Helper()
		v, err := cl.Metric(0, "corral_session_close_shard_ops_total")
		if err != nil {
			t.Fatal(err)
		}
		return int(v)
	}
	gone := func(paths ...string) {
		t.Helper()
		if _, err := other.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if ok, _, err := other.Exists(p); err != nil || ok {
				t.Fatalf("%s after its session's close: exists %v, %v", p, ok, err)
			}
		}
	}
	a, b, top := "/"+names[0], "/"+names[1], "/"+names[2]

	owner, _ := connect(t, cl.Addrs()[:1])
	if _, err := owner.Create(a+"/e1", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Multi(&zk.CreateRequest{Path: b + "/e2", Acl: acl, Flags: zk.FlagEphemeral},
		&zk.CreateRequest{Path: a + "/e3", Acl: acl, Flags: zk.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	before := closeOps()
	owner.Close()
	if d := closeOps() - before; d != 2 {
		t.Fatalf("a session that wrote to 2 shards was closed with %d data-shard ops", d)
	}
	gone(a+"/e1", b+"/e2", a+"/e3")

	owner, _ = connect(t, cl.Addrs()[:1])
	if _, err := owner.Create(top, nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	before = closeOps()
	owner.Close()
	if d := closeOps() - before; d != 2 {
		t.Fatalf("a session with a top-level ephemeral (its shard and the root's stub) was closed with %d data-shard ops", d)
	}
	gone(top)
	if kids, _, err := other.Children("/"); err != nil || slices.Contains(kids, names[2]) {
		t.Fatalf("children of / after the top-level ephemeral's session closed: %v, %v", kids, err)
	}

	reader, _ := connect(t, cl.Addrs()[:1])
	if _, _, err := reader.Get(a); err != nil {
		t.Fatal(err)
	}
	before = closeOps()
	reader.Close()
	if d := closeOps() - before; d != 0 {
		t.Fatalf("a session that never wrote was closed with %d data-shard ops", d)
	}
}

// startAtSupportedLevel starts an ensemble (with the admin endpoint) and waits until server 1's
// session table is at this binary's format level. Sessions get ownership epochs, which a
// one-round close needs, from level 2 on, and a close runs its shards' round with its meta close
// from level 7: a new ensemble starts at level 1 and moves up once every server announced its
// level.
func startAtSupportedLevel(t *testing.T, servers, shards int) *testcluster.Cluster {
	t.Helper()
	cl := testcluster.Start(t, testcluster.Options{Servers: servers, Shards: shards, Admin: true})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		text, err := cl.Server(0).MembersText(ctx)
		cancel()
		if err == nil && strings.Contains(text, fmt.Sprintf("format level=%d ", format.Supported)) {
			return cl
		}
		if time.Now().After(deadline) {
			t.Fatalf("server 1 did not reach format level %d: %q, %v", format.Supported, text, err)
		}
	}
}
