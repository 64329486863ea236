package shardstest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// TestCrossShardMultiAtomic: a multi whose ops are on several shards is one transaction.
//
//   - It commits everywhere with one zxid: the nodes it creates have the same czxid and mzxid,
//     the nodes it sets the same mzxid, and a top-level create in it gives "/" that pzxid.
//   - When an op fails, nothing is applied on any shard, and the results are ZooKeeper's: OK for
//     the ops before the failing one, its error, RUNTIMEINCONSISTENCY for the ops after it.
//   - An observer never sees it half applied. Separate reads of separate znodes are not a
//     snapshot, so the check is the cross-shard read rule itself: multis set the same counter on
//     nodes on four shards; once a session read value v on one node, every later read it makes
//     of any of them returns at least v.
//
// How a broken implementation fails: with per-shard commits that are not atomic, the failing
// multi would leave its earlier ops applied on their shards; with commits at different zxids the
// czxids differ. For the observer, the reader's server applies one shard 150 ms late (from the
// start): a read served from that lagging replica without first catching up to the
// session's zxid (or while the shard still holds the transaction prepared) returns the previous
// counter right after another node showed the new one.
func TestCrossShardMultiAtomic(t *testing.T) { bothModes(t, testCrossShardMultiAtomic) }

func testCrossShardMultiAtomic(t *testing.T, m mode) {
	ns := nonRoot()
	// Server 3's replica of b's shard lags (it matters for the observer at the end). The hook
	// holds back each apply, so a replica that has to apply more batches per second than 1/lag
	// falls further and further behind: the writer at the end paces its multis (one per 250 ms)
	// so that the lag stays at about 150 ms.
	c := startEnsemble(t, m, lag{server: 2, shard: ns[1], d: 150 * time.Millisecond})
	addrs := c.Addrs()
	names := namesOn(t, c, "mu", ns[0], ns[1], ns[2], rootShard, ns[1], ns[2])
	a, b, cc, r := "/"+names[0], "/"+names[1], "/"+names[2], "/"+names[3]
	top1, top2 := "/"+names[4], "/"+names[5] // top-level names created by multis
	zc := connectZK(t, addrs[0])
	rc := dialRaw(t, addrs[0], client.Options{})
	ctx := ctxT(t, 60*time.Second)
	for _, p := range []string{a, b, cc, r} {
		mustCreate(t, zc, p, "")
	}

	// --- a multi over three shards (plus the root shard) commits with one zxid ---
	res, err := zc.Multi(
		&zk.CreateRequest{Path: a + "/m", Data: []byte("1"), Acl: acl},
		&zk.CreateRequest{Path: b + "/m", Data: []byte("1"), Acl: acl},
		&zk.CreateRequest{Path: cc + "/m", Data: []byte("1"), Acl: acl},
		&zk.SetDataRequest{Path: r, Data: []byte("1"), Version: 0},
	)
	if err != nil || len(res) != 4 {
		t.Fatalf("multi over 4 shards: %+v %v", res, err)
	}
	for i, p := range []string{a + "/m", b + "/m", cc + "/m"} {
		if res[i].Error != nil || res[i].String != p {
			t.Fatalf("multi result %d: %+v, want created %s", i, res[i], p)
		}
	}
	if res[3].Error != nil || res[3].Stat == nil || res[3].Stat.Version != 1 {
		t.Fatalf("multi result 3 (setData %s): %+v", r, res[3])
	}
	z := res[3].Stat.Mzxid
	for srv := 0; srv < numServers; srv++ {
		zs := zc
		if srv != 0 {
			zs = connectZK(t, addrs[srv])
			syncAll(t, zs, a, b, cc, r)
		}
		for _, p := range []string{a + "/m", b + "/m", cc + "/m"} {
			_, st, err := zs.Get(p)
			if err != nil || st.Czxid != z || st.Mzxid != z {
				t.Fatalf("server %d: %s stat %+v %v, want czxid = mzxid = %#x (the setData's mzxid in the same multi)", srv+1, p, st, err, z)
			}
		}
		_, st, err := zs.Get(r)
		if err != nil || st.Mzxid != z {
			t.Fatalf("server %d: %s stat %+v %v, want mzxid %#x", srv+1, r, st, err, z)
		}
	}

	// --- a multi with a top-level create (the node's shard and the root shard) ---
	r0 := statOfRoot(t, zc)
	res, err = zc.Multi(
		&zk.CreateRequest{Path: top1, Data: []byte("t"), Acl: acl},
		&zk.CreateRequest{Path: a + "/n", Acl: acl},
		&zk.SetDataRequest{Path: cc + "/m", Data: []byte("2"), Version: 0},
	)
	if err != nil || len(res) != 3 || res[0].String != top1 || res[1].String != a+"/n" || res[2].Stat == nil {
		t.Fatalf("multi with a top-level create: %+v %v", res, err)
	}
	z = res[2].Stat.Mzxid
	for _, p := range []string{top1, a + "/n"} {
		_, st, err := zc.Get(p)
		if err != nil || st.Czxid != z {
			t.Fatalf("%s stat %+v %v, want czxid %#x", p, st, err, z)
		}
	}
	expectRoot(t, "after a multi creating "+top1, r0, statOfRoot(t, zc), 1, 1, z)

	// --- the last op fails: nothing anywhere, ZooKeeper's per-op results ---
	before := snapshotNodes(t, zc, a+"/m", b+"/m", cc+"/m", r)
	rootBefore := statOfRoot(t, zc)
	failing := []wire.MultiOp{
		{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: a + "/m", Data: []byte("x"), Version: 0}},
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: b + "/f", ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: top2, ACL: wire.OpenACLUnsafe}},
		{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: cc + "/m", Data: []byte("x"), Version: 99}},
	}
	rres, err := rc.Multi(ctx, failing...)
	checkFailedMulti(t, "multi whose last op is a BADVERSION", rres, err, wire.ErrBadVersion, 3, 4)
	// The same through go-zookeeper.
	gres, err := zc.Multi(
		&zk.SetDataRequest{Path: a + "/m", Data: []byte("x"), Version: 0},
		&zk.CreateRequest{Path: b + "/f", Acl: acl},
		&zk.CreateRequest{Path: top2, Acl: acl},
		&zk.SetDataRequest{Path: cc + "/m", Data: []byte("x"), Version: 99},
	)
	if !errors.Is(err, zk.ErrBadVersion) || len(gres) != 4 || gres[0].Error != nil || gres[1].Error != nil ||
		gres[2].Error != nil || !errors.Is(gres[3].Error, zk.ErrBadVersion) {
		t.Fatalf("go-zookeeper: failing multi = %+v %v", gres, err)
	}
	// --- an op in the middle fails ---
	rres, err = rc.Multi(ctx,
		wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: b + "/g", ACL: wire.OpenACLUnsafe}},
		wire.MultiOp{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: a + "/none", Version: -1}},
		wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: cc + "/m", Data: []byte("y"), Version: -1}},
		wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: top2, ACL: wire.OpenACLUnsafe}},
	)
	checkFailedMulti(t, "multi whose second op is a NONODE", rres, err, wire.ErrNoNode, 1, 4)
	// --- the parent side fails: a top-level create that exists, after ops on two shards ---
	rres, err = rc.Multi(ctx,
		wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: b + "/m", Data: []byte("z"), Version: -1}},
		wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: cc + "/h", ACL: wire.OpenACLUnsafe}},
		wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: top1, ACL: wire.OpenACLUnsafe}},
	)
	checkFailedMulti(t, "multi creating an existing top-level node", rres, err, wire.ErrNodeExists, 2, 3)
	for srv := 0; srv < numServers; srv++ {
		zs := connectZK(t, addrs[srv])
		syncAll(t, zs, a, b, cc, r, top2, "/")
		if after := snapshotNodes(t, zs, a+"/m", b+"/m", cc+"/m", r); after != before {
			t.Fatalf("server %d: failed multis changed nodes:\n%s\nbefore:\n%s", srv+1, after, before)
		}
		for _, p := range []string{b + "/f", b + "/g", cc + "/h", top2} {
			if ok, _, err := zs.Exists(p); err != nil || ok {
				t.Fatalf("server %d: a failed multi left %s behind (%v)", srv+1, p, err)
			}
		}
		expectRoot(t, fmt.Sprintf("server %d after failed multis", srv+1), rootBefore, statOfRoot(t, zs), 0, 0, 0)
	}

	// --- concurrent observers never see a multi half applied ---
	nodes := []string{a + "/k", b + "/k", cc + "/k", r + "/k"}
	for _, p := range nodes {
		mustCreate(t, zc, p, "0")
	}
	reader := connectZK(t, addrs[2])
	syncAll(t, reader, nodes...) // the reader's replica of b's shard lags
	var (
		written atomic.Int64
		stop    atomic.Bool
		wg      sync.WaitGroup
		werr    error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := 1; !stop.Load(); v++ {
			val := []byte(strconv.Itoa(v))
			ops := make([]any, len(nodes))
			for i, p := range nodes {
				ops[i] = &zk.SetDataRequest{Path: p, Data: val, Version: -1}
			}
			res, err := zc.Multi(ops...)
			if err != nil {
				werr = fmt.Errorf("multi %d: %v", v, err)
				return
			}
			for i := range res {
				if res[i].Stat == nil || res[i].Stat.Mzxid != res[0].Stat.Mzxid || res[i].Stat.Version != int32(v) {
					werr = fmt.Errorf("multi %d: results %+v: not one zxid, or not version %d", v, res, v)
					return
				}
			}
			written.Store(int64(v))
			time.Sleep(250 * time.Millisecond)
		}
	}()
	maxSeen, reads, waited, slow := 0, 0, 0, time.Duration(0)
	var failure string
	deadline := time.Now().Add(3 * time.Second)
	for round := 0; failure == "" && time.Now().Before(deadline); round++ {
		for k := range nodes {
			p := nodes[(round+k)%len(nodes)]
			start := time.Now()
			v, _, err := readInt(reader, p)
			took := time.Since(start)
			slow = max(slow, took)
			if took > 50*time.Millisecond {
				waited++
			}
			reads++
			if err != nil {
				failure = fmt.Sprintf("read %s (read %d, after %v): %v", p, reads, time.Since(start), err)
				break
			}
			if v < maxSeen {
				failure = fmt.Sprintf("read %s = %d after this session had read %d on another shard: a multi was seen half applied (read %d)", p, v, maxSeen, reads)
				break
			}
			if int64(v) > written.Load()+1 {
				failure = fmt.Sprintf("read %s = %d but only %d multis were issued", p, v, written.Load()+1)
				break
			}
			maxSeen = v
		}
	}
	stop.Store(true)
	wg.Wait()
	if failure != "" {
		t.Fatal(failure)
	}
	if werr != nil {
		t.Fatal(werr)
	}
	if written.Load() < 5 || reads < 20 {
		t.Fatalf("too little traffic to show anything: %d multis, %d reads", written.Load(), reads)
	}
	t.Logf("%d multis over 4 shards, %d reads on the lagging server (%d waited > 50 ms for the lagging replica, the longest %v), last value read %d",
		written.Load(), reads, waited, slow, maxSeen)
}

