package shardstest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestSetWatchesAcrossShardsNoMissedEvent: a session holding watches on nodes of several shards
// loses its server; the watched nodes change before and while it is away; when it reconnects to
// another server (go-zookeeper re-registers its watches with setWatches and its lastZxidSeen as
// relZxid) it receives an event for every change it had not been told about. Spurious events
// are allowed (each go-zookeeper watch channel takes one event; only its type is checked).
//
// The hard case is built on purpose. The session's server applies shards b and c 1.5 s late
// (from the start; its syncs before it sets the watches wait for the setup's writes there).
// Another session changes /b/w, creates /c/new and /b/kid; then the watching session writes on
// shard a, which its server applies at once, so its lastZxidSeen is the zxid of that write —
// above the zxids of the changes on b and c (the test logs whether it was), which its server
// had not applied, so it never sent their events. The server is stopped (closed in process,
// SIGKILL as a process) before it applies them. While the session is away, /a/w changes and /a
// gets a child.
// In ZooKeeper the session could not have seen the later zxid without first getting the events
// of the earlier changes.
//
// How a broken implementation fails: a server answering setWatches by ZooKeeper's rule alone
// (fire when the node's mzxid/pzxid is above relZxid) compares relZxid, a zxid of shard a's
// clock, with zxids of shards b and c: the changes on b and c have smaller zxids, and the
// events of the data watch on /b/w and the child watch on /b are lost (the exists watch on
// /c/new fires anyway: the node exists). So are the events of a server that registered the
// watches without checking the nodes on every shard, or before its replicas caught up.
func TestSetWatchesAcrossShardsNoMissedEvent(t *testing.T) {
	bothModes(t, testSetWatchesAcrossShardsNoMissedEvent)
}

func testSetWatchesAcrossShardsNoMissedEvent(t *testing.T, m mode) {
	ns := nonRoot()
	// The session's server lags on shards b and c.
	c := startEnsemble(t, m,
		lag{server: 0, shard: ns[1], d: 1500 * time.Millisecond},
		lag{server: 0, shard: ns[2], d: 1500 * time.Millisecond})
	addrs := c.Addrs()
	names := namesOn(t, c, "sw", ns[0], ns[1], ns[2])
	a, b, cc := "/"+names[0], "/"+names[1], "/"+names[2]
	aw, bw, cnew := a+"/w", b+"/w", cc+"/new"
	w := connectZK(t, addrs[2])
	for _, p := range []string{a, aw, a + "/other", b, bw, cc} {
		mustCreate(t, w, p, "0")
	}
	p := newProxy(t, addrs[0])
	s, ev := connectZKEvents(t, p.Addr(), 10*time.Second)
	syncAll(t, s, aw, bw, cc)
	_, _, chA, err := s.GetW(aw)
	must(t, err, "watch %s", aw)
	_, _, chB, err := s.GetW(bw)
	must(t, err, "watch %s", bw)
	ok, _, chC, err := s.ExistsW(cnew)
	if err != nil || ok {
		t.Fatalf("exists watch on %s: %v %v", cnew, ok, err)
	}
	_, _, chKids, err := s.ChildrenW(a)
	must(t, err, "child watch %s", a)
	_, _, chBKids, err := s.ChildrenW(b)
	must(t, err, "child watch %s", b)

	stB, err := w.Set(bw, []byte("1"), -1)
	must(t, err, "set %s", bw)
	_, err = w.Create(cnew, nil, 0, acl)
	must(t, err, "create %s", cnew)
	mustCreate(t, w, b+"/kid", "")
	_, stC, err := w.Exists(cnew)
	must(t, err, "exists %s", cnew)
	// The session's last request: a write (a read would make its server catch up the other
	// shards first, because the connection holds watches).
	stA, err := s.Set(a+"/other", []byte("1"), -1)
	must(t, err, "write on shard a")
	for _, ch := range []*<-chan zk.Event{&chB, &chC, &chBKids} {
		select {
		case e := <-*ch:
			t.Logf("the %v event for %s came before the server stopped: the hard case did not happen", e.Type, e.Path)
			*ch = nil
		default:
		}
	}
	if stA.Mzxid > stB.Mzxid && stA.Mzxid > stC.Czxid {
		t.Logf("the session's last zxid (%#x, shard a) is above the changes on b (%#x) and c (%#x): ZooKeeper's setWatches rule alone would miss them",
			stA.Mzxid, stB.Mzxid, stC.Czxid)
	} else {
		t.Logf("the session's last zxid %#x is not above the changes on b (%#x) and c (%#x)", stA.Mzxid, stB.Mzxid, stC.Czxid)
	}

	// The session's server goes away before it applies the changes on b and c.
	p.Refuse(true)
	c.Stop(0)
	_, err = w.Set(aw, []byte("1"), -1)
	must(t, err, "set %s while the session is away", aw)
	mustCreate(t, w, a+"/kid", "")
	p.SetTarget(addrs[1])
	p.Refuse(false)
	waitSession(t, ev, 20*time.Second)

	// Every missed event is reported, not only the first.
	deadline := time.Now().Add(5 * time.Second)
	var missing []string
	for _, x := range []struct {
		ch   <-chan zk.Event
		typ  zk.EventType
		path string
	}{{chA, zk.EventNodeDataChanged, aw}, {chB, zk.EventNodeDataChanged, bw}, {chC, zk.EventNodeCreated, cnew}, {chKids, zk.EventNodeChildrenChanged, a},
		{chBKids, zk.EventNodeChildrenChanged, b}} {
		if x.ch == nil {
			continue
		}
		var e zk.Event
		var got bool
		select {
		case e, got = <-x.ch:
		default:
			select {
			case e, got = <-x.ch:
			case <-time.After(time.Until(deadline)):
			}
		}
		if !got {
			missing = append(missing, fmt.Sprintf("%v %s", x.typ, x.path))
		} else if e.Type != x.typ || e.Path != x.path {
			missing = append(missing, fmt.Sprintf("%v %s (got %v %s)", x.typ, x.path, e.Type, e.Path))
		}
	}
	if len(missing) > 0 {
		var got []string
		for drained := false; !drained; {
			select {
			case e := <-ev:
				got = append(got, fmt.Sprintf("%v %v %s", e.Type, e.State, e.Path))
			default:
				drained = true
			}
		}
		t.Fatalf("after reconnecting to server 2, no event for: %s (the session's events since it reconnected: %v)", strings.Join(missing, "; "), got)
	}
}
