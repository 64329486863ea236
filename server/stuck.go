package server

import (
	"time"

	"github.com/corral/corral/router"
)

// Requests on a cut-off replica (docs/design.md §3, "Requests on a cut-off replica").
//
// A server can keep its sessions' leases (the meta shard's quorum hears it) while one data
// shard's quorum does not: in a bridge partition its replica of that shard has no leader it can
// reach, and a request on that shard would wait as long as the fault lasts. ZooKeeper's
// follower drops its clients once its leader has been silent for syncLimit × tickTime. Corral
// treats a replica as cut off when it has not confirmed, for that bound
// (server.Options.MaxReadAge), that it reaches its shard's quorum (router.Shard.QuorumAgeAt:
// the server's catch-up before it served, then a round every bound/4) and it knows of no leader (it is campaigning, and the
// other replicas refuse it an election); a replica that has a leader but confirms slowly (a
// loaded machine, a replica catching up) is not cut off. A request that waits on a cut-off
// replica for cutOffGrace closes its connection: a read that cannot catch up (route.go), the
// connection's oldest write (the watchdog, below), a handshake while the session table's
// replica is cut off (handshakeTimeout). Its client reconnects to a server that reaches the
// quorum, as after a lost server; the outcome of its writes in flight is unknown to it
// (CONNECTIONLOSS), as in ZooKeeper.

// cutOff reports whether this server's replica of sh is cut off from its shard's quorum.
func (s *Server) cutOff(sh *router.Shard, now time.Time) bool {
	bound := s.o.MaxReadAge
	return bound > 0 && sh.QuorumAgeAt(now) > bound && s.o.Leaderless != nil && s.o.Leaderless(sh.ID)
}

// handshakeTimeout bounds the session-table work of a handshake (creating or taking over a
// session with negotiated timeout t): half of t (at least a second), since a client that
// waits longer has most likely given up on this server already, and cutOffGrace while the
// local replica of the table is cut off from its quorum, as a ZooKeeper server that is not
// serving closes new connections at once. Either way the client then tries another server.
// One commit on the meta shard, which is what the work takes, is milliseconds.
func (s *Server) handshakeTimeout(t time.Duration) time.Duration {
	if s.o.MetaCutOff != nil && s.o.MaxReadAge > 0 && s.o.MetaCutOff() {
		return cutOffGrace(s.o.MaxReadAge)
	}
	return min(s.o.MaxTimeout, max(t/2, time.Second))
}

// cutOffGrace is how long a request may wait on a cut-off replica before its connection is
// closed: a round that the replica starts once its quorum is back takes milliseconds.
func cutOffGrace(bound time.Duration) time.Duration { return max(bound/8, 250*time.Millisecond) }

// stuckOn returns the shard on which the connection's oldest unanswered write has waited
// longer than cutOffGrace while this server's replica of it is cut off, or nil.
func (c *conn) stuckOn(now time.Time, bound time.Duration) *router.Shard {
	c.out.Lock()
	defer c.out.Unlock()
	if len(c.out.slots) == 0 || c.out.closed {
		return nil
	}
	head := c.out.slots[0] // complete flushes finished heads, so this one is unanswered
	if now.Sub(head.start) <= cutOffGrace(bound) {
		return nil
	}
	for _, sh := range head.on {
		if c.s.cutOff(sh, now) {
			return sh
		}
	}
	return nil
}

// anyCutOff reports whether any of this server's replicas is cut off (cutOff): only then can a
// connection be stuck, so the watchdog looks at no connection otherwise.
func (s *Server) anyCutOff(now time.Time) bool {
	if s.o.Router == nil {
		return true // no list of shards: look at every connection
	}
	for _, sh := range s.o.Router.Shards() {
		if s.cutOff(sh, now) {
			return true
		}
	}
	return false
}

// dropStuck closes the connections whose oldest write is stuck on a cut-off replica (stuckOn);
// the watchdog calls it only while anyCutOff.
func (s *Server) dropStuck(conns []*conn, now time.Time) {
	bound := s.o.MaxReadAge
	if bound <= 0 {
		return
	}
	for _, c := range conns {
		sh := c.stuckOn(now, bound)
		if sh == nil {
			continue
		}
		s.o.Log.Warn("closing connection: its oldest write waits on a shard whose local replica is cut off from the shard's quorum (no leader, no confirmation within the read bound)",
			"session", sessionHex(c.sessionID), "remote", c.nc.RemoteAddr().String(), "shard", sh.ID,
			"replica_age", sh.QuorumAgeAt(now).Round(time.Millisecond).String(), "bound", bound.String())
		s.o.Metrics.stuckDrops.Inc()
		go c.close("write stuck on a replica cut off from its shard's quorum")
	}
}
