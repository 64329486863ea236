package shardstest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// rootStat is the part of "/"'s stat a child create or delete may change.
type rootStat struct {
	Cversion, NumChildren int32
	Pzxid                 int64
	// Unchanged by child operations: version, mzxid, czxid.
	Version      int32
	Mzxid, Czxid int64
}

func statOfRoot(t *testing.T, zc *zk.Conn) rootStat {
	t.Helper()
	ok, st, err := zc.Exists("/")
	if err != nil || !ok {
		t.Fatalf("exists /: %v %v", ok, err)
	}
	return rootStat{st.Cversion, st.NumChildren, st.Pzxid, st.Version, st.Mzxid, st.Czxid}
}

// expectRoot compares "/"'s stat with what ZooKeeper would show after dChildren creates and
// deletes (cversion counts both; numChildren changes by dNum) with pzxid as given (0: unchanged).
func expectRoot(t *testing.T, what string, before, after rootStat, dCversion, dNum int32, pzxid int64) {
	t.Helper()
	want := before
	want.Cversion += dCversion
	want.NumChildren += dNum
	if pzxid != 0 {
		want.Pzxid = pzxid
	}
	if after != want {
		t.Fatalf("%s: stat of / is %+v, ZooKeeper would show %+v (before: %+v)", what, after, want, before)
	}
}

func children(t *testing.T, zc *zk.Conn, path string) []string {
	t.Helper()
	kids, _, err := zc.Children(path)
	if err != nil {
		t.Fatalf("children %s: %v", path, err)
	}
	return kids
}

// TestMountPointCreateDeleteLikeZooKeeper: a top-level znode that lives on another shard than "/"
// (a mount point: the node on its shard, a stub child entry on the root shard) is created and
// deleted exactly as ZooKeeper creates and deletes a child of "/": getChildren("/") lists it;
// "/"'s cversion goes up by one per create and per delete, numChildren follows, pzxid becomes the
// zxid of the create (the node's czxid) or of the delete; child watches on "/" and exists/data
// watches on the node fire; NODEEXISTS, NONODE, NOTEMPTY and BADVERSION are reported and change
// nothing; a top-level ephemeral disappears from "/" with its session; create2 returns the
// node's stat; a sequential top-level create is numbered by the count of "/"'s child creations
// that ZooKeeper stores as cversion, which mount point creates advance.
//
// How a broken implementation fails: if the root shard's stub were not updated in the same
// transaction (or not at all), "/" would not list the node or its stat would not move; if the
// two shards committed with different zxids, "/"'s pzxid would differ from the node's czxid; if
// a failed create still wrote the stub, cversion would move on an error; if only one shard's
// events were delivered, one of the two watches would not fire.
func TestMountPointCreateDeleteLikeZooKeeper(t *testing.T) {
	bothModes(t, testMountPointCreateDeleteLikeZooKeeper)
}

