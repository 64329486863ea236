package shardstest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestSessionMoveKeepsTheNewConnection: when a session moves to another server right after it
// was active on its old server, its new connection stays up. (The reads-across-shards tests
// move sessions; this guarantee is what lets them do it without a pause.)
//
// ZooKeeper closes the old connection of a moved session, never the new one. Corral records the
// owner server of each session in the meta shard: every server reports, once per session tick
// (tickTime/2), the sessions active on it, and a report makes its sender the owner; a server
// that sees another server become the owner of a session it serves closes that connection.
// How it fails: the old server's report of the activity just before the move is applied after
// the new server took the session over, the old server becomes the owner again, and the new
// server closes the client's connection ("session moved to another server"): the client sees a
// connection loss (here: a failed read, or a Disconnected state event) a few hundred
// milliseconds after it reconnected.
func TestSessionMoveKeepsTheNewConnection(t *testing.T) {
	bothModes(t, testSessionMoveKeepsTheNewConnection)
}

func testSessionMoveKeepsTheNewConnection(t *testing.T, m mode) {
	c := startEnsemble(t, m)
	addrs := c.Addrs()
	admin := connectZK(t, addrs[0])
	mustCreate(t, admin, "/mv", "")
	p := newProxy(t, addrs[0])
	s, ev := connectZKEvents(t, p.Addr(), 10*time.Second)
	sid := s.SessionID()
	for move := 1; move <= 3; move++ {
		// Activity on the current server, then an immediate move.
		for i := 0; i < 5; i++ {
			_, _, err := s.Get("/mv")
			must(t, err, "move %d: read before moving", move)
		}
		target := addrs[move%len(addrs)]
		p.SetTarget(target)
		p.Kill()
		waitSession(t, ev, 15*time.Second)
		if s.SessionID() != sid {
			t.Fatalf("move %d: session changed %#x -> %#x", move, sid, s.SessionID())
		}
		// Two session ticks and more: the new connection must stay up.
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if _, _, err := s.Get("/mv"); err != nil {
				t.Fatalf("move %d (to server %d): a read %v after reconnecting failed: %v", move, move%len(addrs)+1, time.Since(end.Add(-time.Second)), err)
			}
		}
		for drained := false; !drained; {
			select {
			case e := <-ev:
				if e.State == zk.StateDisconnected || e.State == zk.StateExpired {
					t.Fatalf("move %d (to server %d): the new connection was lost (%v)", move, move%len(addrs)+1, e.State)
				}
			default:
				drained = true
			}
		}
	}
}
