package shardstest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/wire"
)

// TestGroupRepliesMatchCommittedState: a group's writes are answered once every participant
// prepared the group, from the prepares' results (server/group.go replyAtDecision,
// router.provisionalResults), before the commits apply. Each reply must still be what the
// commit made, and the group must still apply everywhere or nowhere, in the session's order.
//
// One session pipelines create2s round-robin over subtrees on all four shards, and in each
// round a setData of every node the round before created (in the same group or an earlier
// one). Then another server reads every node: its stat must equal, field by field, the stat
// of the last reply that wrote it (a setData's, or for the last round a create's); the reply
// zxids must increase in request order. A reply stat derived with the prepare's provisional
// zxid or time, or from a participant's results under another's zxid, fails here; so does a
// group that applied on some shards only (a node missing on the other server) or out of order.
func TestGroupRepliesMatchCommittedState(t *testing.T) {
	addrs, names, rc := groupSession(t, "gr")

	type reply struct {
		path string
		stat wire.Stat
		err  error
	}
	const rounds = 10
	var (
		mu      sync.Mutex
		replies []reply
		sent    int
	)
	done := make(chan struct{})
	record := func(path string, st wire.Stat, err error) {
		mu.Lock()
		defer mu.Unlock()
		replies = append(replies, reply{path: path, stat: st, err: err})
		if len(replies) == sent {
			close(done)
		}
	}
	var paths []string
	mu.Lock()
	for i := 0; i < rounds; i++ {
		for _, n := range names {
			p := fmt.Sprintf("/%s/n%d", n, i)
			paths = append(paths, p)
			sent++
			rc.CreateAsync(p, []byte("v0"), wire.FlagPersistent, nil, func(_ string, st wire.Stat, err error) {
				record(p, st, err)
			})
		}
		if i == 0 {
			continue
		}
		for _, n := range names {
			p := fmt.Sprintf("/%s/n%d", n, i-1)
			sent++
			rc.SetDataAsync(p, []byte("v1-longer"), 0, func(st wire.Stat, err error) { record(p, st, err) })
		}
	}
	mu.Unlock()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d pipelined writes did not all complete", sent)
	}

	mu.Lock()
	defer mu.Unlock()
	last := map[string]wire.Stat{} // path -> stat of the last reply that wrote it
	var prev int64
	for k, r := range replies {
		if r.err != nil {
			t.Fatalf("reply %d (%s): %v", k, r.path, r.err)
		}
		if r.stat.Mzxid <= prev {
			t.Fatalf("reply %d (%s): mzxid %#x not above the previous reply's %#x", k, r.path, r.stat.Mzxid, prev)
		}
		prev = r.stat.Mzxid
		last[r.path] = r.stat
	}

	obs := connectZK(t, addrs[1])
	for _, n := range names {
		syncAll(t, obs, "/"+n)
	}
	for _, p := range paths {
		ok, st, err := obs.Exists(p)
		if err != nil || !ok {
			t.Fatalf("server 2: %s: exists %v, %v", p, ok, err)
		}
		if got, want := statOf(st), last[p]; got != want {
			t.Fatalf("server 2: %s: stat %+v, the reply said %+v", p, got, want)
		}
	}
}

// statOf converts go-zookeeper's stat.
func statOf(s *zk.Stat) wire.Stat {
	return wire.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength,
		NumChildren: s.NumChildren, Pzxid: s.Pzxid}
}
