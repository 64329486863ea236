package clustertest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
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
