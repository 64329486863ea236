package clustertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/cluster"
	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/router"
)

// TestLeadersFollowWrites: a client writing synchronously through server 2 to a shard that
// server 1 leads, with every other leadership on server 2, makes server 2 take the shard's
// leadership over within seconds (cluster/follow.go), without any write waiting a second for it;
// while the writes go on, the spread balancer gives other shards away but not that one. With
// corral.leadersFollowWrites=false the leadership stays on server 1.
func TestLeadersFollowWrites(t *testing.T) {
	for _, follow := range []bool{true, false} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			var extra []string
			if !follow {
				extra = []string{"corral.leadersFollowWrites=false"}
			}
			cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4, Extra: extra})
			data := []uint64{cluster.DataShardID(0), cluster.DataShardID(1), cluster.DataShardID(2), cluster.DataShardID(3)}
			ids := append([]uint64{cluster.MetaShardID}, data...)
			target := router.TopLevelShard("fw", data)
			var others []uint64
			for _, id := range ids {
				if id != target {
					others = append(others, id)
				}
			}
			if leadersTo(cl, []uint64{target}, 0) != 1 || leadersTo(cl, others, 1) != len(others) {
				t.Skip("could not place the leaderships for the test")
			}
			c, _ := connect(t, cl.Addrs()[1:2])
			if _, err := c.Create("/fw", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			var slowest time.Duration
			write := func() {
				start := time.Now()
				if _, err := c.Set("/fw", []byte("v"), -1); err != nil {
					t.Fatalf("write: %v", err)
				}
				slowest = max(slowest, time.Since(start))
			}
			start := time.Now()
			for cl.Leader(target) != 1 && time.Since(start) < 8*time.Second {
				write()
			}
			if !follow {
				if l := cl.Leader(target); l != 0 {
					t.Fatalf("with corral.leadersFollowWrites=false the shard's leadership moved to server %d", l+1)
				}
				return
			}
			if l := cl.Leader(target); l != 1 {
				t.Fatalf("after 8 s of writes through server 2 the shard is led by server %d", l+1)
			}
			t.Logf("leadership followed the writes after %v; slowest write %v", time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond))
			if slowest >= time.Second {
				t.Fatalf("a write waited %v while the leadership moved", slowest)
			}
			// Server 2 now leads all five shards; the spread balancer gives some away, never the
			// one server 2 writes.
			for end := time.Now().Add(30 * time.Second); ledBy(cl, ids, 1) == len(ids); {
				if time.Now().After(end) {
					t.Fatal("the spread balancer gave nothing away in 30 s")
				}
				write()
				if l := cl.Leader(target); l != 1 {
					t.Fatalf("the written shard's leadership moved away to server %d while server 2 wrote it", l+1)
				}
			}
			for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
				write()
			}
			if l := cl.Leader(target); l != 1 {
				t.Fatalf("the written shard's leadership moved away to server %d while server 2 wrote it", l+1)
			}
		})
	}
}
