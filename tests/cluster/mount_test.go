package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/internal/zktest"
	"github.com/corral/corral/router"
)

// TestExplicitMount: corral.mount.<path>=<shard> puts a subtree below a top-level znode on a
// chosen shard. Its root is a mount point like a top-level znode: the node lives on the chosen
// shard, its parent on another, and creating or deleting it keeps the parent's children, stat and
// child watch exactly as ZooKeeper would.
func TestExplicitMount(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	var onRoot, offRoot string
	for _, name := range []string{"app", "web", "db", "q", "r", "s", "t"} {
		if router.TopLevelShard(name, ids) == ids[0] {
			onRoot = "/" + name
		} else {
			offRoot = "/" + name
		}
	}
	for _, top := range []string{onRoot, offRoot} {
		t.Run(top, func(t *testing.T) { testExplicitMount(t, top) })
	}
}

func testExplicitMount(t *testing.T, top string) {
	ids := []uint64{2, 3, 4, 5}
	app := router.TopLevelShard(top[1:], ids)
	target := uint64(0)
	for _, id := range ids {
		if id != app && id != ids[0] {
			target = id
			break
		}
	}
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4,
		Extra: []string{fmt.Sprintf("corral.mount.%s/data=%d", top, target)}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := zktest.Connect(t, ctx, cl.Addrs()[0])
	w := zktest.Connect(t, ctx, cl.Addrs()[1])
	acl := zk.WorldACL(zk.PermAll)
	r := cl.Server(0).Router()
	if got := r.Lookup(top + "/data/x").ID; got != target {
		t.Fatalf("/app/data/x on shard %d, want the mounted %d", got, target)
	}
	if _, err := c.Create(top+"/data", nil, 0, acl); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("mount point without its parent: %v, want NONODE", err)
	}
	if _, err := c.Create(top, []byte("a"), 0, acl); err != nil {
		t.Fatal(err)
	}
	_, before, err := c.Get(top)
	if err != nil {
		t.Fatal(err)
	}
	// w is another session on another server: it sees /app once its server caught up.
	if _, err := w.Sync(top); err != nil {
		t.Fatal(err)
	}
	_, _, kids, err := w.ChildrenW(top)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(top+"/data", []byte("d"), 0, acl); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-kids:
		if e.Type != zk.EventNodeChildrenChanged || e.Path != top {
			t.Fatalf("child watch on /app: %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no NodeChildrenChanged on /app after creating the mount point")
	}
	if _, err := c.Create(top+"/data/x", []byte("x"), 0, acl); err != nil {
		t.Fatal(err)
	}
	_, mst, err := c.Get(top + "/data")
	if err != nil {
		t.Fatal(err)
	}
	ch, after, err := c.Children(top)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ch, []string{"data"}) || after.NumChildren != 1 || after.Cversion != before.Cversion+1 || after.Pzxid != mst.Czxid {
		t.Fatalf("/app after creating the mount point: children %v stat %+v (before %+v, mount czxid %#x)", ch, after, before, mst.Czxid)
	}
	if mst.NumChildren != 1 {
		t.Fatalf("/app/data stat %+v, want one child", mst)
	}
	// The data lives on the mounted shard, not on /app's.
	if _, ok := r.Shard(target).View().Get(top + "/data/x"); !ok {
		t.Fatalf("/app/data/x is not on shard %d", target)
	}
	if _, ok := r.Shard(app).View().Get(top + "/data/x"); ok {
		t.Fatalf("/app/data/x is also on /app's shard %d", app)
	}
	if err := c.Delete(top, -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete /app with a mounted child: %v, want NOTEMPTY", err)
	}
	if err := c.Delete(top+"/data", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete a mount point with a child: %v, want NOTEMPTY", err)
	}
	if err := c.Delete(top+"/data/x", -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(top+"/data", 7); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete with a wrong version: %v, want BADVERSION", err)
	}
	if err := c.Delete(top+"/data", -1); err != nil {
		t.Fatal(err)
	}
	ch, gone, err := c.Children(top)
	if err != nil || len(ch) != 0 || gone.NumChildren != 0 || gone.Cversion != after.Cversion+1 {
		t.Fatalf("/app after deleting the mount point: %v %+v %v", ch, gone, err)
	}
	if err := c.Delete(top, -1); err != nil {
		t.Fatal(err)
	}
	text := cl.Server(0).PlacementText()
	if want := fmt.Sprintf("mount=%s/data shard=%d\n", top, target); !strings.Contains(text, want) {
		t.Errorf("placement page lacks %q:\n%s", want, text)
	}
}
