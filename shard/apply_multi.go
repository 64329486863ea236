package shard

import "github.com/corral/corral/wire"

// multi applies a multi (14): every op runs in one txn under the multi's one zxid, each seeing
// the earlier ops' effects. On success the overlay is committed and each op reports its result
// (create -> type 1 with the path; create2, createContainer and createTTL -> type 15 with path
// and stat, as ZooKeeper 3.8.3+ does; delete -> 2; setData -> 5 with stat; check -> 13). On the
// first failure nothing is applied and every result is an error result (type -1): earlier ops
// with err 0, the failing op with its code, later ops with RUNTIMEINCONSISTENCY. The reply
// header's err is 0 either way. A multi holding read ops is MARSHALLINGERROR.
func (t *txn) multi(req *wire.MultiRequest, session int64, auth []wire.ID) ([]wire.MultiResult, bool) {
	results := make([]wire.MultiResult, len(req.Ops))
	failed := -1
	var failErr wire.Err
	for i := range req.Ops {
		op := &req.Ops[i]
		r := &results[i]
		r.Op = op.Op
		var err wire.Err
		switch op.Op {
		case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
			c := op.Create
			a := createArgs{path: c.Path, data: c.Data, acl: c.ACL, flags: c.Flags, ttl: -1}
			r.Path, r.Stat, err = t.create(op.Op, &a, session, auth)
		case wire.OpCreateTTL:
			c := op.CreateTTL
			a := createArgs{path: c.Path, data: c.Data, acl: c.ACL, flags: c.Flags, ttl: c.TTL}
			r.Path, r.Stat, err = t.create(op.Op, &a, session, auth)
		case wire.OpDelete:
			err = t.delete(op.Delete.Path, op.Delete.Version, auth)
		case wire.OpSetData:
			r.Stat, err = t.setData(op.SetData.Path, op.SetData.Data, op.SetData.Version, auth)
		case wire.OpCheck:
			err = t.check(op.Check.Path, op.Check.Version, auth)
		default:
			err = wire.ErrMarshallingError // not reachable: rejected before
		}
		if err != wire.ErrOK {
			failed, failErr = i, err
			break
		}
	}
	if failed < 0 {
		for i := range results {
			if results[i].Op == wire.OpCreateContainer || results[i].Op == wire.OpCreateTTL {
				results[i].Op = wire.OpCreate2
			}
		}
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

// multiWritable reports whether every op of req may appear in a write multi (the wire decoder
// accepts read-only multis too, for multiRead).
func multiWritable(req *wire.MultiRequest) bool {
	for i := range req.Ops {
		switch req.Ops[i].Op {
		case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL,
			wire.OpDelete, wire.OpSetData, wire.OpCheck:
		default:
			return false
		}
	}
	return true
}
