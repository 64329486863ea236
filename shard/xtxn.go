package shard

import (
	"encoding/binary"
	"fmt"

	"github.com/corral/corral/wire"
)

// Cross-shard transactions: the participant side of a two-phase commit (see doc.go, "Cross-shard
// transactions"). A coordinator (the router) proposes these ops in control batches
// (Batch.Control); a shard never accepts them from clients, and the server only routes client
// opcodes to the shard.

// Internal op codes of the cross-shard transaction protocol. Each travels as an Op whose Body is
// the encoded TxnPrepare, TxnCommit, TxnAbort or TxnResolve, inside a control batch; its result's
// Body is the encoded TxnReply.
const (
	OpTxnPrepare wire.OpCode = 1001
	OpTxnCommit  wire.OpCode = 1002
	OpTxnAbort   wire.OpCode = 1003
	OpTxnResolve wire.OpCode = 1004
)

// isTxnOp reports whether code is one of the transaction ops.
func isTxnOp(code wire.OpCode) bool { return code >= OpTxnPrepare && code <= OpTxnResolve }

// isControlOp reports whether code belongs in control batches only: a transaction op or
// OpAddShard. Such an op consumes no zxid and touches no znode.
func isControlOp(code wire.OpCode) bool { return isTxnOp(code) || code == OpAddShard }

// TxnRole is what one op of a transaction's multi means to one participant.
type TxnRole uint8

// Roles.
const (
	// RoleNone: the op belongs to another shard; this shard skips it.
	RoleNone TxnRole = iota
	// RoleFull: an ordinary op, evaluated exactly as inside a single-shard multi.
	RoleFull
	// RoleNode: the node side of a top-level (mount-point) create or delete: the node lives on
	// this shard, its parent "/" does not. Only the checks that do not involve the parent run;
	// a create uses its path as given (never appends a sequential suffix).
	RoleNode
	// RoleParent: the parent side of a top-level create or delete: this shard holds "/" and
	// keeps a stub child entry for the node (see doc.go, "Stubs").
	RoleParent
)

// TxnPrepare asks a participant to validate its ops of a transaction and lock the shard.
type TxnPrepare struct {
	ID       uint64 // nonzero, chosen by the coordinator (random)
	Anchor   uint64 // shard id of the anchor participant, which records the decision
	Deadline int64  // Unix ms; after it any server may resolve the txn at the anchor
	Internal bool   // server-generated (container/TTL expiry): skip every ACL check
	// Multi is the client multi, index-aligned with Roles: this shard's ops, and another
	// shard's as a placeholder where ParticipantMulti put one (older coordinators sent all).
	Multi wire.MultiRequest
	Roles []TxnRole // len == len(Multi.Ops)
	// Move, when set, makes the transaction a subtree move (see move.go); Multi then has no
	// ops.
	Move *MoveSpec
	// Group makes the ops independent writes of one session committed together (a group
	// transaction, docs/design.md §8; format.Level4): an op that fails reports its error in its
	// result and changes nothing, and the others still apply. Not with Move. A group commits
	// once every participant holds it prepared (no decision at the anchor), so its prepare
	// names every participant (Parts, ascending; the anchor, whose tag its zxids carry, first)
	// for recovery to probe (TxnResolve.Probe).
	Group bool
	Parts []uint64
	// Quota is how the transaction's ops treat quotas, as Batch.Quota for a batch
	// (format.LevelQuota: prepare versions 4 and 5). The commit evaluates the ops with the
	// prepare's mode, so prepare and commit agree.
	Quota QuotaMode
	// Cut makes the transaction a backup's consistent cut (cut.go; format.LevelCut): no ops, it
	// locks the whole shard while prepared and never commits.
	Cut bool
}

