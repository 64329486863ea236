package shard

import (
	"github.com/corral/corral/wire"
)

// Helpers to build ops in Go tests.

func opCreate(path string, data []byte, flags int32) Op {
	return Op{Code: wire.OpCreate, Body: encode(&wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags})}
}

func opCreate2(path string, data []byte, flags int32) Op {
	return Op{Code: wire.OpCreate2, Body: encode(&wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags})}
}

func opSet(path string, data []byte, version int32) Op {
	return Op{Code: wire.OpSetData, Body: encode(&wire.SetDataRequest{Path: path, Data: data, Version: version})}
}

func opDelete(path string, version int32) Op {
	return Op{Code: wire.OpDelete, Body: encode(&wire.DeleteRequest{Path: path, Version: version})}
}

func batch(proposer, seq uint64, time int64, ops ...Op) *Batch {
	return &Batch{Proposer: proposer, Seq: seq, Time: time, Ops: ops}
}
