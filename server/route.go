package server

import (
	"context"
	"errors"
	"time"

	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// readBound is what a read of this connection waits for (router.ReadBound): the zxid the
// connection observed last, its watches, the read-age bound, and a catch-up limit of
// cutOffGrace for a replica cut off from its quorum (CatchUpLimit), within the session timeout.
// A read-only session reads whatever this server has, however old (readonly.go).
func (c *conn) readBound() router.ReadBound {
	return router.ReadBound{Seen: c.lastZxid.Load(), Watching: c.watched.Load(), MaxAge: c.s.o.MaxReadAge,
		Now: c.reqNow, Stale: c.readOnly, Timeout: c.writeTimeout(), Limit: c}
}

// CatchUpLimit gives a catch-up of sh cutOffGrace when this server's replica of it is cut off
// from its quorum (stuck.go), so that the client soon moves to a server that reaches it; a slow
// replica (a loaded server, one catching up) gets the whole session timeout.
func (c *conn) CatchUpLimit(sh *router.Shard) time.Duration {
	if c.s.cutOff(sh, c.reqNow) {
		return cutOffGrace(c.s.o.MaxReadAge)
	}
	return 0
}

// readView returns the view of sh a read of this connection may use, at least as new as min
// (router.ReadView). ok is false when the shard could not catch up in time; the connection is
// then closed (the client reconnects, as after a lost server).
func (c *conn) readView(sh *router.Shard, min int64) (v *shard.View, ok bool) {
	v, err := c.s.o.Router.ReadView(sh, min, c.readBound())
	return v, c.readOK(err)
}

// readOK reports whether a read's routing and catch-up succeeded; if not, it logs why and
// closes the connection.
func (c *conn) readOK(err error) bool {
	if err == nil {
		return true
	}
	var cu *router.CatchUpError
	if errors.As(err, &cu) {
		c.catchUpFailed(cu.Shard, cu.Err)
		return false
	}
	c.s.o.Log.Warn("read cannot be routed, closing connection", "session", sessionHex(c.sessionID), "err", err)
	go c.close("read cannot be routed")
	return false
}

// moved reports whether path no longer lives on sh (its subtree moved since it was looked up).
func (c *conn) moved(path string, sh *router.Shard) bool { return c.s.o.Router.Lookup(path) != sh }

func (c *conn) catchUpFailed(sh *router.Shard, err error) {
	c.s.o.Log.Warn("shard replica cannot catch up for a read, closing connection", "shard", sh.ID,
		"session", sessionHex(c.sessionID), "err", err)
	go c.close("shard replica cannot catch up")
}

// writeBarrier keeps a session's writes in order across shards for writes that do not join a
// group (group.go): a write to another shard than the previous write (or any cross-shard
// transaction, key 0) waits until every earlier request has its reply. Writes to one shard
// keep pipelining (its proposer applies them in order). The
// first write after a take-over also waits for the new owner's record on every shard (owner.go).
func (c *conn) writeBarrier(key uint64) bool {
	if !c.awaitOwned() {
		return false
	}
	if c.lastWriteShard != key || key == 0 {
		if !c.waitIdle() {
			return false
		}
	}
	c.lastWriteShard = key
	return true
}

// handleTxn runs a write that spans shards as a cross-shard transaction and queues its reply in
// order. single is true when the client sent one create or delete (not a multi).
func (c *conn) handleTxn(h wire.RequestHeader, m wire.MultiRequest, roles map[uint64][]shard.TxnRole, single bool) bool {
	if !c.writeBarrier(0) {
		return false
	}
	parts := make([]*router.Shard, 0, len(roles))
	for id := range roles {
		if sh := c.s.o.Router.Shard(id); sh != nil {
			parts = append(parts, sh)
		}
	}
	sl := c.reserve("write", parts...)
	req := &router.TxnRequest{Session: c.sessionID, Epoch: c.epoch, Auth: c.AuthIDs(), MinZxid: c.lastZxid.Load(), Multi: m}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
		defer cancel()
		c.runTxn(ctx, sl, h, req, roles, single)
	}()
	return true
}

// runTxn runs a cross-shard transaction and completes its slot with the reply.
func (c *conn) runTxn(ctx context.Context, sl *slot, h wire.RequestHeader, req *router.TxnRequest, roles map[uint64][]shard.TxnRole, single bool) {
	c.written.noteRoles(roles)
	res, err := c.s.o.Router.RunTxn(ctx, req, roles)
	if err != nil {
		c.writeFailed(sl, err)
		return
	}
	c.auditTxn(h.Op, &req.Multi, single, res)
	if !single {
		if res.Failed && res.Results == nil {
			c.complete(sl, c.frame(h.Xid, res.FailErr, 0, nil))
			c.countReply(res.FailErr)
			return
		}
		c.complete(sl, c.frame(h.Xid, wire.ErrOK, res.Zxid, encodeRecord(&wire.MultiResponse{Results: res.Results})))
		c.countReply(wire.ErrOK)
		return
	}
	if res.Failed {
		if res.FailErr == wire.ErrSessionMoved {
			c.logSessionMoved(h.Op)
		}
		c.complete(sl, c.frame(h.Xid, res.FailErr, 0, nil))
		c.countReply(res.FailErr)
		return
	}
	var body []byte
	r := res.Results[0]
	switch h.Op {
	case wire.OpCreate:
		body = encodeRecord(&wire.CreateResponse{Path: r.Path})
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		body = encodeRecord(&wire.Create2Response{Path: r.Path, Stat: r.Stat})
	}
	c.complete(sl, c.frame(h.Xid, wire.ErrOK, res.Zxid, body))
	c.countReply(wire.ErrOK)
}

