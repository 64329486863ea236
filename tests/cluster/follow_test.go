package clustertest

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
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
//
// An election may still move the shard's leadership (a heartbeat late by an election timeout on a
// loaded machine, or a Raft log sync that stalls: docs/benchmarks.md, "Leader elections under
// saturating writes"); Raft promises no leader for good. What the test holds the servers to is
// that the balancer never hands the written shard away (its log line names each shard it
// transfers) and that a leadership an election moved comes back to the writer.
func TestLeadersFollowWrites(t *testing.T) {
	for _, follow := range []bool{true, false} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			var extra []string
			if !follow {
				extra = []string{"corral.leadersFollowWrites=false"}
			}
			logs := &testcluster.LogBuffer{}
			cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 4, Extra: extra, Log: logs.Logger(slog.LevelInfo)})
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
				if strings.Contains(logs.String(), "pulled shard leadership") {
					t.Fatal("with corral.leadersFollowWrites=false a server pulled a shard's leadership")
				}
				if l := cl.Leader(target); l != 0 {
					t.Logf("with corral.leadersFollowWrites=false the shard's leadership moved to server %d, not by a pull (an election)", l+1)
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
			// The servers' log lines read msg="..." server=N shard=N ... (cluster.Node's logger).
			const balanced = `msg="transferring shard leadership to balance the ensemble"`
			handedAway := regexp.MustCompile(fmt.Sprintf(`%s server=\d+ shard=%d `, regexp.QuoteMeta(balanced), target))
			kept := func() {
				t.Helper()
				if handedAway.MatchString(logs.String()) {
					t.Fatalf("the spread balancer handed away the leadership of shard %d, which server 2 writes", target)
				}
				l := cl.Leader(target)
				if l == 1 {
					return
				}
				t.Logf("the written shard's leadership moved to server %d, not by the balancer (an election)", l+1)
				for end := time.Now().Add(8 * time.Second); cl.Leader(target) != 1; {
					if time.Now().After(end) {
						if handedAway.MatchString(logs.String()) {
							t.Fatalf("the spread balancer handed away the leadership of shard %d, which server 2 writes", target)
						}
						t.Fatalf("the written shard's leadership did not come back to server 2 within 8 s of writes")
					}
					write()
				}
			}
			for end := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), balanced); {
				if time.Now().After(end) {
					t.Fatal("the spread balancer gave nothing away in 30 s")
				}
				write()
				kept()
			}
			for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
				write()
				kept()
			}
		})
	}
}
