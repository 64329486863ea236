package router

import (
	"context"
	"errors"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// maxReroutes bounds how often one write follows a moving subtree.
const maxReroutes = 8

// ErrKeptMoving: a write followed its subtree maxReroutes times and every shard sent it back.
var ErrKeptMoving = errors.New("router: the write's subtree kept moving")

// RerouteSession is the session's side of a rerouted write.
type RerouteSession interface {
	// Seen returns the highest zxid the session has seen; every attempt's MinZxid is at least
	// that, so the write takes a zxid above every earlier write of the session.
	Seen() int64
	// Writing is called with a shard's id before the write is submitted to it (the session
	// notes the shards it wrote to, which its close must reach).
	Writing(shardID uint64)
}

// Rerouted is where a rerouted write ended: Result, the reply of the shard that applied it, or,
// when its path became a mount point meanwhile, Txn, the plan of the cross-shard transaction the
// caller runs instead (with MinZxid). Attempts counts the proposals made.
type Rerouted struct {
	Result   shard.OpResult
	Txn      *WritePlan
	MinZxid  int64
	Attempts int
}

// Reroute proposes again a write (decoded as rec, proposed as op) that shard from sent back with
// shard.ErrMoved (its subtree moved away, or it was issued against a view from before a move of
// that shard; moveZxid is the move's zxid), where the mount table (which this server's replica
// of the source updated when it applied the move) now puts it, and follows the subtree while
// it keeps moving. The caller calls it only once every earlier request of the session has its
// reply (the shard sends back every write issued before a move, so they are reproposed in
// request order: docs/design.md §9).
//
// Each attempt's MinZxid is at least the session's zxid and the move's, and its ViewZxid is this
// server's current view of the target shard, which holds the move that sent the write back if
// that was the target: the target then applies it rather than sending it back again.
func (r *Router) Reroute(ctx context.Context, code wire.OpCode, rec wire.Record, op shard.Op, from uint64, moveZxid int64, s RerouteSession) (Rerouted, error) {
	type result struct {
		res shard.OpResult
		err error
	}
	var out Rerouted
	for out.Attempts < maxReroutes {
		op.MinZxid = max(op.MinZxid, s.Seen(), moveZxid)
		plan := r.PlanWrite(code, rec)
		if plan.Roles != nil {
			out.Txn, out.MinZxid = &plan, op.MinZxid
			return out, nil
		}
		if plan.Shard == nil {
			return out, ErrNoShard
		}
		op.ViewZxid = 0
		if v := plan.Shard.View(); v != nil {
			op.ViewZxid = v.Zxid()
		}
		if plan.Shard.ID == from {
			op.ViewZxid = max(op.ViewZxid, moveZxid)
		}
		got := make(chan result, 1)
		s.Writing(plan.Shard.ID)
		out.Attempts++
		plan.Shard.Proposer.Submit(&Request{Op: op, Done: func(res shard.OpResult, err error) {
			got <- result{res, err}
		}})
		var res result
		select {
		case res = <-got:
		case <-ctx.Done():
			return out, ctx.Err()
		}
		if res.err != nil {
			return out, res.err
		}
		if res.res.Err != shard.ErrMoved {
			out.Result = res.res
			return out, nil
		}
		from, moveZxid = plan.Shard.ID, res.res.Zxid
	}
	return out, ErrKeptMoving
}