// ParticipantMulti returns the multi a participant with roles needs in its prepare: its own
// ops, and in place of each other shard's op a small placeholder (a check of "/"), so that a
// transaction's data travel to, are logged by and are decoded on only the shards that hold
// them. ZooKeeper's index alignment is kept (results, GroupZxid and failure indexes are per
// op index).
//
// Invariant: a participant evaluates the returned multi exactly as the whole one. Evaluation
// (evalTxn) reads another shard's op only in the whole-request checks, multiWritable and
// multiUndecodable, so an op stays as it is unless both pass for it and for the placeholder:
// a read op (the request is MARSHALLINGERROR) or a plain create with a TTL mode (MARSHALLINGERROR
// once reached) is kept. The placeholders share one record, which nothing writes.
func ParticipantMulti(m *wire.MultiRequest, roles []TxnRole) wire.MultiRequest {
	if len(roles) != len(m.Ops) {
		return *m
	}
	ops := make([]wire.MultiOp, len(m.Ops))
	for i := range m.Ops {
		op := &m.Ops[i]
		if roles[i] == RoleNone && multiOpWritable(op.Op) && !multiUndecodable(op) {
			ops[i] = placeholderOp
			continue
		}
		ops[i] = *op
	}
	return wire.MultiRequest{Ops: ops}
}

// placeholderOp stands in a prepare for another participant's op (ParticipantMulti).
var placeholderOp = wire.MultiOp{Op: wire.OpCheck, Check: &wire.CheckVersionRequest{Path: "/", Version: -1}}

// TxnCommit commits a prepared transaction under zxid Zxid; Time is the txn's ctime/mtime
// (Unix ms).
type TxnCommit struct {
	ID   uint64
	Zxid int64
	Time int64
}

// TxnAbort aborts a transaction (prepared or not: an unknown one is recorded as aborted, so a
// late prepare is refused).
type TxnAbort struct{ ID uint64 }

// TxnResolve asks the anchor for a transaction's decision; an undecided transaction is aborted.
// With Probe (a group transaction's recovery, format.Level4), asked of any participant, it
// reports the participant's state instead: its decision, or TxnPrepared with the floor while it
// holds the transaction prepared; a participant that knows nothing of the transaction records
// it aborted (so a late prepare fails) and says TxnAborted. A prepared transaction is left
// alone.
type TxnResolve struct {
	ID    uint64
	Probe bool
}

// TxnOutcome is a participant's answer to a transaction op.
type TxnOutcome uint8

// Outcomes.
const (
	// TxnPrepared: validated and locked; Floor and Results are set.
	TxnPrepared TxnOutcome = iota + 1
	// TxnFailed: an op failed validation; nothing locked; FailIndex and FailErr are set.
	TxnFailed
	// TxnBusy: another transaction is prepared here; nothing locked.
	TxnBusy
	// TxnCommitted: (commit, resolve, abort or prepare of a committed txn) Zxid is set; Results
	// are set on the commit that applied it.
	TxnCommitted
	// TxnAborted: (abort, resolve, commit or prepare of an aborted or unknown txn).
	TxnAborted
)

// TxnReply is the body of a transaction op's result.
type TxnReply struct {
	Outcome TxnOutcome
	// Floor (TxnPrepared) is the reserved zxid counter: max(last>>8 + 1, batch.Time<<12,
	// op.MinZxid>>8 + 1) (the counter this shard would assign next, see doc.go, "Zxids"),
	// raised to (batch.Time + reserveMs)<<12. While prepared, the shard assigns only counters
	// below it. The commit zxid must have a counter >= every participant's floor.
	Floor int64
	// FailIndex (TxnFailed) is the index in Multi.Ops of this shard's first failing op, or -1
	// when the whole request is MARSHALLINGERROR.
	FailIndex int32
	FailErr   wire.Err // TxnFailed
	Zxid      int64    // TxnCommitted
	// Results (TxnPrepared, TxnCommitted) has len(Multi.Ops) entries: this shard's ops in final
	// form (what a single-shard multi reports on success), RoleNone entries zero. A RoleParent
	// create carries the final path (sequential suffix resolved), a RoleNode create path and
	// stat. Prepare reports provisional values (stats under the provisional zxid and time).
	Results []wire.MultiResult
}

