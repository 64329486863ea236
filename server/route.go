package server

import (
	"context"
	"errors"

	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// readView returns the view of sh a read of this connection may use: one that reflects every
// write of sh committed before the connection observed its last zxid (router.EnsureClosed), so
// a session never reads older state on one shard than it saw on another. A connection holding
// watches also catches up every other shard to the returned view's zxid, so that the events of
// changes the reply may depend on are queued before it. ok is false when the shard could not
// catch up within the session timeout; the connection is then closed (the client reconnects,
// as after a lost server).
func (c *conn) readView(sh *router.Shard) (v *shard.View, ok bool) {
	r := c.s.o.Router
	d := c.lastZxid.Load()
	if v = sh.View(); v != nil && v.Zxid() >= d && !c.watched.Load() {
		return v, true // fast path: nothing to wait for
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
	defer cancel()
	if err := r.EnsureClosed(ctx, sh, d); err != nil {
		c.catchUpFailed(sh, err)
		return nil, false
	}
	v = sh.View()
	if c.watched.Load() {
		for _, o := range r.Shards() {
			if o == sh {
				continue
			}
			if err := r.EnsureClosed(ctx, o, v.Zxid()); err != nil {
				c.catchUpFailed(o, err)
				return nil, false
			}
		}
	}
	return v, true
}

func (c *conn) catchUpFailed(sh *router.Shard, err error) {
	c.s.o.Log.Warn("shard replica cannot catch up for a read, closing connection", "shard", sh.ID,
		"session", sessionHex(c.sessionID), "err", err)
	go c.close("shard replica cannot catch up")
}

// writeBarrier keeps a session's writes in order across shards: a write to another shard than
// the previous write (or any cross-shard transaction, key 0) waits until every earlier request
// has its reply. Writes to one shard keep pipelining (its proposer applies them in order).
func (c *conn) writeBarrier(key uint64) bool {
	if c.lastWriteShard != key || key == 0 {
		if !c.waitIdle() {
			return false
		}
	}
	c.lastWriteShard = key
	return true
}

// singleAsMulti wraps a create or delete of a top-level znode on another shard than "/" in a
// one-op multi, so that it runs as a cross-shard transaction.
func singleAsMulti(op wire.OpCode, rec wire.Record) (wire.MultiRequest, bool) {
	var m wire.MultiOp
	switch r := rec.(type) {
	case *wire.CreateRequest:
		m = wire.MultiOp{Op: op, Create: r}
		if op == wire.OpCreateContainer {
			// A multi decides a create's node type by its flags; the single request by opcode.
			cp := *r
			cp.Flags = wire.FlagContainer
			m.Create = &cp
		}
	case *wire.CreateTTLRequest:
		m = wire.MultiOp{Op: op, CreateTTL: r}
	case *wire.DeleteRequest:
		m = wire.MultiOp{Op: op, Delete: r}
	default:
		return wire.MultiRequest{}, false
	}
	return wire.MultiRequest{Ops: []wire.MultiOp{m}}, true
}

// handleTxn runs a write that spans shards as a cross-shard transaction and queues its reply in
// order. single is true when the client sent one create or delete (not a multi).
func (c *conn) handleTxn(h wire.RequestHeader, m wire.MultiRequest, roles map[uint64][]shard.TxnRole, single bool) bool {
	if !c.writeBarrier(0) {
		return false
	}
	sl := c.reserve("write")
	req := &router.TxnRequest{Session: c.sessionID, Auth: c.AuthIDs(), MinZxid: c.lastZxid.Load(), Multi: m}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
		defer cancel()
		res, err := c.s.o.Router.RunTxn(ctx, req, roles)
		if err != nil {
			c.writeFailed(sl, err)
			return
		}
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
	}()
	return true
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
