package shardstest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestReplyZxidNeverDecreases: the zxid in the header of every reply a session gets never
// decreases — across a mixed sequence of reads and writes (single ops, multis over several
// shards, syncs, errors) on four shards, and across a reconnect to another server — and each
// reply's zxid is at least every zxid (czxid, mzxid, pzxid) in the stats the session has been
// shown so far.
//
// go-zookeeper keeps the last header zxid in an unexported field, so the session runs through
// the test's TCP proxy, which records every reply header before passing it on; since the calls
// are made one at a time, the last recorded reply (xid >= 0) when a call returns is its reply.
//
// How a broken implementation fails: shards' zxids come from separate clocks and their views
// are at different zxids (shard d's replica on the session's first server also lags 100 ms):
// a server that put the zxid of the view a read used into the header, without keeping the
// connection's maximum, would send a smaller zxid after a write or read on a shard that is
// ahead; one that started a moved session's headers from its own state rather than the
// session's lastZxidSeen would go back after the reconnect.
func TestReplyZxidNeverDecreases(t *testing.T) { bothModes(t, testReplyZxidNeverDecreases) }

func testReplyZxidNeverDecreases(t *testing.T, m mode) {
	ns := nonRoot()
	c := startEnsemble(t, m, lag{server: 0, shard: ns[2], d: 100 * time.Millisecond}) // shard d on the first server
	addrs := c.Addrs()
	names := namesOn(t, c, "zx", rootShard, ns[0], ns[1], ns[2])
	tops := make([]string, len(names))
	admin := connectZK(t, addrs[0])
	for i, n := range names {
		tops[i] = "/" + n
		mustCreate(t, admin, tops[i], "0")
	}
	p := newProxy(t, addrs[0])
	s, ev := connectZKEvents(t, p.Addr(), 10*time.Second)

	rng := rand.New(rand.NewPCG(7, 11))
	var (
		maxStat  int64 // the largest zxid in any stat shown to the session
		lastHdr  int64 // the zxid of the last reply
		created  = make([][]string, len(tops))
		counter  int
		reconnAt = 60
	)
	seeStat := func(st *zk.Stat) {
		if st != nil {
			maxStat = max(maxStat, st.Czxid, st.Mzxid, st.Pzxid)
		}
	}
	for step := 0; step < 120; step++ {
		if step == reconnAt {
			moveSession(t, p, ev, addrs[1])
			t.Logf("step %d: moved to server 2", step)
		}
		i := rng.IntN(len(tops))
		top := tops[i]
		var (
			what string
			err  error
		)
		switch op := rng.IntN(9); op {
		case 0: // create a child
			counter++
			path := fmt.Sprintf("%s/c%d", top, counter)
			what = "create " + path
			if _, err = s.Create(path, []byte("x"), 0, acl); err == nil {
				created[i] = append(created[i], path)
			}
		case 1: // setData
			what = "set " + top
			var st *zk.Stat
			st, err = s.Set(top, []byte(fmt.Sprint(step)), -1)
			seeStat(st)
		case 2: // getData
			what = "get " + top
			var st *zk.Stat
			_, st, err = s.Get(top)
			seeStat(st)
		case 3: // exists on a missing node (an error-free reply with no stat) and on the node
			what = "exists " + top
			var st *zk.Stat
			if _, _, err = s.Exists(top + "/missing"); err == nil {
				_, st, err = s.Exists(top)
				seeStat(st)
			}
		case 4: // getChildren2
			what = "children " + top
			var st *zk.Stat
			_, st, err = s.Children(top)
			seeStat(st)
		case 5: // delete a child created earlier
			if len(created[i]) == 0 {
				continue
			}
			path := created[i][0]
			created[i] = created[i][1:]
			what = "delete " + path
			err = s.Delete(path, -1)
		case 6: // a multi setting nodes on two or three shards
			var ops []any
			for k, t2 := range tops {
				if k == i || rng.IntN(2) == 0 {
					ops = append(ops, &zk.SetDataRequest{Path: t2, Data: []byte("m"), Version: -1})
				}
			}
			what = fmt.Sprintf("multi over %d shards", len(ops))
			var res []zk.MultiResponse
			res, err = s.Multi(ops...)
			for _, r := range res {
				seeStat(r.Stat)
			}
		case 7: // a failing request: NODEEXISTS (a write that fails) or NONODE (a read)
			what = "failing requests on " + top
			if _, err = s.Create(top, nil, 0, acl); errors.Is(err, zk.ErrNodeExists) {
				_, _, err = s.Get(top + "/missing")
				if errors.Is(err, zk.ErrNoNode) {
					err = nil
				}
			} else if err == nil {
				err = fmt.Errorf("create of existing %s succeeded", top)
			}
		case 8:
			what = "sync " + top
			_, err = s.Sync(top)
		}
		if err != nil {
			t.Fatalf("step %d: %s: %v", step, what, err)
		}
		h, ok := p.LastReply()
		if !ok {
			t.Fatalf("step %d: no reply recorded", step)
		}
		if h.Zxid < lastHdr {
			t.Fatalf("step %d: %s: reply zxid %#x below the previous reply's %#x", step, what, h.Zxid, lastHdr)
		}
		if h.Zxid < maxStat {
			t.Fatalf("step %d: %s: reply zxid %#x below a zxid the session was shown in a stat, %#x", step, what, h.Zxid, maxStat)
		}
		lastHdr = h.Zxid
	}
	// Every header of the session, in order, over both connections (watch notifications carry
	// no zxid; pings do).
	var prev replyHeader
	n := 0
	for _, h := range p.Headers() {
		if h.Xid == -1 {
			continue
		}
		if h.Zxid < prev.Zxid {
			t.Fatalf("reply header %+v after %+v: the zxid decreased", h, prev)
		}
		prev = h
		n++
	}
	t.Logf("%d reply headers, zxids never decreased; the last %#x", n, prev.Zxid)
}
