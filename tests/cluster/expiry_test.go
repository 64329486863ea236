package clustertest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
)

// TestContainersAndTTLNodesExpireThroughRaft: an emptied container and an expired TTL node are
// deleted by the shard leader's proposal, and every server sees the deletion (with its event).
func TestContainersAndTTLNodesExpireThroughRaft(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1, Extra: []string{
		"zookeeper.extendedTypesEnabled=true", "znode.container.checkIntervalMs=100"}})
	c, _ := connect(t, cl.Addrs()[:1])
	w, _ := connect(t, cl.Addrs()[2:])
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.CreateContainer("/box", nil, 4, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/box/item", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, acl, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// A never-used container is not collected; one that had a child is, once empty.
	if _, err := c.CreateContainer("/unused", nil, 4, acl); err != nil {
		t.Fatal(err)
	}
	w.Sync("/")
	_, _, boxCh, err := w.ExistsW("/box")
	if err != nil {
		t.Fatal(err)
	}
	_, _, ttlCh, err := w.ExistsW("/ttl")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/box/item", -1); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan zk.Event{"/box": boxCh, "/ttl": ttlCh} {
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDeleted || ev.Path != name {
				t.Fatalf("event %+v", ev)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s was not deleted", name)
		}
	}
	if ok, _, err := w.Exists("/unused"); err != nil || !ok {
		t.Fatalf("never-used container: exists=%v err=%v", ok, err)
	}
}
