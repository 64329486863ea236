package shard

import (
	"encoding/binary"

	"github.com/corral/corral/wire"
)

// Session ownership epochs (docs/design.md §4, "A session's writes after it moved").
//
// A server proposes a session's writes with the session's ownership epoch as that server knows
// it (Op.Epoch): the meta Raft index of the take-over that made it the owner. A server that takes
// a session over records its new epoch on every data shard (OpSessionOwner) before it proposes
// any write of the session. From then on the shard refuses, with SESSIONMOVED, every write of
// the session that carries a lower epoch: a batch the previous owner proposed before the
// session moved and proposes again later (its outcome was unknown) can no longer apply after
// the new owner's writes. Invariant: on every shard, a write of session S applied after
// OpSessionOwner(S, e) carries an epoch of at least e.
//
// The record is dropped when the session closes on the shard (its tombstone then refuses every
// write of the session) and is never added again for a closed session.

// OpSessionOwner records the ownership epoch of Op.Session on the shard (body: SessionOwnerBody).
// It is an internal op: servers at format level 2 propose it, never clients.
const OpSessionOwner wire.OpCode = 1006

// SessionOwnerBody returns the body of an OpSessionOwner recording epoch.
func SessionOwnerBody(epoch uint64) []byte { return binary.AppendUvarint(nil, epoch) }

func decodeSessionOwner(body []byte) (uint64, bool) {
	r := reader{buf: body}
	e := r.uvarint()
	return e, r.finish() == nil && e != 0
}

// sessionMoved reports whether op is a write of a session whose recorded epoch on this shard
// is above the op's: the session moved to another server (or reconnected) since the op was
// issued. An op without an epoch (an older server's, or one issued before format level 2)
// counts as epoch 0.
func (s *State) sessionMoved(op *Op) bool {
	if op.Session == 0 || op.Code == wire.OpCloseSession || op.Code == OpSessionOwner {
		return false
	}
	e, ok := s.owners[op.Session]
	return ok && op.Epoch < e
}

// applySessionOwner records the session's epoch (the larger of the recorded one and epoch).
func (s *State) applySessionOwner(session int64, body []byte) wire.Err {
	epoch, ok := decodeSessionOwner(body)
	if !ok || session == 0 {
		return wire.ErrMarshallingError
	}
	if s.tombstones.has(session) {
		return wire.ErrSessionExpired
	}
	if epoch > s.owners[session] {
		s.owners[session] = epoch
		if s.track {
			s.dirty.owners[session] = struct{}{}
		}
	}
	return wire.ErrOK
}

// dropSessionOwner forgets the session's epoch (the session closed on this shard).
func (s *State) dropSessionOwner(session int64) {
	if _, ok := s.owners[session]; !ok {
		return
	}
	delete(s.owners, session)
	if s.track {
		s.dirty.owners[session] = struct{}{}
	}
}
