package router

import (
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// WritePlan is where a write goes: one shard's proposer (Shard), or a cross-shard transaction
// over the shards of Roles.
type WritePlan struct {
	Shard  *Shard
	Multi  wire.MultiRequest
	Roles  map[uint64][]shard.TxnRole // nil unless the write is a transaction
	Single bool                       // a create or delete sent alone, run as a one-op multi
}

// PlanWrite decides where a decoded write goes with the current mount table: a multi over
// several shards, or the create or delete of a mount point (a top-level znode on another shard
// than "/", or an explicit or moved mount), is a cross-shard transaction; anything else goes to
// its path's shard (Shard nil: no shard serves the path). A write a move sent back is planned
// again the same way.
func (r *Router) PlanWrite(op wire.OpCode, rec wire.Record) WritePlan {
	if m, ok := rec.(*wire.MultiRequest); ok {
		one, roles := r.PlanMulti(m)
		if roles != nil {
			return WritePlan{Multi: *m, Roles: roles}
		}
		return WritePlan{Shard: one}
	}
	path, create, seq := WriteTarget(rec)
	if (create || op == wire.OpDelete) && r.MountPoint(path, seq) {
		if m, ok := SingleAsMulti(op, rec); ok {
			_, roles := r.PlanMulti(&m)
			return WritePlan{Multi: m, Roles: roles, Single: true}
		}
	}
	if create {
		return WritePlan{Shard: r.CreateShard(path, seq)}
	}
	return WritePlan{Shard: r.Lookup(path)}
}

// Issue returns what a single-shard write to sh carries from the view it is issued against, at
// nowMs (Unix ms): the view's zxid, which goes with the op (shard.Op.ViewZxid: the source of a
// move sends back every write issued against a view from before the move), and fenced, whether
// the shard moved a subtree away within shard.FenceMs. While it is fenced an earlier write of the
// session may still be sent back and proposed again elsewhere, so the session does not pipeline
// a write to sh behind its earlier ones: it waits for their replies (docs/design.md §9).
func (sh *Shard) Issue(nowMs int64) (viewZxid int64, fenced bool) {
	v := sh.View()
	if v == nil {
		return 0, false
	}
	return v.Zxid(), v.MovedOutSince(nowMs - shard.FenceMs)
}

// WriteTarget returns the path a (non-multi) write targets and whether it is a create, and a
// sequential one.
func WriteTarget(rec wire.Record) (path string, create, seq bool) {
	isSeq := func(f int32) bool {
		return f == wire.FlagPersistentSequential || f == wire.FlagEphemeralSequential || f == wire.FlagPersistentSequentialWithTTL
	}
	switch r := rec.(type) {
	case *wire.CreateRequest:
		return r.Path, true, isSeq(r.Flags)
	case *wire.CreateTTLRequest:
		return r.Path, true, isSeq(r.Flags)
	case *wire.DeleteRequest:
		return r.Path, false, false
	case *wire.SetDataRequest:
		return r.Path, false, false
	case *wire.SetACLRequest:
		return r.Path, false, false
	case *wire.CheckVersionRequest:
		return r.Path, false, false
	}
	return "/", false, false
}

// SingleAsMulti wraps a create or delete in a one-op multi: how a mount point's create or
// delete runs as a cross-shard transaction, and how a write joins a group (server/group.go).
func SingleAsMulti(op wire.OpCode, rec wire.Record) (wire.MultiRequest, bool) {
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
