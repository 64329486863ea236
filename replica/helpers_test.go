package replica

import (
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// Helpers to build ops in Go tests.

func encode(r interface{ Encode(*wire.Encoder) }) []byte {
	e := wire.NewEncoder(nil)
	r.Encode(e)
	return e.Bytes()
}

func opCreate(path string, data []byte, flags int32) shard.Op {
	return shard.Op{Code: wire.OpCreate, Body: encode(&wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags})}
}

func opSet(path string, data []byte, version int32) shard.Op {
	return shard.Op{Code: wire.OpSetData, Body: encode(&wire.SetDataRequest{Path: path, Data: data, Version: version})}
}

func opDelete(path string, version int32) shard.Op {
	return shard.Op{Code: wire.OpDelete, Body: encode(&wire.DeleteRequest{Path: path, Version: version})}
}

func ownerOp(session int64, epoch uint64) shard.Op {
	return shard.Op{Code: shard.OpSessionOwner, Session: session, Body: shard.SessionOwnerBody(epoch)}
}

func batch(proposer, seq uint64, time int64, ops ...shard.Op) *shard.Batch {
	return &shard.Batch{Proposer: proposer, Seq: seq, Time: time, Ops: ops}
}

func epochOp(op shard.Op, session int64, epoch uint64) shard.Op {
	op.Session, op.Epoch = session, epoch
	return op
}
