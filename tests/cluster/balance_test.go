package clustertest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/router"
)

// TestBalancerWaitsForAQuietShard: with every leadership on server 1 and synchronous writes to
// every data shard through servers 2 and 3 (forwarded to the leader), the leader balancer does
// not hand over a shard that is applying writes: dragonboat's transfer target skips the
// election while it has entries to apply, and the leader drops forwarded proposals while a
// transfer is pending, so such a transfer mostly failed and stalled the shard's forwarded
// writes for 2 s (cluster/balance.go, shardQuiet). No write may wait a second during the load,
// which runs past the balancer's first chance to act (balanceRounds rounds after the
// imbalance); once the load stops, leadership spreads again.
func TestBalancerWaitsForAQuietShard(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4})
	data := []uint64{cluster.DataShardID(0), cluster.DataShardID(1), cluster.DataShardID(2), cluster.DataShardID(3)}
	ids := append([]uint64{cluster.MetaShardID}, data...)
	if n := concentrateLeaders(cl, ids); n < 3 {
		t.Skipf("could not concentrate leadership on server 1 (it leads %d of %d shards)", n, len(ids))
	}
	// One top-level znode on each data shard.
	var paths []string
	for i, want := 0, map[uint64]bool{}; len(paths) < len(data); i++ {
		name := fmt.Sprintf("q%d", i)
		if s := router.TopLevelShard(name, data); !want[s] {
			want[s] = true
			paths = append(paths, "/"+name)
		}
	}
	c0, _ := connect(t, cl.Addrs()[:1])
	for _, p := range paths {
		if _, err := c0.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest time.Duration
		slowOn  string
		werr    error
	)
	for _, srv := range []int{1, 2} {
		for _, p := range paths {
			c, _ := connect(t, cl.Addrs()[srv:srv+1])
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					start := time.Now()
					_, err := c.Set(p, []byte("v"), -1)
					d := time.Since(start)
					mu.Lock()
					if err != nil && werr == nil {
						werr = err
					}
					if d > slowest {
						slowest, slowOn = d, fmt.Sprintf("%s through server %d", p, srv+1)
					}
					mu.Unlock()
				}
			}()
		}
	}
	time.Sleep(20 * time.Second)
	stop.Store(true)
	wg.Wait()
	if werr != nil {
		t.Fatalf("a write failed: %v", werr)
	}
	t.Logf("slowest write under load: %v (%s)", slowest.Round(time.Millisecond), slowOn)
	if slowest >= time.Second {
		t.Fatalf("a write waited %v (%s): a leadership transfer under load stalled it", slowest, slowOn)
	}
	for end := time.Now().Add(20 * time.Second); ledBy(cl, ids, 0) == len(ids); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no leadership moved within 20 s after the load stopped")
		}
	}
}

// concentrateLeaders asks every leader of ids to hand its leadership to server 1 (index 0) and
// waits up to 5 s for all of them to get there; it returns how many server 1 leads then.
func concentrateLeaders(cl *testcluster.Cluster, ids []uint64) int { return leadersTo(cl, ids, 0) }

// leadersTo asks every leader of ids to hand its leadership to the server of index i and waits
// up to 5 s for all of them to get there; it returns how many that server leads then.
func leadersTo(cl *testcluster.Cluster, ids []uint64, i int) int {
	to := cl.ID(i)
	for _, id := range ids {
		if l := cl.Leader(id); l >= 0 && l != i {
			cl.Server(l).NodeHost().RequestLeaderTransfer(id, to)
		}
	}
	for end := time.Now().Add(5 * time.Second); ledBy(cl, ids, i) < len(ids) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	return ledBy(cl, ids, i)
}

// ledBy returns how many of ids server i (an index) leads.
func ledBy(cl *testcluster.Cluster, ids []uint64, i int) int {
	n := 0
	for _, id := range ids {
		if cl.Leader(id) == i {
			n++
		}
	}
	return n
}
