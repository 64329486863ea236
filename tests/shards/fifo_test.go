package shardstest

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// TestFIFOAcrossShards: a session's writes are applied in the order it sent them, also when they
// alternate between two shards and many are outstanding, and its replies come back in that
// order.
//
// One session (Corral's client: go-zookeeper has no asynchronous calls, and its blocking calls
// from several goroutines would not keep an order) pipelines setData(/a/n, i), setData(/b/n, i)
// for i = 1..N without waiting, /a and /b on different shards. Checks:
//   - the replies arrive in request order (the client closes the connection with a protocol
//     error on a reply out of xid order) and each reports the version i, so each shard applied
//     its writes in order;
//   - the mzxids increase in the session's order (as ZooKeeper's do), across both shards;
//   - an observer session on another server, reading /b/n and then /a/n over and over, never
//     reads /a/n older than the /b/n it read just before: /a/n = i was applied before /b/n = i.
//
// How a broken implementation fails: the writer's server applies shard a 100 ms late (from the
// start), so its replies for /a lag behind those for /b: a server that sent each reply as
// soon as it was ready would answer out of order; one that did not hold a write to /b until the
// previous write to /a had completed would let /b/n = i commit with a smaller zxid than, or
// before, /a/n = i. The observer's server applies shard a 150 ms late: a read of /a/n served
// from that replica without catching up to the session's zxid shows /a/n behind /b/n.
func TestFIFOAcrossShards(t *testing.T) { bothModes(t, testFIFOAcrossShards) }

func testFIFOAcrossShards(t *testing.T, m mode) {
	ns := nonRoot()
	c := startEnsemble(t, m,
		// The writer's server: shard a.
		lag{server: 0, shard: ns[2], d: 100 * time.Millisecond},
		// The observer's server: shard a, longer than the writer's lag, so that a write to b can
		// be visible there before the preceding write to a is applied. The hook holds back
		// every apply, so this replica falls behind by about 50 ms per write to a (at most about
		// a second over the run).
		lag{server: 1, shard: ns[2], d: 150 * time.Millisecond})
	addrs := c.Addrs()
	// a on a shard with a larger id (and zxid tag) than b's: two writes stamped in the same
	// millisecond are then ordered by the writer's barrier, not by the tags.
	names := namesOn(t, c, "ff", ns[2], ns[0])
	an, bn := "/"+names[0]+"/n", "/"+names[1]+"/n"
	zc := connectZK(t, addrs[0])
	for _, p := range []string{"/" + names[0], an, "/" + names[1], bn} {
		mustCreate(t, zc, p, "0")
	}
	obs := connectZK(t, addrs[1])
	syncAll(t, obs, an, bn)

	rc := dialRaw(t, addrs[0], client.Options{})
	const n = 15
	type reply struct {
		seq  int // request number, in send order
		stat wire.Stat
		err  error
	}
	var (
		mu      sync.Mutex
		replies []reply
		done    = make(chan struct{})
	)
	for i := 1; i <= n; i++ {
		for k, p := range []string{an, bn} {
			seq := 2*(i-1) + k
			rc.SetDataAsync(p, []byte(strconv.Itoa(i)), -1, func(st wire.Stat, err error) {
				mu.Lock()
				replies = append(replies, reply{seq, st, err})
				if len(replies) == 2*n {
					close(done)
				}
				mu.Unlock()
			})
		}
	}
	if out := rc.Outstanding(); out < 4 {
		t.Logf("only %d requests outstanding after sending %d (the pipeline drained fast)", out, 2*n)
	}

	// The observer reads b then a until the writer is done, and once more after.
	var failure string
	reads := 0
	deadline := time.Now().Add(30 * time.Second)
	for finished := false; failure == ""; {
		select {
		case <-done:
			finished = true
		default:
			if time.Now().After(deadline) {
				mu.Lock()
				got := len(replies)
				mu.Unlock()
				t.Fatalf("the writer's %d pipelined writes did not complete (%d replies)", 2*n, got)
			}
		}
		vb, _, err := readInt(obs, bn)
		if err != nil {
			t.Fatalf("observer: read %s: %v", bn, err)
		}
		va, _, err := readInt(obs, an)
		if err != nil {
			t.Fatalf("observer: read %s: %v", an, err)
		}
		reads++
		if va < vb {
			failure = fmt.Sprintf("observer on server 2 read %s = %d and then %s = %d: the session wrote %s = %d before %s = %d", bn, vb, an, va, an, vb, bn, vb)
		}
		if finished {
			if va != n || vb != n {
				failure = fmt.Sprintf("observer after the writer finished: %s = %d, %s = %d, want %d", an, va, bn, vb, n)
			}
			break
		}
	}
	if failure != "" {
		t.Fatal(failure)
	}
	mu.Lock()
	defer mu.Unlock()
	var prev int64
	for k, r := range replies {
		if r.err != nil {
			t.Fatalf("reply %d: %v", k, r.err)
		}
		if r.seq != k {
			t.Fatalf("reply %d is for request %d: replies out of order", k, r.seq)
		}
		if want := int32(r.seq/2 + 1); r.stat.Version != want {
			t.Fatalf("reply to request %d: version %d, want %d (the shard applied the writes out of order)", r.seq, r.stat.Version, want)
		}
		if r.stat.Mzxid <= prev {
			t.Fatalf("request %d got mzxid %#x, not above the previous request's %#x: the session's writes were not applied in its order across shards", r.seq, r.stat.Mzxid, prev)
		}
		prev = r.stat.Mzxid
	}
	t.Logf("%d pipelined writes alternating between 2 shards; the observer made %d read pairs", 2*n, reads)
}
