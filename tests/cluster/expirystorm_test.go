package clustertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcluster"
)

// TestNoExpiryStormAfterMetaFailover: when the server that decides expiry (the meta shard's
// leader) dies, live sessions on the other servers are not expired. (The new leader's grace —
// a full timeout from the moment it took over — is proven by session.TestNewLeaderGrantsFullTimeout;
// this end-to-end test shows activity reports reach the new leader in time.)
func TestNoExpiryStormAfterMetaFailover(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	meta := cl.Leader(cluster.MetaShardID)
	if meta < 0 {
		t.Fatal("no meta leader")
	}
	var others []string
	for i, a := range cl.Addrs() {
		if i != meta {
			others = append(others, a)
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	const n = 12
	conns := make([]*zk.Conn, n)
	for i := range conns {
		c, _, err := zk.Connect([]string{others[i%2]}, 1500*time.Millisecond, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for c.State() != zk.StateHasSession {
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := c.Create(fmt.Sprintf("/live%d", i), nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	cl.Stop(meta)
	// Several session timeouts later, every session and its ephemeral must still be there.
	time.Sleep(4 * time.Second)
	for i, c := range conns {
		if c.State() != zk.StateHasSession {
			t.Fatalf("session %d is %v after the meta leader failed", i, c.State())
		}
		if ok, _, err := c.Exists(fmt.Sprintf("/live%d", i)); err != nil || !ok {
			t.Fatalf("ephemeral %d: exists=%v err=%v", i, ok, err)
		}
	}
}
