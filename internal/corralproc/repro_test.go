package corralproc_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/corralproc"
)

// TestReproSessionAfterMetaLeaderKill reproduces a Corral availability
// problem found while writing this package (not a corralproc bug; skipped
// unless CORRAL_REPRO=1 because it fails today):
//
// A ConnectRequest that reaches a follower right after the server leading the
// session (meta) shard was SIGKILLed is proposed to the meta shard, forwarded
// by dragonboat to the dead leader, and lost; nothing proposes it again, so
// the handshake waits for its whole deadline, maxSessionTimeout (20 ticks: 10 s
// here, 40 s with tickTime=2000), although a new leader is elected within
// about 0.3 s. Apache ZooKeeper has no such window: a client whose server
// loses its leader reconnects once the new leader is up.
func TestReproSessionAfterMetaLeaderKill(t *testing.T) {
	if os.Getenv("CORRAL_REPRO") == "" {
		t.Skip("reproduction of an open Corral issue; set CORRAL_REPRO=1 to run")
	}
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
	c, ev, err := zk.Connect([]string{e.Addr(other)}, 10*time.Second, zk.WithLogger(quietLogger{}))
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