func testMountPointCreateDeleteLikeZooKeeper(t *testing.T, m mode) {
	c := startEnsemble(t, m)
	addrs := c.Addrs()
	ns := nonRoot()
	names := namesOn(t, c, "mp", ns[0], ns[1], rootShard)
	x, eph, onRoot := "/"+names[0], "/"+names[1], "/"+names[2]

	zc := connectZK(t, addrs[0])
	rc := dialRaw(t, addrs[0], client.Options{})
	w := connectZK(t, addrs[1]) // watcher on another server
	ctx := ctxT(t, 30*time.Second)

	// --- create ---
	r0 := statOfRoot(t, zc)
	_, _, rootCh, err := w.ChildrenW("/")
	must(t, err, "children watch on /")
	ok, _, xCh, err := w.ExistsW(x)
	must(t, err, "exists watch on %s", x)
	if ok {
		t.Fatalf("%s exists before the test", x)
	}
	if p, err := zc.Create(x, []byte("v0"), 0, acl); err != nil || p != x {
		t.Fatalf("create %s = %q, %v", x, p, err)
	}
	_, xst, err := zc.Get(x)
	must(t, err, "get %s", x)
	if xst.Czxid != xst.Mzxid || xst.Pzxid != xst.Czxid || xst.Version != 0 || xst.Cversion != 0 || xst.NumChildren != 0 {
		t.Fatalf("stat of new %s: %+v", x, xst)
	}
	if xst.Czxid <= r0.Pzxid {
		t.Fatalf("%s czxid %#x not above /'s previous pzxid %#x", x, xst.Czxid, r0.Pzxid)
	}
	r1 := statOfRoot(t, zc)
	expectRoot(t, "after create "+x, r0, r1, 1, 1, xst.Czxid)
	if kids := children(t, zc, "/"); !slices.Contains(kids, names[0]) {
		t.Fatalf("getChildren(/) = %v, missing %s", kids, names[0])
	}
	waitEvent(t, rootCh, zk.EventNodeChildrenChanged, "/", 10*time.Second)
	waitEvent(t, xCh, zk.EventNodeCreated, x, 10*time.Second)
	// The watcher's server lists it too (its own view of the root shard).
	if kids := children(t, w, "/"); !slices.Contains(kids, names[0]) {
		t.Fatalf("server 2: getChildren(/) = %v, missing %s", kids, names[0])
	}

	// --- errors change nothing ---
	if _, err := zc.Create(x, nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second create %s: %v, want NODEEXISTS", x, err)
	}
	expectRoot(t, "after NODEEXISTS", r1, statOfRoot(t, zc), 0, 0, 0)
	mustCreate(t, zc, x+"/child", "")
	expectRoot(t, "after creating a grandchild", r1, statOfRoot(t, zc), 0, 0, 0)
	if err := zc.Delete(x, -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete %s with a child: %v, want NOTEMPTY", x, err)
	}
	expectRoot(t, "after NOTEMPTY", r1, statOfRoot(t, zc), 0, 0, 0)
	must(t, zc.Delete(x+"/child", -1), "delete %s/child", x)
	if err := zc.Delete(x, 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete %s version 5: %v, want BADVERSION", x, err)
	}
	if _, err := zc.Set(x, []byte("v1"), 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("set %s version 5: %v, want BADVERSION", x, err)
	}
	expectRoot(t, "after BADVERSION", r1, statOfRoot(t, zc), 0, 0, 0)
	if st, err := zc.Set(x, []byte("v1"), 0); err != nil || st.Version != 1 {
		t.Fatalf("set %s version 0: %+v %v", x, st, err)
	}
	if err := zc.Delete(x, 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete %s at stale version 0: %v, want BADVERSION", x, err)
	}
	expectRoot(t, "after setData and BADVERSION", r1, statOfRoot(t, zc), 0, 0, 0)

	// --- delete ---
	_, _, rootCh, err = w.ChildrenW("/")
	must(t, err, "children watch on /")
	ok, _, xCh, err = w.ExistsW(x)
	if err != nil || !ok {
		t.Fatalf("server 2 does not see %s: %v %v", x, ok, err)
	}
	_, _, xDataCh, err := w.GetW(x)
	must(t, err, "data watch on %s", x)
	// Corral's client shows the delete's zxid: the header of a write's reply carries it.
	if err := rc.Delete(ctx, x, 1); err != nil {
		t.Fatalf("delete %s version 1: %v", x, err)
	}
	delZxid := rc.LastZxid()
	r2 := statOfRoot(t, zc)
	expectRoot(t, "after delete "+x, r1, r2, 1, -1, delZxid)
	if kids := children(t, zc, "/"); slices.Contains(kids, names[0]) {
		t.Fatalf("getChildren(/) = %v still lists %s", kids, names[0])
	}
	if ok, _, err := zc.Exists(x); err != nil || ok {
		t.Fatalf("exists %s after delete: %v %v", x, ok, err)
	}
	waitEvent(t, rootCh, zk.EventNodeChildrenChanged, "/", 10*time.Second)
	waitEvent(t, xCh, zk.EventNodeDeleted, x, 10*time.Second)
	waitEvent(t, xDataCh, zk.EventNodeDeleted, x, 10*time.Second)
	if err := zc.Delete(x, -1); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("delete missing %s: %v, want NONODE", x, err)
	}
	if _, err := zc.Set(x, nil, -1); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("set missing %s: %v, want NONODE", x, err)
	}
	expectRoot(t, "after NONODE", r2, statOfRoot(t, zc), 0, 0, 0)

	// --- create2 returns the stat ---
	p, st, err := rc.Create(ctx, x, []byte("abc"), wire.FlagPersistent, nil)
	if err != nil || p != x {
		t.Fatalf("create2 %s = %q %v", x, p, err)
	}
	if st.Czxid == 0 || st.Czxid != st.Mzxid || st.Pzxid != st.Czxid || st.Version != 0 || st.Cversion != 0 ||
		st.DataLength != 3 || st.NumChildren != 0 || st.EphemeralOwner != 0 || st.Czxid <= delZxid {
		t.Fatalf("create2 %s stat %+v", x, st)
	}
	if st.Czxid != rc.LastZxid() {
		t.Fatalf("create2 %s: czxid %#x but reply header zxid %#x", x, st.Czxid, rc.LastZxid())
	}
	_, gst, err := zc.Get(x)
	must(t, err, "get %s", x)
	if gst.Czxid != st.Czxid || gst.Mzxid != st.Mzxid || gst.Ctime != st.Ctime || gst.DataLength != st.DataLength {
		t.Fatalf("create2 returned %+v, getData shows %+v", st, gst)
	}
	r3 := statOfRoot(t, zc)
	expectRoot(t, "after create2 "+x, r2, r3, 1, 1, st.Czxid)

	// --- a top-level ephemeral goes with its session ---
	owner := connectZK(t, addrs[0])
	if _, err := owner.Create(eph, nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatalf("create ephemeral %s: %v", eph, err)
	}
	_, est, err := zc.Get(eph)
	if err != nil || est.EphemeralOwner != owner.SessionID() {
		t.Fatalf("ephemeral %s: %+v %v (owner %#x)", eph, est, err, owner.SessionID())
	}
	if _, err := owner.Create(eph+"/c", nil, 0, acl); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral %s: %v", eph, err)
	}
	r4 := statOfRoot(t, zc)
	expectRoot(t, "after ephemeral create", r3, r4, 1, 1, est.Czxid)
	_, _, rootCh, err = w.ChildrenW("/")
	must(t, err, "children watch on /")
	ok, _, ephCh, err := w.ExistsW(eph)
	if err != nil || !ok {
		t.Fatalf("server 2 does not see %s: %v %v", eph, ok, err)
	}
	owner.Close()
	// ZooKeeper removes the ephemerals before it answers closeSession, so a session on the same
	// server no longer sees the node nor its entry in "/".
	if ok, _, err := zc.Exists(eph); err != nil || ok {
		t.Fatalf("after closeSession: exists %s = %v %v", eph, ok, err)
	}
	if kids := children(t, zc, "/"); slices.Contains(kids, names[1]) {
		t.Fatalf("after closeSession: getChildren(/) = %v still lists %s", kids, names[1])
	}
	r5 := statOfRoot(t, zc)
	if r5.Cversion != r4.Cversion+1 || r5.NumChildren != r4.NumChildren-1 || r5.Pzxid <= r4.Pzxid {
		t.Fatalf("after the session closed: stat of / %+v, before %+v (want cversion+1, numChildren-1, a larger pzxid)", r5, r4)
	}
	waitEvent(t, ephCh, zk.EventNodeDeleted, eph, 10*time.Second)
	waitEvent(t, rootCh, zk.EventNodeChildrenChanged, "/", 10*time.Second)
	// The other server agrees once it caught up.
	must(t, func() error { _, err := w.Sync("/"); return err }(), "sync /")
	if kids := children(t, w, "/"); slices.Contains(kids, names[1]) {
		t.Fatalf("server 2 after the session closed: getChildren(/) = %v still lists %s", kids, names[1])
	}

	// --- sequential top-level creates are numbered by "/"'s child creations ---
	// ZooKeeper 3.8 stores in cversion the number of child creations, names a sequential child
	// after it (PrepRequestProcessor) and shows cversion = 2*stored - numChildren
	// (DataNode.copyStat), which is why the visible cversion moves by one per create and per
	// delete. So the suffix is (cversion + numChildren) / 2 of the stat read just before, and
	// only creates — mount point creates included — advance it.
	rs := statOfRoot(t, zc)
	creates := (rs.Cversion + rs.NumChildren) / 2
	seq1, err := zc.Create("/seq-", nil, zk.FlagSequence, acl)
	must(t, err, "sequential create")
	if want := fmt.Sprintf("/seq-%010d", creates); seq1 != want {
		t.Fatalf("sequential create = %s, want %s (stat of / was %+v)", seq1, want, rs)
	}
	assertShard(t, c, seq1, rootShard)
	_, sst, err := zc.Get(seq1)
	must(t, err, "get %s", seq1)
	expectRoot(t, "after a sequential create", rs, statOfRoot(t, zc), 1, 1, sst.Czxid)
	must(t, zc.Delete(x, -1), "delete %s", x) // a mount point delete: no new number
	mustCreate(t, zc, onRoot, "")             // a top-level create on the root shard: +1
	mustCreate(t, zc, x, "")                  // a mount point create: +1
	seq2, err := zc.Create("/seq-", nil, zk.FlagSequence|zk.FlagEphemeral, acl)
	must(t, err, "sequential create")
	if want := fmt.Sprintf("/seq-%010d", creates+3); seq2 != want {
		t.Fatalf("sequential create after a mount point delete, a create on the root shard and a mount point create = %s, want %s", seq2, want)
	}
	if kids := children(t, zc, "/"); !slices.Contains(kids, seq1[1:]) || !slices.Contains(kids, seq2[1:]) ||
		!slices.Contains(kids, names[0]) || !slices.Contains(kids, names[2]) || !slices.Contains(kids, "zookeeper") {
		t.Fatalf("getChildren(/) = %v", kids)
	}
	// numChildren of "/" counts every entry getChildren lists.
	kids, rst, err := zc.Children("/")
	must(t, err, "children /")
	if int(rst.NumChildren) != len(kids) {
		t.Fatalf("getChildren(/) lists %d names, numChildren is %d", len(kids), rst.NumChildren)
	}
}
