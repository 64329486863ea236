package clustertest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/router"
)

// adminStatus calls an admin endpoint and returns the status code and body.
func adminStatus(t *testing.T, method, addr, pathQuery string) (int, string) {
	t.Helper()
	return adminAs(t, method, addr, pathQuery, "")
}

// servesOn waits until server i routes path to shardID and runs an opened replica of that shard
// with a known leader.
func servesOn(t *testing.T, cl *testcluster.Cluster, i int, path string, shardID uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := cl.Server(i)
		sh := s.Router().Lookup(path)
		_, _, ok, err := s.NodeHost().GetLeaderID(shardID)
		if sh != nil && sh.ID == shardID && sh.View() != nil && err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d: %s on shard %v (want %d), leader known %v (%v)", i+1, path, sh.ID, shardID, ok, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAddShardOnline: a data shard added to a running ensemble (POST /move?shard=new: add, then
// move a subtree onto it) while clients write and read the subtree. Checked: no acknowledged
// write is lost and no write fails, a reader never sees a value go back, watches set before
// fire after, every running server routes the subtree to the new shard, placement of other
// names is unchanged, a retried add with a stale expected count adds nothing, the observer gets
// a non-voting replica; a server that was down during the add starts the new shard (with the
// recorded initial members) and serves the subtree; a server added to the ensemble later gets
// the added shards as a voter; a restarted server runs them too; killing the new shard's leader
// elects another and writes resume.
func TestAddShardOnline(t *testing.T) {
	const shards = 2
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Observers: 1, Shards: shards, Admin: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	acl := zk.WorldACL(zk.PermAll)
	initial := []uint64{2, 3}
	const newID = 4 // DataShardID(2): the next id after the first start's shards

	// Server 3 is down while the shard is added.
	cl.Stop(2)

	top := "/addshard"
	c := zktest.Connect(t, ctx, cl.Addrs()[0])
	w := zktest.Connect(t, ctx, cl.Addrs()[1])
	const keys = 6
	for _, p := range []string{top, top + "/x"} {
		if _, err := c.Create(p, []byte("v0"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < keys; i++ {
		if _, err := c.Create(fmt.Sprintf("%s/k%d", top, i), []byte("0"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	_, xBefore, err := c.Get(top + "/x")
	if err != nil {
		t.Fatal(err)
	}
	_, _, dataW, err := w.GetW(top + "/x")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childW, err := w.ChildrenW(top)
	if err != nil {
		t.Fatal(err)
	}

	// Load: two writers (servers 1 and 2) and a reader (server 2) on the subtree.
	load := startLoad(t, ctx, top, keys, [2]string{cl.Addrs()[0], cl.Addrs()[1]}, cl.Addrs()[1])

	time.Sleep(300 * time.Millisecond) // let the load run across the add and the move
	code, body := adminStatus(t, http.MethodPost, cl.AdminAddr(0), "/move?path="+top+"&shard=new&expect=2")
	if code != http.StatusOK {
		t.Fatalf("POST /move?shard=new: %d %s", code, body)
	}
	t.Logf("%s", body)
	if !strings.HasPrefix(body, fmt.Sprintf("added shard=%d tag=3 voters=1@", newID)) || !strings.Contains(body, "nonvoting=4@") ||
		!strings.Contains(body, fmt.Sprintf("to shard %d", newID)) {
		t.Fatalf("unexpected answer: %s", body)
	}
	// The same request again (a retry): the expected count is stale, nothing is added.
	if code, body := adminStatus(t, http.MethodPost, cl.AdminAddr(1), "/shards/add?expect=2"); code != http.StatusConflict {
		t.Fatalf("retried add: %d %s, want 409", code, body)
	}
	for _, i := range []int{0, 1, 3} {
		servesOn(t, cl, i, top+"/k0", newID)
	}
	time.Sleep(300 * time.Millisecond)
	load.finish(t)
	var rerouted int64
	for _, i := range []int{0, 1} {
		rerouted += cl.Server(i).ReroutedWrites()
	}
	t.Logf("%d reads, %d writes sent back by the move and proposed again", load.reads.Load(), rerouted)
	if load.reads.Load() == 0 || rerouted == 0 {
		t.Fatal("the load did not run into the move: the test exercised nothing")
	}

	// Watches set before the move fire for changes on the new shard; stats are kept.
	if _, err := c.Set(top+"/x", []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(top+"/new-child", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	expectWatchEvents(t, "a watch set before the move did not fire for a change on the new shard", dataW, childW)
	if _, xAfter, _ := w.Get(top + "/x"); xAfter.Czxid != xBefore.Czxid || xAfter.Version != xBefore.Version+1 {
		t.Fatalf("stat of %s/x: %+v -> %+v", top, xBefore, xAfter)
	}

	checkAcked := func(i int) { load.checkAcked(t, ctx, cl.Addrs()[i]) }
	for _, i := range []int{0, 1, 3} {
		checkAcked(i)
	}
	// The new shard's membership is the record's: voters 1-3, the observer non-voting.
	m, err := cl.Server(0).NodeHost().SyncGetShardMembership(ctx, newID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(m.NonVotings) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		m, _ = cl.Server(0).NodeHost().SyncGetShardMembership(ctx, newID)
	}
	if len(m.Nodes) != 3 || m.NonVotings[4] == "" {
		t.Fatalf("membership of the new shard: voters %v, non-voting %v", m.Nodes, m.NonVotings)
	}

	// Placement of names that were never moved is unchanged: still hashed over the first
	// start's shards, on every server.
	for _, name := range []string{"a", "b", "c", "kafka", "web", "q"} {
		want := router.TopLevelShard(name, initial)
		for _, i := range []int{0, 1, 3} {
			if got := cl.Server(i).Router().Lookup("/" + name).ID; got != want {
				t.Fatalf("server %d: /%s on shard %d after the add, hashed to %d", i+1, name, got, want)
			}
		}
	}

	// The server that was down during the add: it learns the record from the root shard's log,
	// starts the shard with the recorded members and serves the subtree.
	cl.Restart(2)
	servesOn(t, cl, 2, top+"/k0", newID)
	checkAcked(2)

	// Add one more shard through /shards/add and mount a fresh path on it.
	code, body = adminStatus(t, http.MethodPost, cl.AdminAddr(2), "/shards/add?expect=3")
	if code != http.StatusOK || !strings.HasPrefix(body, fmt.Sprintf("added shard=%d tag=4 ", newID+1)) {
		t.Fatalf("POST /shards/add: %d %s", code, body)
	}
	if code, body := adminStatus(t, http.MethodPost, cl.AdminAddr(1), fmt.Sprintf("/move?path=/fresh&shard=%d", newID+1)); code != http.StatusOK {
		t.Fatalf("mount on the second added shard: %d %s", code, body)
	}
	if _, err := c.Create("/fresh", []byte("f"), 0, acl); err != nil {
		t.Fatal(err)
	}
	list := admin(t, http.MethodGet, cl.AdminAddr(3), "/shards/list")
	if strings.Count(list, "origin=added running=true") != 2 || strings.Count(list, "origin=initial running=true") != 2 {
		t.Fatalf("/shards/list:\n%s", list)
	}

	// A server added to the ensemble afterwards (corral members add) gets a replica of the added
	// shards too, as a voter: it joins them like every other shard.
	nv := cl.NewServer(false)
	added := admin(t, http.MethodPost, cl.AdminAddr(1), fmt.Sprintf("/members/add?id=%d&raft=%s", nv+1, cl.RaftAddr(nv)))
	if strings.Count(added, "result=added") != shards+3 {
		t.Fatalf("members add answered for %d shards, want %d:\n%s", strings.Count(added, "result=added"), shards+3, added)
	}
	cl.Restart(nv)
	servesOn(t, cl, nv, top+"/k0", newID)
	checkAcked(nv)
	if m, err := cl.Server(nv).NodeHost().SyncGetShardMembership(ctx, newID+1); err != nil || m.Nodes[uint64(nv+1)] == "" {
		t.Fatalf("the new server is not a voter of shard %d: %+v %v", newID+1, m, err)
	}

	// A restarted server runs the added shards (from its own persisted root shard) and serves.
	cl.Stop(0)
	cl.Restart(0)
	servesOn(t, cl, 0, top+"/k0", newID)
	servesOn(t, cl, 0, "/fresh", newID+1)
	checkAcked(0)

	// Kill the new shard's leader: another server is elected and writes resume.
	leader := cl.Leader(newID)
	if leader < 0 || leader == 3 {
		t.Fatalf("shard %d led by index %d", newID, leader)
	}
	cl.Stop(leader)
	other := (leader + 1) % 3
	oc := zktest.Connect(t, ctx, cl.Addrs()[other])
	start := time.Now()
	if _, err := oc.Set(top+"/k0", []byte("after-failover"), -1); err != nil {
		t.Fatalf("write after the leader of shard %d died: %v", newID, err)
	}
	t.Logf("write on shard %d %s after its leader (server %d) stopped", newID, time.Since(start).Round(time.Millisecond), leader+1)
	if l := cl.Leader(newID); l < 0 || l == leader {
		t.Fatalf("shard %d has no new leader (%d)", newID, l)
	}
	cl.Restart(leader)
	servesOn(t, cl, leader, top+"/k0", newID)
}
