package shard

import "github.com/corral/corral/wire"

// multi applies a multi (14): every op runs in one txn under the multi's one zxid, each seeing
// the earlier ops' effects. On success the overlay is committed and each op reports its result
// (create and create2 -> type 1 with the path, as ZooKeeper 3.8.0 does; createContainer and
// createTTL -> type 15 with path and stat; delete -> 2; setData -> 5 with stat; check -> 13). On the
// first failure nothing is applied and every result is an error result (type -1): earlier ops
// with err 0, the failing op with its code, later ops with RUNTIMEINCONSISTENCY. The reply
// header's err is 0 either way. A multi holding read ops is MARSHALLINGERROR, and so is one that
// reaches a plain create with a TTL mode (nil results); a createTTL with a mode that is not a TTL
// mode is a plain create (or createContainer) of that mode.
func (t *txn) multi(req *wire.MultiRequest, session int64, auth []wire.ID) ([]wire.MultiResult, bool) {
	results := make([]wire.MultiResult, len(req.Ops))
	failed := -1
	var failErr wire.Err
	for i := range req.Ops {
		op := &req.Ops[i]
		if multiUndecodable(op) {
			return nil, false
		}
		if err := t.multiOp(op, RoleFull, &results[i], session, auth); err != wire.ErrOK {
			failed, failErr = i, err
			break
		}
	}
	if failed < 0 {
		finalMultiResults(results)
		return results, true
	}
	for i := range results {
		r := wire.MultiResult{Op: wire.OpError}
		switch {
		case i == failed:
			r.Err = failErr
		case i > failed:
			r.Err = wire.ErrRuntimeInconsistency
		}
		results[i] = r
	}
	return results, false
}

// multiUndecodable reports whether reaching op makes the whole multi MARSHALLINGERROR: ZooKeeper
// rebuilds a multi's create from its flags (Op.create), and a TTL mode without a TTL record
// makes the multi fail to deserialize when this op is reached (no per-op results).
func multiUndecodable(op *wire.MultiOp) bool {
	switch op.Op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		return op.Create.Flags == wire.FlagPersistentWithTTL || op.Create.Flags == wire.FlagPersistentSequentialWithTTL
	}
	return false
}

// multiOp applies one op of a multi in role (RoleFull inside a plain multi) and fills r with its
// success result in raw form (finalMultiResults turns it into what the multi reports). The op
// must have passed multiWritable and multiUndecodable. setData and check ignore the role.
func (t *txn) multiOp(op *wire.MultiOp, role TxnRole, r *wire.MultiResult, session int64, auth []wire.ID) wire.Err {
	r.Op = op.Op
	var err wire.Err
	switch op.Op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		c := op.Create
		a := createArgs{path: c.Path, data: c.Data, acl: c.ACL, flags: c.Flags, ttl: -1}
		code := op.Op
		// ZooKeeper rebuilds a multi's create from its flags (Op.create), so inside a
		// multi a plain create with the container flag becomes createContainer, and a
		// createContainer without it a plain create.
		switch {
		case c.Flags == wire.FlagContainer:
			code, r.Op = wire.OpCreateContainer, wire.OpCreateContainer
		case code == wire.OpCreateContainer:
			code, r.Op = wire.OpCreate, wire.OpCreate
		}
		r.Path, r.Stat, err = t.createAs(role, code, &a, session, auth)
	case wire.OpCreateTTL:
		c := op.CreateTTL
		a := createArgs{path: c.Path, data: c.Data, acl: c.ACL, flags: c.Flags, ttl: c.TTL}
		code := op.Op
		if c.Flags != wire.FlagPersistentWithTTL && c.Flags != wire.FlagPersistentSequentialWithTTL {
			// ZooKeeper's Op.create(path, data, acl, flags, ttl) builds a createTTL with
			// a mode that is not a TTL mode as a plain create of that mode, dropping the
			// TTL: a container for the container flag, else a create (whose unknown
			// flags then fail with BADARGUMENTS).
			a.ttl = -1
			code = wire.OpCreate
			if a.flags == wire.FlagContainer {
				code = wire.OpCreateContainer
			}
			r.Op = code
		}
		r.Path, r.Stat, err = t.createAs(role, code, &a, session, auth)
	case wire.OpDelete:
		err = t.deleteAs(role, op.Delete.Path, op.Delete.Version, auth)
	case wire.OpSetData:
		r.Stat, err = t.setData(op.SetData.Path, op.SetData.Data, op.SetData.Version, auth)
	case wire.OpCheck:
		err = t.check(op.Check.Path, op.Check.Version, auth)
	default:
		err = wire.ErrMarshallingError // not reachable: rejected before
	}
	return err
}

// finalMultiResults turns raw success results into what a successful multi reports; zero
// entries (ops of other shards in a transaction) stay zero. A create reported as a plain create
// keeps its stat, which the wire encoding of a type 1 result omits: a transaction's coordinator
// needs it to answer a top-level create2 that it ran as a transaction.
func finalMultiResults(results []wire.MultiResult) {
	for i := range results {
		switch results[i].Op {
		case wire.OpCreateContainer, wire.OpCreateTTL:
			results[i].Op = wire.OpCreate2
		case wire.OpCreate2:
			// ZooKeeper 3.8.0 (Debian's package, our reference) reports create2 inside a
			// multi as a plain create without stat; 3.8.3+ (ZOOKEEPER-4026) reports type 15.
			results[i].Op = wire.OpCreate
		}
	}
}

// multiWritable reports whether every op of req may appear in a write multi (the wire decoder
// accepts read-only multis too, for multiRead).
func multiWritable(req *wire.MultiRequest) bool {
	for i := range req.Ops {
		if !multiOpWritable(req.Ops[i].Op) {
			return false
		}
	}
	return true
}

// multiOpWritable reports whether an op with this code may be in a write multi.
func multiOpWritable(op wire.OpCode) bool {
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL,
		wire.OpDelete, wire.OpSetData, wire.OpCheck:
		return true
	}
	return false
}