// snapshotNodes returns data and version of each path, as text.
func snapshotNodes(t *testing.T, zc *zk.Conn, paths ...string) string {
	t.Helper()
	var s string
	for _, p := range paths {
		d, st, err := zc.Get(p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		s += fmt.Sprintf("%s=%q v%d mzxid %#x\n", p, d, st.Version, st.Mzxid)
	}
	return s
}

// checkFailedMulti checks ZooKeeper's results of a failed multi of n ops whose op number
// failedAt failed with code: every result an error result, OK before failedAt, the code at it,
// RUNTIMEINCONSISTENCY after it.
func checkFailedMulti(t *testing.T, what string, res []wire.MultiResult, err error, code wire.Err, failedAt, n int) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("%s: error %v, want %v", what, err, code)
	}
	if len(res) != n {
		t.Fatalf("%s: %d results, want %d: %+v", what, len(res), n, res)
	}
	for i, r := range res {
		want := wire.ErrOK
		switch {
		case i == failedAt:
			want = code
		case i > failedAt:
			want = wire.ErrRuntimeInconsistency
		}
		if r.Op != wire.OpError || r.Err != want {
			t.Fatalf("%s: result %d is op %d err %v, want an error result with %v (all: %+v)", what, i, r.Op, r.Err, want, res)
		}
	}
}
