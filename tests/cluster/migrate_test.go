package clustertest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
)

// TestSessionMovesAndWatchesFollow: when a client's server stops, the client reconnects to
// another server with the same session; its ephemeral survives, its watches are re-registered
// (setWatches), a change made while it was away is reported, and it reads no older state than
// it had seen.
func TestSessionMovesAndWatchesFollow(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 3, Shards: 1})
	addrs := cl.Addrs()
	acl := zk.WorldACL(zk.PermAll)
	writer, _ := connect(t, addrs[1:2])
	if _, err := writer.Create("/cfg", []byte("v1"), 0, acl); err != nil {
		t.Fatal(err)
	}
	// The mover prefers server 0, then may fail over to the others.
	mover, events := connect(t, []string{addrs[0], addrs[1], addrs[2]})
	if _, err := mover.Sync("/cfg"); err != nil {
		t.Fatal(err)
	}
	sid := mover.SessionID()
	if _, err := mover.Create("/mine", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	_, st, dataCh, err := mover.GetW("/cfg")
	if err != nil {
		t.Fatal(err)
	}
	connectedTo := mover.Server()
	idx := -1
	for i, a := range addrs {
		if a == connectedTo {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("mover connected to unknown %q", connectedTo)
	}
	cl.Stop(idx)
	// While the mover is away, the watched node changes.
	if idx == 1 {
		writer, _ = connect(t, addrs[2:])
	}
	// The writer's server may close its connection while the stopped server's shard
	// leaderships move (a write whose outcome it cannot tell, as a ZooKeeper follower drops
	// its clients when its leader goes); the writer does what a ZooKeeper client does: it
	// sets again (an unconditional set may land twice, which changes nothing checked below).
	for attempt := 1; ; attempt++ {
		_, err := writer.Set("/cfg", []byte("v2"), -1)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrConnectionClosed) || attempt == 10 {
			t.Fatalf("set /cfg (attempt %d): %v", attempt, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Wait until the mover has a session again, on another server.
	deadline := time.After(20 * time.Second)
	for reconnected := false; !reconnected; {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				t.Fatal("session expired instead of moving")
			}
			reconnected = ev.State == zk.StateHasSession
		case <-deadline:
			t.Fatal("mover did not reconnect")
		}
	}
	if mover.SessionID() != sid {
		t.Fatalf("session id changed: %x -> %x", sid, mover.SessionID())
	}
	select {
	case ev := <-dataCh:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/cfg" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the change made while the client was away was not reported after setWatches")
	}
	d, st2, err := mover.Get("/cfg")
	if err != nil || string(d) != "v2" || st2.Mzxid <= st.Mzxid {
		t.Fatalf("after moving: %q %+v %v", d, st2, err)
	}
	if ok, est, err := mover.Exists("/mine"); err != nil || !ok || est.EphemeralOwner != sid {
		t.Fatalf("ephemeral after moving: %v %+v %v", ok, est, err)
	}
}
