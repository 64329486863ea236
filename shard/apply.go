package shard

import (
	"encoding/binary"

	"github.com/corral/corral/wire"
)

// Apply applies one batch and returns its result and the watch events it produced, in order.
// It is a pure function of (state, batch): no clock, no randomness, no dependence on map order.
//
// While the shard holds a prepared transaction, a batch that is not a control batch is
// BatchBlocked and changes nothing (not even the proposer table; only the advisory count of
// blocked batches, View.BlockedBatches, which decides no outcome) when one of its ops
// touches a key the transaction locked, is a closeSession, or would get a zxid counter at or
// above the transaction's reserved floor (blockedByPrepared); and, so that the proposer backs
// off instead of re-proposing at once, when it is out of order (its predecessor most likely is
// blocked). Other batches apply as usual. A batch from
// an unknown proposer must have Seq 1; a known proposer's batch must have Seq last+1. A batch
// with an older Seq is a duplicate (BatchDuplicate with the cached results, or
// BatchDuplicateUnknown once they are evicted); any other Seq is BatchOutOfOrder. A write of a
// session whose recorded ownership epoch is above the op's fails with SESSIONMOVED, and one of a
// closed session in a SessionFence batch with SESSIONEXPIRED (error txns: they consume a zxid
// and change nothing). Only
// BatchApplied changes the tree or consumes zxids. Every batch that is not blocked, whatever
// its status, lets the shard forget proposers idle for more than 24 h, and tombstones and
// transaction decisions older than 24 h (batch time).
func (s *State) Apply(b *Batch) (BatchResult, []Event) {
	held := s.prepared != nil && !b.Control
	if held && s.blockedByPrepared(b) {
		s.blocked++
		return BatchResult{Status: BatchBlocked}, nil
	}
	status, p := s.admit(b.Proposer, b.Seq)
	if held && status == BatchOutOfOrder {
		s.blocked++
		return BatchResult{Status: BatchBlocked}, nil // admit changed nothing
	}
	var res BatchResult
	var events []Event
	switch status {
	case BatchApplied:
		s.batchQuota = b.Quota
		results := make([]OpResult, len(b.Ops))
		var tapped func(i int, ok bool)
		if s.taps != nil {
			tapped = s.taps.applying(b.Proposer, b.Seq, func() *View { return s.View(s.tapShard) })
		}
		for i := range b.Ops {
			results[i] = s.applyBatchOp(b, &b.Ops[i], &events)
			if tapped != nil {
				// A write sent back to another shard is not in this state: no view holds it.
				tapped(i, results[i].Err != ErrMoved)
			}
		}
		s.finish(b.Proposer, p, b, results)
		res = BatchResult{Status: BatchApplied, Results: results}
	case BatchDuplicate:
		results, _ := p.cached(b.Seq)
		res = BatchResult{Status: BatchDuplicate, Results: results}
	default:
		res = BatchResult{Status: status}
	}
	s.forgetIdle(b.Proposer, b.Time)
	s.expireTombstones(b.Time)
	s.expireDecisions(b.Time)
	return res, events
}

// applyBatchOp applies one op of an admitted batch.
func (s *State) applyBatchOp(b *Batch, op *Op, events *[]Event) OpResult {
	if b.Control || isControlOp(op.Code) {
		return s.applyControlOp(b, op, events)
	}
	// A write of a session that moved is refused here whatever its path: sent back to
	// another shard it could land where no newer epoch was recorded.
	stale := s.sessionMoved(op)
	if z, moved := s.movedFence(op, b.Time); moved && !stale {
		return OpResult{Err: ErrMoved, Zxid: z}
	}
	zxid := nextZxid(s.lastZxid, s.cfg.Tag, b.Time, op.MinZxid)
	s.lastZxid = zxid
	if b.SessionFence && s.sessionClosed(op) {
		// An error txn, as ZooKeeper makes of a request on an expired session.
		return OpResult{Zxid: zxid, Err: wire.ErrSessionExpired}
	}
	if stale {
		// ZooKeeper's answer to a request from the server a session left (owner.go).
		return OpResult{Zxid: zxid, Err: wire.ErrSessionMoved}
	}
	return s.applyOp(op, zxid, opTime(b.Time, zxid), events)
}

// opTime is the time (ctime, mtime, TTL and tombstone decisions) of an op applied at zxid in a
// batch of the given time: the batch time, or the millisecond the zxid's counter stands for
// when the counter runs ahead of the batch clock (a MinZxid from a faster clock, more than 4096
// ops in a millisecond, or a cross-shard commit at a reserved floor). So time never goes
// backwards as zxids grow, on a shard and across shards, and a transaction's commit time (the
// millisecond of its zxid) is consistent with the zxids applied around it.
func opTime(time, zxid int64) int64 { return max(time, ZxidCounter(zxid)>>timeShift) }

