package clustertest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/session"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// TestHalfClosedSessionIsClosedOnTakeOver: a client's close runs its data shards' round while
// its meta close commits (docs/design.md §4, "The close in one round"). If that server fails
// after the round and before the meta close, a data shard holds the session's tombstone while
// the session table holds it open. A server that then takes the session over finds its owner
// record refused there and closes the session, so the client learns it expired instead of
// staying connected with a session that can write nowhere.
func TestHalfClosedSessionIsClosedOnTakeOver(t *testing.T) {
	cl := startAtSupportedLevel(t, 3, 1)
	addrs := cl.Addrs()
	// The client dials server 1 until told otherwise, then server 2 only.
	var mu sync.Mutex
	target, dialed := addrs[0], []net.Conn(nil)
	dial := func(network, _ string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		to := target
		mu.Unlock()
		c, err := net.DialTimeout(network, to, timeout)
		if err == nil {
			mu.Lock()
			dialed = append(dialed, c)
			mu.Unlock()
		}
		return c, err
	}
	c, events, err := zk.Connect(addrs[:1], 10*time.Second, zk.WithLogInfo(false), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// The data shards' round of a close whose meta close never committed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	op := shard.Op{Session: c.SessionID(), Code: wire.OpCloseSession, Body: shard.CloseSessionIfOwner(session.CreatedEpoch)}
	if err := cl.Server(0).Router().OnEveryShard(ctx, op); err != nil {
		t.Fatal(err)
	}
	if e, ok := cl.Server(1).SessionTable().Get(c.SessionID()); !ok || e.Closing {
		t.Fatalf("the session table should still hold the session open: %+v %v", e, ok)
	}
	// The client moves to server 2: a take-over.
	mu.Lock()
	target = addrs[1]
	for _, d := range dialed {
		d.Close()
	}
	mu.Unlock()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				if e, ok := cl.Server(1).SessionTable().Get(c.SessionID()); ok && !e.Closing {
					t.Fatalf("the client was told its session expired while the table holds it open")
				}
				return
			}
		case <-deadline:
			t.Fatalf("the client still has a session (state %v) 20 s after moving to a server that cannot record it", c.State())
		}
	}
}
