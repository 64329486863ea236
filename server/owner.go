package server

import (
	"context"
	"errors"
	"time"

	"github.com/corral/corral/format"
	"github.com/corral/corral/session"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// A session's ownership epoch (docs/design.md §4, "A session's writes after it moved"): a
// connection that took a session over records its epoch on every data shard before it
// proposes a write of the session, so that no shard applies a write the previous owner issued
// after one of this connection's.

// epochs reports whether writes carry ownership epochs: from format level 2 on.
func (c *conn) epochs() bool { return c.s.o.Sessions.Table().Level() >= format.Level2 }

// recordOwner records epoch as session id's ownership epoch on every data shard and then
// closes owned. It retries until it succeeds or the connection ends (its owner: the
// connection's writer ending stops it).
func (c *conn) recordOwner(id int64, epoch uint64, owned chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.writerEnd:
			cancel()
		case <-ctx.Done():
		}
	}()
	op := shard.Op{Session: id, Code: shard.OpSessionOwner, Body: shard.SessionOwnerBody(epoch)}
	for {
		err := c.s.o.Router.OnEveryShard(ctx, op)
		switch {
		case err == nil:
			close(owned)
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, wire.ErrSessionExpired):
			// The session closed meanwhile: the table's close notice ends the connection. A
			// shard holds the tombstone of a session the table still holds open only when a
			// close's conditional round (session.Manager.closeOwned) applied there and its meta
			// close never committed (that server failed): the client asked to close it, so
			// close it, fenced, and the notice follows.
			c.s.o.Log.Info("session closed before its new owner was recorded on every shard",
				"session", sessionHex(id))
			if e, ok := c.s.o.Sessions.Table().Get(id); ok && !e.Closing {
				c.s.o.Log.Warn("a data shard holds the session closed but the session table does not; closing it",
					"session", sessionHex(id))
				if err := c.s.o.Sessions.Close(ctx, id, 0, session.Written{}); err != nil && ctx.Err() == nil {
					c.s.o.Log.Warn("closing the half-closed session failed; it will expire", "session", sessionHex(id), "err", err)
				}
			}
			return
		}
		c.s.o.Log.Warn("cannot record the session's new owner on every shard yet; its writes wait",
			"session", sessionHex(id), "epoch", epoch, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// awaitOwned blocks until the connection's ownership epoch is recorded on every data shard
// (at once when there is nothing to wait for). It returns false if the connection ends first.
func (c *conn) awaitOwned() bool {
	if c.owned == nil {
		return true
	}
	select {
	case <-c.owned:
		c.owned = nil
		return true
	case <-c.writerEnd:
		return false
	}
}

// logSessionMoved says why a write of this connection was refused with SESSIONMOVED: the
// session was taken over (by another server, or by a reconnect here) after this connection
// issued the write, which the shard applied only after the new owner's record.
func (c *conn) logSessionMoved(op wire.OpCode) {
	c.s.o.Log.Info("write refused with SESSIONMOVED: the session was taken over after this connection issued it",
		"session", sessionHex(c.sessionID), "opcode", int32(op), "epoch", c.epoch)
}