// applyOp applies one op under zxid. Every op consumes its zxid, whether it succeeds or fails,
// as ZooKeeper does for error txns; an undecodable body is MARSHALLINGERROR and an opcode that
// is not a write is UNIMPLEMENTED.
func (s *State) applyOp(op *Op, zxid, time int64, events *[]Event) OpResult {
	t := &s.tx
	t.begin(zxid, time)
	t.quota = s.batchQuota
	res := OpResult{Zxid: zxid}
	d := wire.NewDecoder(op.Body)
	var body wire.Record
	var err wire.Err
	switch op.Code {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		var a createArgs
		if op.Code == wire.OpCreateTTL {
			var r wire.CreateTTLRequest
			if r.Decode(d) != nil {
				return s.fail(res, wire.ErrMarshallingError)
			}
			a = createArgs{path: r.Path, data: r.Data, acl: r.ACL, flags: r.Flags, ttl: r.TTL}
		} else {
			var r wire.CreateRequest
			if r.Decode(d) != nil {
				return s.fail(res, wire.ErrMarshallingError)
			}
			a = createArgs{path: r.Path, data: r.Data, acl: r.ACL, flags: r.Flags, ttl: -1}
		}
		var path string
		var stat wire.Stat
		path, stat, err = t.create(op.Code, &a, op.Session, op.Auth)
		if op.Code == wire.OpCreate {
			body = &wire.CreateResponse{Path: path}
		} else {
			body = &wire.Create2Response{Path: path, Stat: stat}
		}
	case wire.OpDelete, wire.OpDeleteContainer:
		var r wire.DeleteRequest
		if r.Decode(d) != nil {
			return s.fail(res, wire.ErrMarshallingError)
		}
		if op.Code == wire.OpDelete {
			err = t.delete(r.Path, r.Version, op.Auth)
		} else {
			err = t.deleteContainer(r.Path, r.Version)
		}
	case wire.OpSetData:
		var r wire.SetDataRequest
		if r.Decode(d) != nil {
			return s.fail(res, wire.ErrMarshallingError)
		}
		var stat wire.Stat
		stat, err = t.setData(r.Path, r.Data, r.Version, op.Auth)
		body = &wire.SetDataResponse{Stat: stat}
	case wire.OpSetACL:
		var r wire.SetACLRequest
		if r.Decode(d) != nil {
			return s.fail(res, wire.ErrMarshallingError)
		}
		var stat wire.Stat
		stat, err = t.setACL(r.Path, r.ACL, r.Version, op.Auth)
		body = &wire.SetACLResponse{Stat: stat}
	case wire.OpCheck:
		// A check outside a multi is a write in 3.8 (it consumes a zxid); its success reply has
		// no body (3.8 would serialise a SetDataResponse with a null stat; 3.9 sends none).
		var r wire.CheckVersionRequest
		if r.Decode(d) != nil {
			return s.fail(res, wire.ErrMarshallingError)
		}
		err = t.check(r.Path, r.Version, op.Auth)
	case wire.OpMulti:
		var r wire.MultiRequest
		if r.Decode(d) != nil || !multiWritable(&r) {
			return s.fail(res, wire.ErrMarshallingError)
		}
		results, ok := t.multi(&r, op.Session, op.Auth)
		if results == nil {
			return s.fail(res, wire.ErrMarshallingError)
		}
		if ok {
			*events = t.commit(*events)
		}
		res.Body = encode(&wire.MultiResponse{Results: results})
		return res
	case wire.OpCloseSession:
		if isCloseFence(op.Body) {
			if op.Session != 0 {
				s.addTombstone(op.Session, t.time)
				s.dropSessionOwner(op.Session)
			}
			break
		}
		if epoch, ok := closeIfOwnerEpoch(op.Body); ok {
			if s.owners[op.Session] > epoch {
				err = wire.ErrSessionMoved
				break
			}
		}
		t.closeSession(op.Session)
	case OpSessionOwner:
		err = s.applySessionOwner(op.Session, op.Body)
	case OpSetStat:
		st, ok := decodeSetStat(op.Body)
		if !ok {
			return s.fail(res, wire.ErrMarshallingError)
		}
		err = t.setStat(&st)
	default:
		return s.fail(res, wire.ErrUnimplemented)
	}
	if err != wire.ErrOK {
		return s.fail(res, err)
	}
	*events = t.commit(*events)
	if body != nil {
		res.Body = encode(body)
	}
	return res
}

// sessionClosed reports whether op is a write of a session this shard holds a tombstone of.
func (s *State) sessionClosed(op *Op) bool {
	return op.Session != 0 && op.Code != wire.OpCloseSession && s.tombstones.has(op.Session)
}

// CloseSessionFence returns the body of an OpCloseSession that only records the session's
// tombstone and deletes nothing: the first of the two rounds in which a closed session ends on
// the data shards (every shard refuses its writes before any shard deletes its ephemerals).
// An empty body closes the session: tombstone and ephemerals.
func CloseSessionFence() []byte { return []byte{closeFenceMarker} }

// CloseSessionIfOwner returns the body of an OpCloseSession that closes the session
// (tombstone and ephemerals) unless the shard records a newer ownership epoch of it than
// epoch (OpSessionOwner): then it fails with SESSIONMOVED and changes nothing. It lets the
// connection that owns a session close it on the data shards while its close is still being
// committed in the session table (docs/design.md §4, "The close in one round"): a connection
// that took the session over meanwhile either recorded its epoch here first, and this close
// does nothing here, or finds the tombstone, and can write nowhere. Format level 7.
func CloseSessionIfOwner(epoch uint64) []byte {
	return binary.AppendUvarint([]byte{closeIfOwnerMarker}, epoch)
}

const (
	closeFenceMarker   = 1
	closeIfOwnerMarker = 2
)

func isCloseFence(body []byte) bool { return len(body) == 1 && body[0] == closeFenceMarker }

// closeIfOwnerEpoch returns the epoch of a CloseSessionIfOwner body.
func closeIfOwnerEpoch(body []byte) (uint64, bool) {
	if len(body) < 2 || body[0] != closeIfOwnerMarker {
		return 0, false
	}
	r := reader{buf: body[1:]}
	e := r.uvarint()
	return e, r.finish() == nil
}

func (s *State) fail(res OpResult, err wire.Err) OpResult {
	res.Err = err
	return res
}

// encode returns a freshly allocated encoding of r.
func encode(r wire.Record) []byte {
	e := wire.NewEncoder(make([]byte, 0, 96))
	r.Encode(e)
	return e.Bytes()
}