// Encodings of the transaction records (all integers varint-encoded, as the batch codec):
//
//	TxnPrepare: u8 version (1, 2 with a move, 3 for a group, 4 and 5 as 1 and 3 with quotas,
//	            6 for a cut) | uvarint ID | uvarint Anchor | varint Deadline
//	            | u8 Internal | bytes Multi (wire-encoded MultiRequest) | uvarint len(Roles)
//	            | u8 role... | (version 2) MoveSpec | (versions 3, 5) uvarint len(Parts) | uvarint id...
//	            | (versions 4, 5) u8 Quota
//	TxnCommit:  u8 version | uvarint ID | varint Zxid | varint Time
//	TxnAbort, TxnResolve: u8 version (TxnResolve: 2 for a probe) | uvarint ID
//	TxnReply:   u8 version | u8 Outcome | varint Floor | varint FailIndex | varint FailErr
//	            | varint Zxid | uvarint len(Results)+1 (0: nil) | result...
//	result:     varint Op | varint Err | str Path | 11 varints Stat | bytes Data
//	            | uvarint len(Children)+1 (0: nil) | str child...
//
// Decoders never panic, reject trailing bytes and wrap ErrMalformedTxn.
const (
	txnCodecVersion   = 1
	txnPrepareMoveV2  = 2 // a TxnPrepare carrying a MoveSpec
	txnPrepareGroupV3 = 3 // a TxnPrepare with Group set (format.Level4)
	// Versions 4 and 5 are versions 1 and 3 followed by a Quota byte (format.LevelQuota). A
	// move carries no quota mode (a move never counts).
	txnPrepareQuotaV4      = 4
	txnPrepareGroupQuotaV5 = 5
	txnPrepareCutV6        = 6 // a TxnPrepare with Cut set (format.LevelCut): no more fields than version 1
)

// AppendTo appends the encoding of p to dst.
func (p *TxnPrepare) AppendTo(dst []byte) []byte {
	quota := p.Quota != QuotaOff && p.Move == nil
	switch {
	case p.Cut:
		dst = append(dst, txnPrepareCutV6)
	case p.Move != nil:
		dst = append(dst, txnPrepareMoveV2)
	case p.Group && quota:
		dst = append(dst, txnPrepareGroupQuotaV5)
	case p.Group:
		dst = append(dst, txnPrepareGroupV3)
	case quota:
		dst = append(dst, txnPrepareQuotaV4)
	default:
		dst = append(dst, txnCodecVersion)
	}
	dst = binary.AppendUvarint(dst, p.ID)
	dst = binary.AppendUvarint(dst, p.Anchor)
	dst = binary.AppendVarint(dst, p.Deadline)
	dst = appendBool(dst, p.Internal)
	e := wire.NewEncoder(nil)
	p.Multi.Encode(e)
	dst = appendBytes(dst, e.Bytes())
	dst = binary.AppendUvarint(dst, uint64(len(p.Roles)))
	for _, r := range p.Roles {
		dst = append(dst, byte(r))
	}
	if p.Move != nil {
		dst = p.Move.appendTo(dst)
	}
	if p.Group && p.Move == nil {
		dst = binary.AppendUvarint(dst, uint64(len(p.Parts)))
		for _, id := range p.Parts {
			dst = binary.AppendUvarint(dst, id)
		}
	}
	if quota {
		dst = append(dst, byte(p.Quota))
	}
	return dst
}