// completeWrite queues the reply of a write its shard applied; rec is its decoded request.
func (c *conn) completeWrite(sl *slot, h wire.RequestHeader, rec wire.Record, res shard.OpResult) {
	c.auditReply(h.Op, rec, res.Err, res.Body)
	if res.Err == wire.ErrSessionMoved {
		c.logSessionMoved(h.Op)
	}
	var b []byte
	if res.Err == wire.ErrOK || h.Op == wire.OpMulti {
		b = res.Body
	}
	c.complete(sl, c.frame(h.Xid, res.Err, res.Zxid, b))
	c.countReply(res.Err)
}

// maxReroutes bounds how often one write follows a moving subtree.
const maxReroutes = 8

// reroute proposes again a write its shard (from) sent back with shard.ErrMoved (its subtree
// moved away, or it was issued before a move of that shard; moveZxid is the move's zxid): planned
// again with the mount table (which this server's replica of the source updated when it
// applied the move), with MinZxid at least moveZxid and at least the zxid of every earlier
// request's reply: it waits for those first. The shard sends back every write issued before
// the move, so a session's writes keep their order (docs/design.md, "Subtree moves").
func (c *conn) reroute(sl *slot, h wire.RequestHeader, rec wire.Record, op shard.Op, from uint64, moveZxid int64) {
	go func() {
		// Every earlier request's reply first, rerouted ones included: the shard's batches
		// complete on their own goroutines, so neither the order in which sent-back writes
		// arrive here nor lastZxid (an earlier write applied just before the move may not have
		// raised it yet) follows the request order; the reply order does.
		if !c.waitEarlier(sl) {
			c.complete(sl, nil)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
		defer cancel()
		type result struct {
			res shard.OpResult
			err error
		}
		for attempt := 0; attempt < maxReroutes; attempt++ {
			c.s.stats.rerouted.Add(1)
			c.s.o.Metrics.rerouted.Inc()
			op.MinZxid = max(op.MinZxid, c.lastZxid.Load(), moveZxid)
			plan := c.s.o.Router.PlanWrite(h.Op, rec)
			if plan.Roles != nil {
				req := &router.TxnRequest{Session: op.Session, Epoch: op.Epoch, Auth: op.Auth, MinZxid: op.MinZxid, Multi: plan.Multi}
				c.runTxn(ctx, sl, h, req, plan.Roles, plan.Single)
				return
			}
			if plan.Shard == nil {
				c.complete(sl, c.frame(h.Xid, wire.ErrSystemError, 0, nil))
				return
			}
			// Issued again against this server's current view of its shard, which holds the
			// move that sent it back if that was this shard (the reply came from this replica's
			// apply).
			op.ViewZxid = 0
			if v := plan.Shard.View(); v != nil {
				op.ViewZxid = v.Zxid()
			}
			if plan.Shard.ID == from {
				op.ViewZxid = max(op.ViewZxid, moveZxid)
			}
			got := make(chan result, 1)
			c.written.note(plan.Shard.ID)
			plan.Shard.Proposer.Submit(&router.Request{Op: op, Done: func(res shard.OpResult, err error) {
				got <- result{res, err}
			}})
			var r result
			select {
			case r = <-got:
			case <-ctx.Done():
				c.writeFailed(sl, ctx.Err())
				return
			}
			if r.err != nil {
				c.writeFailed(sl, r.err)
				return
			}
			if r.res.Err == shard.ErrMoved {
				from, moveZxid = plan.Shard.ID, r.res.Zxid
				continue
			}
			c.completeWrite(sl, h, rec, r.res)
			return
		}
		c.writeFailed(sl, errors.New("server: the write's subtree kept moving"))
	}()
}

// writeFailed ends a write whose proposal (or transaction) returned an error: the server is
// shutting down, or the outcome is unknown. Like ZooKeeper losing its leader with requests in
// flight, the connection is dropped; the client sees CONNECTIONLOSS and re-checks.
func (c *conn) writeFailed(sl *slot, err error) {
	c.complete(sl, nil)
	if errors.Is(err, router.ErrStopped) {
		go c.close("server shutting down")
		return
	}
	c.s.o.Log.Warn("write outcome unknown, closing connection", "session", sessionHex(c.sessionID), "err", err)
	go c.close("write outcome unknown")
}
