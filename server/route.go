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

// reroute proposes again a write its shard (from) sent back with shard.ErrMoved (router.Reroute:
// planned again with the mount table, MinZxid at least moveZxid and the session's zxid), once
// every earlier request's reply is queued (docs/design.md, "Subtree moves"). A write whose path
// became a mount point meanwhile runs as a cross-shard transaction.
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
		out, err := c.s.o.Router.Reroute(ctx, h.Op, rec, op, from, moveZxid, rerouteSession{c})
		n := out.Attempts // proposals; a transaction run instead is one more
		if out.Txn != nil {
			n++
		}
		c.s.stats.rerouted.Add(int64(n))
		c.s.o.Metrics.rerouted.Add(float64(n))
		switch {
		case errors.Is(err, router.ErrNoShard):
			c.complete(sl, c.frame(h.Xid, wire.ErrSystemError, 0, nil))
		case err != nil:
			c.writeFailed(sl, err)
		case out.Txn != nil:
			req := &router.TxnRequest{Session: op.Session, Epoch: op.Epoch, Auth: op.Auth, MinZxid: out.MinZxid, Multi: out.Txn.Multi}
			c.runTxn(ctx, sl, h, req, out.Txn.Roles, out.Txn.Single)
		default:
			c.completeWrite(sl, h, rec, out.Result)
		}
	}()
}

// rerouteSession is a connection's side of a rerouted write (router.RerouteSession).
type rerouteSession struct{ c *conn }

func (s rerouteSession) Seen() int64            { return s.c.lastZxid.Load() }
func (s rerouteSession) Writing(shardID uint64) { s.c.written.note(shardID) }

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