// DecodeTxnPrepare decodes a TxnPrepare. The multi's records alias b. Roles must be as many as
// the multi's ops and each a known role.
func DecodeTxnPrepare(b []byte) (TxnPrepare, error) {
	r := reader{buf: b}
	var p TxnPrepare
	v := r.byte()
	if (v < txnCodecVersion || v > txnPrepareCutV6) && r.err == nil {
		return TxnPrepare{}, fmt.Errorf("%w: prepare version %d", ErrMalformedTxn, v)
	}
	quota := v == txnPrepareQuotaV4 || v == txnPrepareGroupQuotaV5
	p.Cut = v == txnPrepareCutV6
	if v == txnPrepareGroupQuotaV5 {
		v = txnPrepareGroupV3
	}
	p.Group = v == txnPrepareGroupV3
	p.ID = r.uvarint()
	p.Anchor = r.uvarint()
	p.Deadline = r.varint()
	p.Internal = r.bool()
	multi := r.bytes()
	n := r.count(1)
	if n > 0 {
		p.Roles = make([]TxnRole, n)
		for i := range p.Roles {
			p.Roles[i] = TxnRole(r.byte())
			if p.Roles[i] > RoleParent {
				r.fail("role")
			}
		}
	}
	if v == txnPrepareMoveV2 {
		p.Move = decodeMoveSpec(&r)
	}
	if v == txnPrepareGroupV3 {
		if n := r.count(1); n > 0 {
			p.Parts = make([]uint64, n)
			for i := range p.Parts {
				p.Parts[i] = r.uvarint()
			}
		}
	}
	if quota {
		p.Quota = QuotaMode(r.byte())
		if r.err == nil && (p.Quota == QuotaOff || p.Quota > QuotaEnforce) {
			r.fail("quota mode")
		}
	}
	if err := r.finish(); err != nil {
		return TxnPrepare{}, fmt.Errorf("%w: prepare: %v", ErrMalformedTxn, err)
	}
	d := wire.NewDecoder(multi)
	if err := p.Multi.Decode(d); err != nil {
		return TxnPrepare{}, fmt.Errorf("%w: prepare multi: %v", ErrMalformedTxn, err)
	}
	if d.Remaining() != 0 {
		return TxnPrepare{}, fmt.Errorf("%w: prepare multi: trailing bytes", ErrMalformedTxn)
	}
	if len(p.Roles) != len(p.Multi.Ops) {
		return TxnPrepare{}, fmt.Errorf("%w: %d roles for %d ops", ErrMalformedTxn, len(p.Roles), len(p.Multi.Ops))
	}
	return p, nil
}

// AppendTo appends the encoding of c to dst.
func (c *TxnCommit) AppendTo(dst []byte) []byte {
	dst = append(dst, txnCodecVersion)
	dst = binary.AppendUvarint(dst, c.ID)
	dst = binary.AppendVarint(dst, c.Zxid)
	return binary.AppendVarint(dst, c.Time)
}

// DecodeTxnCommit decodes a TxnCommit.
func DecodeTxnCommit(b []byte) (TxnCommit, error) {
	r := reader{buf: b}
	var c TxnCommit
	if v := r.byte(); v != txnCodecVersion && r.err == nil {
		return TxnCommit{}, fmt.Errorf("%w: commit version %d", ErrMalformedTxn, v)
	}
	c.ID, c.Zxid, c.Time = r.uvarint(), r.varint(), r.varint()
	if err := r.finish(); err != nil {
		return TxnCommit{}, fmt.Errorf("%w: commit: %v", ErrMalformedTxn, err)
	}
	return c, nil
}

// AppendTo appends the encoding of a to dst.
func (a *TxnAbort) AppendTo(dst []byte) []byte { return appendTxnID(dst, a.ID) }

// DecodeTxnAbort decodes a TxnAbort.
func DecodeTxnAbort(b []byte) (TxnAbort, error) {
	id, err := decodeTxnID(b, "abort")
	return TxnAbort{ID: id}, err
}

// txnProbeVersion marks a TxnResolve that probes (format.Level4).
const txnProbeVersion = 2

// AppendTo appends the encoding of r to dst.
func (r *TxnResolve) AppendTo(dst []byte) []byte {
	if r.Probe {
		return binary.AppendUvarint(append(dst, txnProbeVersion), r.ID)
	}
	return appendTxnID(dst, r.ID)
}

// DecodeTxnResolve decodes a TxnResolve.
func DecodeTxnResolve(b []byte) (TxnResolve, error) {
	if len(b) > 0 && b[0] == txnProbeVersion {
		r := reader{buf: b[1:]}
		id := r.uvarint()
		if err := r.finish(); err != nil {
			return TxnResolve{}, fmt.Errorf("%w: probe: %v", ErrMalformedTxn, err)
		}
		return TxnResolve{ID: id, Probe: true}, nil
	}
	id, err := decodeTxnID(b, "resolve")
	return TxnResolve{ID: id}, err
}

func appendTxnID(dst []byte, id uint64) []byte {
	return binary.AppendUvarint(append(dst, txnCodecVersion), id)
}

