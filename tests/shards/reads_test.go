package shardstest

import (
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestReadsNeverGoBackAcrossShards: a session that moves to another server reads no older state
// on any shard than it had seen (here: its own writes on every shard), and sync followed by a
// read is linearizable on every shard: a write acknowledged on one server is seen on another by
// a session that syncs the path first.
//
// The session is a go-zookeeper session behind a TCP proxy; the test moves it by pointing the
// proxy at server 2 and cutting the connection, and go-zookeeper reconnects with the same
// session and its lastZxidSeen (no closeSession is sent).
//
// How a broken implementation fails: server 2 applies three of the shards 500 ms late (from the
// start), so when the session arrives its replicas do not have the session's writes
// there yet (the test logs how many). A server that served the moved session's reads from
// those replicas without catching up to the session's zxid — on each shard, not only on the
// shard that produced the zxid — returns the old values; a sync that did not wait for the
// path's shard to catch up returns the old value to the second reader.
func TestReadsNeverGoBackAcrossShards(t *testing.T) { bothModes(t, testReadsNeverGoBackAcrossShards) }

func testReadsNeverGoBackAcrossShards(t *testing.T, m mode) {
	ns := nonRoot()
	// The session's last write is on the root shard, which server 2 does not hold back: its
	// lastZxidSeen is then no newer than what server 2 applied, so nothing at the reconnect
	// forces a catch-up, and only the cross-shard read rule keeps the reads of the three
	// lagging shards current.
	shards := []uint64{ns[0], ns[1], ns[2], rootShard}
	var lags []lag
	for _, id := range shards[:3] {
		lags = append(lags, lag{server: 1, shard: id, d: 500 * time.Millisecond})
	}
	c := startEnsemble(t, m, lags...)
	addrs := c.Addrs()
	names := namesOn(t, c, "rb", shards...)
	paths := make([]string, len(names))
	admin := connectZK(t, addrs[0])
	for i, n := range names {
		mustCreate(t, admin, "/"+n, "")
		paths[i] = "/" + n + "/x"
		mustCreate(t, admin, paths[i], "0")
	}
	// A second reader on server 2, connected and up to date before the writes.
	r2 := connectZK(t, addrs[1])
	syncAll(t, r2, paths...)
	for _, p := range paths {
		if v, _, err := readInt(r2, p); err != nil || v != 0 {
			t.Fatalf("server 2 before the writes: %s = %d %v", p, v, err)
		}
	}

	// --- a session writes on every shard through server 1, then moves to server 2 ---
	p := newProxy(t, addrs[0])
	s, ev := connectZKEvents(t, p.Addr(), 10*time.Second)
	sid := s.SessionID()
	mz := make([]int64, len(paths))
	for i, path := range paths {
		st, err := s.Set(path, []byte("1"), -1)
		must(t, err, "set %s", path)
		mz[i] = st.Mzxid
	}
	logLag(t, c, 1, "when they were acknowledged", paths, mz)
	// Server 2 applies the write on the root shard (not held back) before the session moves: the
	// other session there syncs the root shard (only that one), which returns once server 2
	// applied every write committed before it.
	if _, err := r2.Sync(paths[3]); err != nil {
		t.Fatalf("server 2: sync %s: %v", paths[3], err)
	}
	moveSession(t, p, ev, addrs[1])
	logLag(t, c, 1, "when the session had moved", paths, mz)
	if s.SessionID() != sid {
		t.Fatalf("session changed while moving: %#x -> %#x", sid, s.SessionID())
	}
	for i, path := range paths {
		v, st, err := readInt(s, path)
		if err != nil || v != 1 || st.Mzxid != mz[i] {
			t.Fatalf("after moving to server 2 (shard %d): %s = %d (mzxid %#x) %v; the session had written 1 (mzxid %#x)",
				shards[i], path, v, mzxidOf(st), err, mz[i])
		}
	}
	if kids := children(t, s, "/"); !containsAll(kids, names) {
		t.Fatalf("after moving: getChildren(/) = %v, want %v among them", kids, names)
	}
	// Its own writes on the lagging server, then reads on every shard (each write waits for its
	// local apply, 500 ms on the lagging shards).
	for i, path := range paths {
		st, err := s.Set(path, []byte("2"), -1)
		must(t, err, "set %s on server 2", path)
		mz[i] = st.Mzxid
		for j, q := range paths[:i+1] {
			if v, _, err := readInt(s, q); err != nil || v != 2 {
				t.Fatalf("on server 2, after writing %s: %s (shard %d) = %d %v, want 2", path, q, shards[j], v, err)
			}
		}
	}

	// --- sync then read: a write acknowledged on server 1 is seen on server 2 after sync ---
	w := connectZK(t, addrs[0])
	for i, path := range paths {
		st, err := w.Set(path, []byte("3"), -1)
		must(t, err, "set %s on server 1", path)
		mz[i] = st.Mzxid
	}
	logLag(t, c, 1, "when they were acknowledged", paths, mz)
	for i, path := range paths {
		if _, err := r2.Sync(path); err != nil {
			t.Fatalf("sync %s: %v", path, err)
		}
		v, st, err := readInt(r2, path)
		if err != nil || v != 3 {
			t.Fatalf("server 2, sync then read of %s (shard %d) = %d (mzxid %#x) %v; the write of 3 (mzxid %#x) was acknowledged before the sync",
				path, shards[i], v, mzxidOf(st), err, mz[i])
		}
	}
}

// logLag logs how many of the writes (paths[i] at mzxid mz[i]) server srv's replicas had not
// applied yet: the lag that makes a test meaningful. Only an in-process ensemble shows it.
func logLag(t *testing.T, c ensemble, srv int, when string, paths []string, mz []int64) {
	t.Helper()
	if c.router(srv) == nil {
		return
	}
	behind := 0
	for i, p := range paths {
		if viewZxid(c, srv, shardOf(p)) < mz[i] {
			behind++
		}
	}
	t.Logf("server %d had not applied %d of the %d writes yet %s", srv+1, behind, len(paths), when)
}

func mzxidOf(st *zk.Stat) int64 {
	if st == nil {
		return 0
	}
	return st.Mzxid
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
