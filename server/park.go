package server

import (
	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// Reads parked behind writes (docs/design.md §8, "Reads parked behind writes").
//
// A read must see every earlier write of its session and none of the later ones, and its reply
// follows theirs. A read that arrives while the connection's writes to one shard are still
// unanswered would otherwise wait for them on the request goroutine (waitIdle), and the
// connection would stop reading and proposing until they are applied: with reads and writes
// interleaved, one write per Raft round. A parked read takes a slot in the reply order instead
// and asks the shard's proposer for a view right after the connection's latest write
// (router.Proposer.Tap, shard.Taps): the replica hands it that view between that write and
// anything proposed later, the read is answered from it into its slot, and the request
// goroutine goes on reading and proposing the session's next writes.
//
// A read parks only when that view is all it needs:
//   - getData, exists, getChildren, getChildren2 without a watch, on a connection that never
//     registered a watch (no event can then need ordering against the reply);
//   - every unanswered request of the connection is a single-shard write to the read's shard
//     or a parked read (no group, transaction, sync, or rerouted write pending; slot.parkable),
//     its last group is applied here, and the session is not read-only;
//   - the read's path lives on that shard with no move to wait for, and the replica is within
//     the read staleness bound.
//
// Everything else waits as before. A parked read whose view cannot be had in order (the write
// was sent back by a subtree move, its batch settled without this replica applying it, the
// subtree moved meanwhile) closes the connection with a log line; the client retries.

// park answers a read in its place behind the connection's pending writes, if it can. It
// returns false when the read must be handled the usual way (waitIdle first).
func (c *conn) park(h wire.RequestHeader, rec wire.Record) bool {
	if c.parkOn == nil || c.readOnly || c.watched.Load() {
		return false
	}
	var path string
	switch r := rec.(type) {
	case *wire.ExistsRequest:
		if r.Watch {
			return false
		}
		path = r.Path
	case *wire.GetDataRequest:
		if r.Watch {
			return false
		}
		path = r.Path
	case *wire.GetChildrenRequest:
		if r.Watch {
			return false
		}
		path = r.Path
	default:
		return false
	}
	if !isApplied(c.lastGroup) {
		return false
	}
	sh, minZxid := c.s.o.Router.Route(path)
	if sh != c.parkShard || minZxid > 0 {
		return false
	}
	if maxAge := c.s.o.MaxReadAge; maxAge > 0 && sh.AgeAt(c.reqNow) > maxAge {
		return false
	}
	sl := &slot{start: c.reqNow, kind: "read", parkable: true}
	c.out.Lock()
	ok := !c.out.closed && len(c.out.slots) > 0 && c.out.unparkable == 0
	c.out.Unlock()
	if !ok {
		return false
	}
	// Only this goroutine reserves slots, and the pending ones are all parkable: the new slot
	// is behind the connection's latest write, c.parkOn.
	c.reserveSlot(sl)
	need := c.lastZxid.Load()
	ids := c.AuthIDs()
	if !sh.Proposer.Tap(c.parkOn, func(v *shard.View) { c.answerParked(sl, h, rec, path, sh, ids, need, v) }) {
		// The write settled meanwhile: nothing later is proposed yet, so the usual read,
		// once the earlier replies are queued, is in order.
		select {
		case <-c.whenHead(sl):
		case <-c.writerEnd:
			c.complete(sl, nil)
			return false
		}
		v, ok := c.readView(sh, 0)
		if !ok {
			c.complete(sl, nil)
			return true
		}
		c.answerParked(sl, h, rec, path, sh, ids, need, v)
	}
	c.s.o.Metrics.parkedReads.Inc()
	return true
}

// answerParked answers a parked read from v into its slot (any goroutine; must not block).
func (c *conn) answerParked(sl *slot, h wire.RequestHeader, rec wire.Record, path string, sh *router.Shard, ids []wire.ID, need int64, v *shard.View) {
	var why string
	switch {
	case v == nil:
		why = "the write it follows was not applied here in order"
	case v.Zxid() < need:
		why = "the view after the write it follows is older than the session has seen"
	case c.moved(path, sh):
		why = "its subtree moved"
	}
	if why != "" {
		c.complete(sl, nil)
		c.s.o.Log.Warn("parked read cannot be answered in order, closing connection", "session", sessionHex(c.sessionID),
			"path", path, "why", why)
		go c.close("parked read cannot be answered in order")
		return
	}
	errc, resp := v.Read(h.Op, rec, ids)
	var body []byte
	if errc == wire.ErrOK {
		body = encodeRecord(resp)
	}
	c.complete(sl, c.frame(h.Xid, errc, v.Zxid(), body))
	c.countReply(errc)
}
