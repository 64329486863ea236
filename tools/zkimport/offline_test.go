package zkimport

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/tools/zkdata"
)

// TestOfflineImportFromDataDir builds a tree in Apache ZooKeeper 3.8 (the live test's, plus a
// container and a TTL node, with snapCount small so both snapshots and logs matter), stops
// ZooKeeper, imports its data directory into Corral and compares every znode with what the
// directory holds (tools/zkdata, itself checked against ZooKeeper's own answers): data, ACL and
// stat. The next sequential child gets the name ZooKeeper would give it.
func TestOfflineImportFromDataDir(t *testing.T) {
	ctx, src, dst := startBoth(t,
		apachezk.Options{Config: map[string]string{"snapCount": "50"},
			JVMFlags: []string{apachezk.FlagExtendedTypes, apachezk.FlagNoContainerGC}},
		corralproc.Options{Config: map[string]string{"zookeeper.extendedTypesEnabled": "true"}})

	zc := dial(t, src.Addrs())
	must(t, zc.AddAuth("digest", []byte("user:pass")))
	build(t, zc)
	_, err := zc.CreateContainer("/cont", []byte("c"), zk.FlagContainer, zk.WorldACL(zk.PermAll))
	must(t, err)
	mustCreate(t, zc, "/cont/child", nil, 0, zk.WorldACL(zk.PermAll))
	_, err = zc.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Hour)
	must(t, err)
	zc.Close()
	// An ephemeral of a session still open when ZooKeeper stops: it is in the data directory,
	// and is not copied.
	eph := dial(t, src.Addrs())
	defer eph.Close()
	mustCreate(t, eph, "/app/eph", []byte("e"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if err := src.Stop(0); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(src.ServerDir(0), "data")
	tree, err := zkdata.Open(dataDir, "")
	if err != nil {
		t.Fatal(err)
	}

	sum, err := Run(ctx, Options{DataDir: dataDir, To: dst.Addrs(), Admin: dst.AdminAddr(0)})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	t.Logf("import from %s (snapshot %s, %d log files): %s", dataDir, tree.Report().Snapshot.Path,
		len(tree.Report().Logs), sum)

	cc := dial(t, dst.Addrs())
	defer cc.Close()
	must(t, cc.AddAuth("digest", []byte("user:pass")))
	ephemerals := map[string]int{} // parent -> ephemeral children in the data directory
	must(t, tree.Walk(func(n *zkdata.Node) error {
		if n.Kind == zkdata.Ephemeral {
			ephemerals[filepath.Dir(n.Path)]++
		}
		return nil
	}))
	if ephemerals["/app"] != 1 {
		t.Fatalf("the data directory holds %d ephemerals under /app, want the one made", ephemerals["/app"])
	}
	compared := 0
	err = tree.Walk(func(n *zkdata.Node) error {
		if n.Path == "/" || n.Path == "/zookeeper" || filepath.Dir(n.Path) == "/zookeeper" || n.Kind == zkdata.Ephemeral {
			return nil
		}
		compared++
		data, st, err := cc.Get(n.Path)
		if err != nil {
			t.Fatalf("%s in the target: %v", n.Path, err)
		}
		if !bytes.Equal(data, n.Data) || (data == nil) != (n.Data == nil) {
			t.Errorf("%s: data %q, want %q", n.Path, data, n.Data)
		}
		acl, _, err := cc.GetACL(n.Path)
		must(t, err)
		if !sameACL(acl, fromWire(n).ACL) {
			t.Errorf("%s: ACL %v, want %v", n.Path, acl, n.ACL)
		}
		eph := ephemerals[n.Path]
		want := fromWire(n).Stat
		want.NumChildren -= int32(eph)
		want.Cversion += int32(eph)
		if *st != want {
			t.Errorf("%s: stat\n %+v, want\n %+v", n.Path, *st, want)
		}
		return nil
	})
	must(t, err)
	if compared < 2000 || sum.Created != int64(compared) {
		t.Fatalf("compared %d znodes, the import created %d", compared, sum.Created)
	}
	b, err := cc.Create("/queue/item-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	must(t, err)
	if b != "/queue/item-0000000005" {
		t.Fatalf("next sequential child %s, want /queue/item-0000000005", b)
	}
}