func decodeTxnID(b []byte, what string) (uint64, error) {
	r := reader{buf: b}
	if v := r.byte(); v != txnCodecVersion && r.err == nil {
		return 0, fmt.Errorf("%w: %s version %d", ErrMalformedTxn, what, v)
	}
	id := r.uvarint()
	if err := r.finish(); err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrMalformedTxn, what, err)
	}
	return id, nil
}

// AppendTo appends the encoding of rep to dst.
func (rep *TxnReply) AppendTo(dst []byte) []byte {
	dst = append(dst, txnCodecVersion, byte(rep.Outcome))
	dst = binary.AppendVarint(dst, rep.Floor)
	dst = binary.AppendVarint(dst, int64(rep.FailIndex))
	dst = binary.AppendVarint(dst, int64(rep.FailErr))
	dst = binary.AppendVarint(dst, rep.Zxid)
	if rep.Results == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(rep.Results))+1)
	for i := range rep.Results {
		dst = appendMultiResult(dst, &rep.Results[i])
	}
	return dst
}

func appendMultiResult(dst []byte, m *wire.MultiResult) []byte {
	dst = binary.AppendVarint(dst, int64(m.Op))
	dst = binary.AppendVarint(dst, int64(m.Err))
	dst = appendStr(dst, m.Path)
	s := &m.Stat
	for _, v := range [...]int64{s.Czxid, s.Mzxid, s.Ctime, s.Mtime, int64(s.Version), int64(s.Cversion),
		int64(s.Aversion), s.EphemeralOwner, int64(s.DataLength), int64(s.NumChildren), s.Pzxid} {
		dst = binary.AppendVarint(dst, v)
	}
	dst = appendBytes(dst, m.Data)
	if m.Children == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(m.Children))+1)
	for _, c := range m.Children {
		dst = appendStr(dst, c)
	}
	return dst
}

// DecodeTxnReply decodes a TxnReply. Result data aliases b.
func DecodeTxnReply(b []byte) (TxnReply, error) {
	r := reader{buf: b}
	var rep TxnReply
	if v := r.byte(); v != txnCodecVersion && r.err == nil {
		return TxnReply{}, fmt.Errorf("%w: reply version %d", ErrMalformedTxn, v)
	}
	rep.Outcome = TxnOutcome(r.byte())
	if r.err == nil && (rep.Outcome < TxnPrepared || rep.Outcome > TxnAborted) {
		return TxnReply{}, fmt.Errorf("%w: outcome %d", ErrMalformedTxn, rep.Outcome)
	}
	rep.Floor = r.varint()
	rep.FailIndex = r.int32()
	rep.FailErr = wire.Err(r.int32())
	rep.Zxid = r.varint()
	// a result takes at least 15 bytes (two varints, an empty string, 11 varints, nil data,
	// nil children); nil is encoded as count 0, so count-1 elements follow
	if n := r.nilCount(15); n >= 0 {
		rep.Results = make([]wire.MultiResult, n)
		for i := 0; i < n && r.err == nil; i++ {
			decodeMultiResult(&r, &rep.Results[i])
		}
	}
	if err := r.finish(); err != nil {
		return TxnReply{}, fmt.Errorf("%w: reply: %v", ErrMalformedTxn, err)
	}
	return rep, nil
}

func decodeMultiResult(r *reader, m *wire.MultiResult) {
	m.Op = wire.OpCode(r.int32())
	m.Err = wire.Err(r.int32())
	m.Path = r.str()
	s := &m.Stat
	s.Czxid, s.Mzxid, s.Ctime, s.Mtime = r.varint(), r.varint(), r.varint(), r.varint()
	s.Version, s.Cversion, s.Aversion = r.int32(), r.int32(), r.int32()
	s.EphemeralOwner = r.varint()
	s.DataLength, s.NumChildren = r.int32(), r.int32()
	s.Pzxid = r.varint()
	m.Data = r.bytes()
	if n := r.nilCount(1); n >= 0 {
		m.Children = make([]string, n)
		for i := 0; i < n && r.err == nil; i++ {
			m.Children[i] = r.str()
		}
	}
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}
