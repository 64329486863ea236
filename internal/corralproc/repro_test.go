package corralproc_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/zktest"

	"github.com/corral/corral/internal/corralproc"
)

// TestSessionAfterMetaLeaderKill: a client that connects to a follower right after the server
// leading the session (meta) shard was SIGKILLed gets its session once a new leader is elected,
// not after maxSessionTimeout. (Found while writing this package: the session's registration
// was forwarded to the dead leader and lost, and nothing proposed it again; the meta shard's
// proposals and read barriers are now retried per attempt.)
func TestSessionAfterMetaLeaderKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 1, TickTime: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer e.Close()
	ls, err := e.ShardLeaders(ctx, 0)
	if err != nil || len(ls) == 0 || ls[0].Shard != 1 || !ls[0].HasLeader {
		t.Fatalf("meta shard leader: %+v %v", ls, err)
	}
	meta := int(ls[0].Leader) - 1
	other := (meta + 1) % 3
	if err := e.Kill(meta); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c, ev, err := zk.Connect([]string{e.Addr(other)}, 10*time.Second, zk.WithLogger(zktest.QuietLogger))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s := <-ev:
			if s.State == zk.StateHasSession {
				t.Logf("session via server %d %v after killing meta leader %d", other, time.Since(killed).Round(time.Millisecond), meta)
				return
			}
		case <-deadline:
			t.Fatalf("no session via server %d within 5 s of killing meta-shard leader %d (a new leader is elected in ~0.3 s; see %s)",
				other, meta, e.LogPath(other))
		}
	}
}
