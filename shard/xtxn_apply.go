package shard

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/google/btree"

	"github.com/corral/corral/wire"
)

// decisionTTL is how long (batch time, ms) a shard remembers the outcome of a transaction, as
// tombstones: by then no coordinator or recovery step of it can still be in flight.
const decisionTTL = 24 * 60 * 60 * 1000

// reserveMs is how far ahead of its batch time (ms) a prepare reserves the zxid range of its
// transaction: the floor a participant reports is at least (prepare time + reserveMs) << 12, and
// while the transaction is prepared the shard applies only ops whose zxid counter stays below
// that floor. So other writes keep applying for about reserveMs of batch time after a prepare;
// past that (or when a MinZxid reaches the floor) every batch is blocked until the decision,
// which recovery bounds (see doc.go, "Cross-shard transactions").
const reserveMs = 250

// preparedTxn is the transaction a shard holds prepared: the request and the session context of
// its prepare op, which the commit re-evaluates, the reserved floor, and the lock set.
type preparedTxn struct {
	body    []byte     // the encoded TxnPrepare (owned: prep aliases it)
	prep    TxnPrepare // decoded from body
	session int64
	auth    []wire.ID
	minZxid int64
	time    int64 // batch time of the prepare
	// fenced: the prepare came in a SessionFence batch (a new prepare of a closed session
	// fails). Only a fresh prepare reads it, so it is not persisted.
	fenced bool
	// epoch is the session's ownership epoch at the coordinator (Op.Epoch; owner.go). Like
	// fenced, only a fresh prepare reads it.
	epoch uint64
	// floor is the reserved zxid counter reported by the prepare: every op applied while the
	// transaction is prepared gets a counter below it. 0 only for a record written before
	// reservations existed: then the shard blocks every batch, as it did then.
	floor int64
	// locks is the set of tree keys the transaction's ops of this shard touch (lockSet); derived
	// from prep, so it is not persisted but recomputed on load.
	locks map[string]struct{}
	// subtree is the key of a move's subtree root: every key in the subtree is locked too.
	subtree    string
	hasSubtree bool
}

// locked reports whether the tree key k is locked by the transaction.
func (p *preparedTxn) locked(k string) bool {
	if _, ok := p.locks[k]; ok {
		return true
	}
	return p.hasSubtree && (k == p.subtree || strings.HasPrefix(k, p.subtree+"\x01"))
}

// setLocks derives the lock set (and a move's subtree lock) from prep.
func (p *preparedTxn) setLocks() {
	p.locks = p.lockSet()
	if m := p.prep.Move; m != nil {
		p.subtree, p.hasSubtree = keyOf(m.Path)
	}
}

// reservedFloor returns the floor a prepare reports: the counter the shard would assign next
// (as for any op: max(last+1, time<<12, MinZxid>>8+1)), raised to (time+reserveMs)<<12 unless
// that would leave the 55-bit counter range.
func reservedFloor(last int64, tag uint8, time, minZxid int64) int64 {
	c := ZxidCounter(nextZxid(last, tag, time, minZxid))
	if t := time + reserveMs; t > 0 && t <= maxCounter>>timeShift && t<<timeShift > c {
		c = t << timeShift
	}
	return c
}

// lockSet returns the tree keys p's ops of this shard (roles other than RoleNone) touch: node
// and parent for a create or delete (for RoleParent the parent is "/" and the node the stub's
// key; RoleNode locks "/" too, harmlessly), the node for setData and check.
func (p *preparedTxn) lockSet() map[string]struct{} {
	locks := make(map[string]struct{})
	add := func(k string) { locks[k] = struct{}{} }
	for i := range p.prep.Multi.Ops {
		if p.prep.Roles[i] != RoleNone {
			multiOpKeys(&p.prep.Multi.Ops[i], add)
			if path, _, ok := multiOpTarget(&p.prep.Multi.Ops[i]); ok && p.prep.Quota != QuotaOff {
				quotaLockKeys(path, add) // quota.go
			}
		}
	}
	return locks
}

// touchKeys calls f with the key of path and, withParent, the key of its parent (as
// splitParent finds it). A path that maps to no key names no node: an op on it reads and
// writes nothing there, so it is skipped.
func touchKeys(path string, withParent bool, f func(string)) {
	if k, ok := keyOf(path); ok {
		f(k)
	}
	if withParent {
		if parent, ok := splitParent(path); ok {
			if k, ok := parentKey(parent); ok {
				f(k)
			}
		}
	}
}

// multiOpTarget returns the path one op of a multi writes and whether the op changes its parent
// too (create, delete); ok is false for an op that writes nothing (a read op: a multi holding one
// fails as a whole anyway).
func multiOpTarget(op *wire.MultiOp) (path string, withParent, ok bool) {
	switch op.Op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		if op.Create != nil {
			return op.Create.Path, true, true
		}
	case wire.OpCreateTTL:
		if op.CreateTTL != nil {
			return op.CreateTTL.Path, true, true
		}
	case wire.OpDelete:
		if op.Delete != nil {
			return op.Delete.Path, true, true
		}
	case wire.OpSetData:
		if op.SetData != nil {
			return op.SetData.Path, false, true
		}
	case wire.OpCheck:
		if op.Check != nil {
			return op.Check.Path, false, true
		}
	}
	return "", false, false
}

// multiOpKeys calls f with the keys one op of a multi touches.
func multiOpKeys(op *wire.MultiOp, f func(string)) {
	if path, withParent, ok := multiOpTarget(op); ok {
		touchKeys(path, withParent, f)
	}
}

// opWrites calls f with each path a client or internal write op writes, and whether it
// changes the path's parent too (create, delete, deleteContainer), decoding the body exactly as
// applyOp does: a body that does not decode fails with MARSHALLINGERROR and writes nothing;
// opcodes that are not writes, closeSession and transaction ops name no path.
func opWrites(op *Op, f func(path string, withParent bool)) {
	d := wire.NewDecoder(op.Body)
	switch op.Code {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
		var r wire.CreateRequest
		if r.Decode(d) == nil {
			f(r.Path, true)
		}
	case wire.OpCreateTTL:
		var r wire.CreateTTLRequest
		if r.Decode(d) == nil {
			f(r.Path, true)
		}
	case wire.OpDelete, wire.OpDeleteContainer:
		var r wire.DeleteRequest
		if r.Decode(d) == nil {
			f(r.Path, true)
		}
	case wire.OpSetData:
		var r wire.SetDataRequest
		if r.Decode(d) == nil {
			f(r.Path, false)
		}
	case wire.OpSetACL:
		var r wire.SetACLRequest
		if r.Decode(d) == nil {
			f(r.Path, false)
		}
	case wire.OpCheck:
		var r wire.CheckVersionRequest
		if r.Decode(d) == nil {
			f(r.Path, false)
		}
	case OpSetStat:
		if st, ok := decodeSetStat(op.Body); ok {
			f(st.Path, false)
		}
	case wire.OpMulti:
		var r wire.MultiRequest
		if r.Decode(d) == nil {
			for i := range r.Ops {
				if path, withParent, ok := multiOpTarget(&r.Ops[i]); ok {
					f(path, withParent)
				}
			}
		}
	}
}

// conflicts reports whether op, applied now, could touch a key the prepared transaction p
// locked (opWrites). closeSession deletes an unknown set of nodes and always conflicts.
func conflicts(op *Op, p *preparedTxn) bool {
	if op.Code == wire.OpCloseSession || op.Code == OpSessionOwner {
		return true
	}
	hit := false
	opWrites(op, func(path string, withParent bool) {
		touchKeys(path, withParent, func(k string) {
			if p.locked(k) {
				hit = true
			}
		})
	})
	return hit
}

// blockedByPrepared reports whether the non-control batch b must wait for the prepared
// transaction: some op of it touches a locked key, or gets a zxid counter at or above the
// reserved floor. Transaction ops in it fail without a zxid and touch nothing.
func (s *State) blockedByPrepared(b *Batch) bool {
	p := s.prepared
	if p.floor == 0 || p.prep.Cut {
		return true // a prepare recorded before reservations, or a cut: block everything
	}
	last := s.lastZxid
	for i := range b.Ops {
		op := &b.Ops[i]
		if isControlOp(op.Code) {
			continue
		}
		last = nextZxid(last, s.cfg.Tag, b.Time, op.MinZxid)
		if ZxidCounter(last) >= p.floor || conflicts(op, p) {
			return true
		}
		if b.Quota != QuotaOff && p.prep.Quota != QuotaOff && s.quotaConflict(op, p) {
			return true
		}
	}
	return false
}

func (p *preparedTxn) info() *PreparedInfo {
	return &PreparedInfo{ID: p.prep.ID, Anchor: p.prep.Anchor, PrepareTime: p.time, Deadline: p.prep.Deadline,
		Group: p.prep.Group, Parts: p.prep.Parts, Cut: p.prep.Cut}
}

// decision is the recorded outcome of a transaction.
type decision struct {
	committed bool
	zxid      int64 // the commit zxid (committed only)
	time      int64 // batch time when it was recorded
}

type decisionKey struct {
	time int64
	id   uint64
}

func decisionLess(a, b decisionKey) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	return a.id < b.id
}

// decisions are the recorded outcomes by transaction id, with an index by record time for expiry.
type decisions struct {
	byID   map[uint64]decision
	byTime *btree.BTreeG[decisionKey]
}

func newDecisions() decisions {
	return decisions{byID: make(map[uint64]decision), byTime: btree.NewG(8, decisionLess)}
}

func (d *decisions) add(id uint64, dec decision) {
	if old, ok := d.byID[id]; ok {
		d.byTime.Delete(decisionKey{old.time, id})
	}
	d.byID[id] = dec
	d.byTime.ReplaceOrInsert(decisionKey{dec.time, id})
}

// reply returns the outcome a decided transaction reports.
func (d decision) reply() TxnReply {
	if d.committed {
		return TxnReply{Outcome: TxnCommitted, Zxid: d.zxid}
	}
	return TxnReply{Outcome: TxnAborted}
}

func (s *State) decide(id uint64, committed bool, zxid, now int64) {
	s.decisions.add(id, decision{committed: committed, zxid: zxid, time: now})
	if s.track {
		s.dirty.decisions[id] = struct{}{}
	}
}

func (s *State) setPrepared(p *preparedTxn) {
	s.prepared = p
	if s.track {
		s.dirty.prepared = true
	}
}

// expireDecisions forgets the decisions recorded before now - decisionTTL.
func (s *State) expireDecisions(now int64) {
	cutoff := now - decisionTTL
	for {
		m, ok := s.decisions.byTime.Min()
		if !ok || m.time >= cutoff {
			return
		}
		s.decisions.byTime.DeleteMin()
		delete(s.decisions.byID, m.id)
		if s.track {
			s.dirty.decisions[m.id] = struct{}{}
		}
	}
}

// applyControlOp applies one op of an admitted batch that is a control batch or holds a
// control op (a transaction op or OpAddShard). Control ops belong in control batches only and
// client ops never do: a mismatch is UNIMPLEMENTED. Control ops consume no zxid; a commit that
// applies its transaction uses the transaction's zxid and reports it. A body that does not
// decode is MARSHALLINGERROR; any other outcome is ErrOK with the encoded TxnReply (or
// AddShardReply) as body.
func (s *State) applyControlOp(b *Batch, op *Op, events *[]Event) OpResult {
	if !b.Control || !isControlOp(op.Code) {
		return OpResult{Err: wire.ErrUnimplemented}
	}
	var rep TxnReply
	var zxid int64
	switch op.Code {
	case OpAddShard:
		a, err := s.applyAddShard(op.Body)
		if err != nil {
			return OpResult{Err: wire.ErrMarshallingError}
		}
		return OpResult{Body: a.AppendTo(nil)}
	case OpTxnPrepare:
		body := bytes.Clone(op.Body)
		p, err := DecodeTxnPrepare(body)
		if err != nil {
			return OpResult{Err: wire.ErrMarshallingError}
		}
		rep = s.txnPrepare(&preparedTxn{body: body, prep: p, session: op.Session,
			auth: slices.Clone(op.Auth), minZxid: op.MinZxid, time: b.Time, fenced: b.SessionFence,
			epoch: op.Epoch})
	case OpTxnCommit:
		c, err := DecodeTxnCommit(op.Body)
		if err != nil {
			return OpResult{Err: wire.ErrMarshallingError}
		}
		rep = s.txnCommit(&c, b.Time, events)
		if rep.Outcome == TxnCommitted {
			zxid = rep.Zxid
		}
	case OpTxnAbort:
		a, err := DecodeTxnAbort(op.Body)
		if err != nil {
			return OpResult{Err: wire.ErrMarshallingError}
		}
		rep = s.txnAbort(a.ID, b.Time)
	case OpTxnResolve:
		r, err := DecodeTxnResolve(op.Body)
		if err != nil {
			return OpResult{Err: wire.ErrMarshallingError}
		}
		if r.Probe {
			rep = s.txnProbe(r.ID, b.Time)
		} else {
			rep = s.txnAbort(r.ID, b.Time)
		}
	}
	// Encoded at once: the results of an evaluation live in the txn's buffer (evalTxn) until
	// the next one. A result takes well under 64 bytes unless its path is long.
	return OpResult{Zxid: zxid, Body: rep.AppendTo(make([]byte, 0, 64+64*len(rep.Results)))}
}

// txnPrepare validates p's ops of this shard and, if they all succeed, holds p prepared.
// Nothing else changes: the evaluation runs in the overlay, which is discarded.
func (s *State) txnPrepare(p *preparedTxn) TxnReply {
	id := p.prep.ID
	if d, ok := s.decisions.byID[id]; ok {
		return d.reply() // decided: never prepared again
	}
	repeat := s.prepared != nil
	var floor int64
	switch {
	case repeat && s.prepared.prep.ID != id:
		return TxnReply{Outcome: TxnBusy}
	case repeat && s.prepared.floor != 0:
		// A repeat: the same answer, from the prepare that locked. Batches applied since
		// touched none of its keys, so its ops evaluate as they did.
		p, floor = s.prepared, s.prepared.floor
	case repeat:
		// A repeat of a prepare recorded before reservations: nothing applied since.
		p = s.prepared
		floor = ZxidCounter(nextZxid(s.lastZxid, s.cfg.Tag, p.time, p.minZxid))
	case p.fenced && p.prep.Move == nil && p.session != 0 && s.tombstones.has(p.session):
		// A new prepare for a closed session fails, as its writes do (Batch.SessionFence).
		return TxnReply{Outcome: TxnFailed, FailErr: wire.ErrSessionExpired}
	case p.prep.Move == nil && s.sessionMoved(&Op{Session: p.session, Epoch: p.epoch}):
		// A new prepare from the server the session left fails, as its writes do (owner.go).
		return TxnReply{Outcome: TxnFailed, FailErr: wire.ErrSessionMoved}
	default:
		floor = reservedFloor(s.lastZxid, s.cfg.Tag, p.time, p.minZxid)
	}
	if p.prep.Cut {
		return s.prepareCut(p, floor, repeat)
	}
	if m := p.prep.Move; m != nil {
		if err, ok := s.prepareMove(m); !ok {
			return TxnReply{Outcome: TxnFailed, FailIndex: -1, FailErr: err}
		}
		if !repeat {
			p.floor = floor
			p.setLocks()
			s.setPrepared(p)
		}
		return TxnReply{Outcome: TxnPrepared, Floor: floor}
	}
	zxid := floor<<tagBits | int64(s.cfg.Tag)
	results, failIndex, err := s.evalTxn(p, zxid, p.time)
	s.tx.begin(0, 0) // discard the overlay
	if err != wire.ErrOK {
		return TxnReply{Outcome: TxnFailed, FailIndex: failIndex, FailErr: err}
	}
	if !repeat {
		p.floor = floor
		p.setLocks()
		s.setPrepared(p)
	}
	return TxnReply{Outcome: TxnPrepared, Floor: floor, Results: results}
}

// GroupZxid is the zxid of op i of a group transaction committed at zxid: the commit's clock
// counter plus i, with its tag. A group's writes are a session's separate requests, each with
// its own zxid (as ZooKeeper gives them), increasing in the session's order. The anchor's
// counter has not reached them (its floor is at most the commit's), and every participant's
// last zxid becomes the group's last, so zxids still strictly increase in apply order.
func GroupZxid(zxid int64, i int) int64 { return zxid + int64(i)<<tagBits }

// evalTxn evaluates p's ops of this shard (roles other than RoleNone), in index order, in the
// txn overlay under zxid and time, as a multi does: later ops see the earlier ones' effects. In
// a group (p.prep.Group) an op that fails gets an error result and the others go on.
// It returns the results in final form, in a slice the next evaluation reuses (the caller
// encodes them first), or the index of the first failing op and its error
// (index -1 with MARSHALLINGERROR when the request as a whole is malformed: a read op in the
// multi, or a plain create with a TTL mode reached before any op of this shard failed). The
// overlay is left staged: the caller commits or discards it.
func (s *State) evalTxn(p *preparedTxn, zxid, time int64) ([]wire.MultiResult, int32, wire.Err) {
	t := &s.tx
	t.begin(zxid, time)
	t.noACL = p.prep.Internal
	t.quota = p.prep.Quota
	m := &p.prep.Multi
	if !multiWritable(m) {
		return nil, -1, wire.ErrMarshallingError
	}
	results := t.resultSlice(len(m.Ops))
	for i := range m.Ops {
		op := &m.Ops[i]
		if multiUndecodable(op) {
			return nil, -1, wire.ErrMarshallingError
		}
		role := p.prep.Roles[i]
		if role == RoleNone {
			continue
		}
		if path, _, ok := multiOpTarget(op); ok && role != RoleParent && s.movedAway(path) {
			// The op's subtree moved away: the coordinator plans the transaction again.
			return nil, int32(i), ErrMoved
		}
		if p.prep.Group {
			t.zxid = GroupZxid(zxid, i)
		}
		if err := t.multiOp(op, role, &results[i], p.session, p.auth); err != wire.ErrOK {
			if p.prep.Group && err != ErrMoved {
				// A group's op fails alone: the checks of every op come before its
				// changes, so the failed op left nothing in the overlay.
				results[i] = wire.MultiResult{Op: wire.OpError, Err: err}
				continue
			}
			return nil, int32(i), err
		}
	}
	finalMultiResults(results)
	return results, 0, wire.ErrOK
}

// txnCommit commits the prepared transaction c.ID under c.Zxid (see doc.go, "Cross-shard
// transactions").
func (s *State) txnCommit(c *TxnCommit, now int64, events *[]Event) TxnReply {
	p := s.prepared
	if p == nil || p.prep.ID != c.ID {
		if d, ok := s.decisions.byID[c.ID]; ok && d.committed {
			return d.reply()
		}
		return TxnReply{Outcome: TxnAborted}
	}
	if c.Zxid <= s.lastZxid || p.prep.Cut {
		// A coordinator bug (a cut never commits): the zxid would not be above everything this shard applied.
		// Refuse without changing anything; the transaction stays prepared.
		return TxnReply{Outcome: TxnAborted}
	}
	if m := p.prep.Move; m != nil {
		s.setPrepared(nil)
		*events = s.commitMove(m, c.Zxid, c.Time, *events)
		s.decide(c.ID, true, c.Zxid, now)
		return TxnReply{Outcome: TxnCommitted, Zxid: c.Zxid}
	}
	results, _, err := s.evalTxn(p, c.Zxid, c.Time)
	s.setPrepared(nil)
	if err != wire.ErrOK {
		// Not reachable: nothing changed since the prepare succeeded.
		s.tx.begin(0, 0)
		s.decide(c.ID, false, 0, now)
		return TxnReply{Outcome: TxnAborted}
	}
	*events = s.tx.commit(*events)
	s.lastZxid = c.Zxid
	if p.prep.Group {
		s.lastZxid = GroupZxid(c.Zxid, len(p.prep.Multi.Ops)-1)
	}
	s.decide(c.ID, true, c.Zxid, now)
	return TxnReply{Outcome: TxnCommitted, Zxid: c.Zxid, Results: results}
}

// txnProbe applies a probing OpTxnResolve (a group transaction's recovery): the decision, or
// TxnPrepared with the floor while the transaction is held prepared here; an unknown one is
// recorded as aborted, so that its prepare, arriving late, fails.
func (s *State) txnProbe(id uint64, now int64) TxnReply {
	if d, ok := s.decisions.byID[id]; ok {
		return d.reply()
	}
	if p := s.prepared; p != nil && p.prep.ID == id {
		return TxnReply{Outcome: TxnPrepared, Floor: p.floor}
	}
	s.decide(id, false, 0, now)
	return TxnReply{Outcome: TxnAborted}
}

// txnAbort applies OpTxnAbort and OpTxnResolve, which mean the same to a participant: a decided
// transaction reports its decision, the prepared one is aborted, and an unknown one is recorded
// as aborted so that a late prepare is refused.
func (s *State) txnAbort(id uint64, now int64) TxnReply {
	if d, ok := s.decisions.byID[id]; ok {
		return d.reply()
	}
	if s.prepared != nil && s.prepared.prep.ID == id {
		s.setPrepared(nil)
	}
	s.decide(id, false, 0, now)
	return TxnReply{Outcome: TxnAborted}
}

// Encodings of the transaction state (store and canonical state):
//
//	prepared ("mx"): u8 version (2) | bytes TxnPrepare | varint session | varint minZxid
//	                 | varint time | varint floor | uvarint len(auth) | (str scheme, str id)...
//	                 (version 1, written before reservations, has no floor: decoded as 0)
//	                 The lock set is recomputed from the TxnPrepare.
//	decision ("d" + id): u8 committed | varint zxid | varint time
//
// Versions of the prepared-transaction record.
const (
	preparedVersionNoFloor = 1
	preparedVersion        = 2
)

func appendPrepared(dst []byte, p *preparedTxn) []byte {
	dst = append(dst, preparedVersion)
	dst = appendBytes(dst, p.body)
	dst = binary.AppendVarint(dst, p.session)
	dst = binary.AppendVarint(dst, p.minZxid)
	dst = binary.AppendVarint(dst, p.time)
	dst = binary.AppendVarint(dst, p.floor)
	dst = binary.AppendUvarint(dst, uint64(len(p.auth)))
	for _, id := range p.auth {
		dst = appendStr(dst, id.Scheme)
		dst = appendStr(dst, id.ID)
	}
	return dst
}

func decodePrepared(val []byte) (*preparedTxn, error) {
	r := reader{buf: val}
	v := r.byte()
	if v != preparedVersion && v != preparedVersionNoFloor && r.err == nil {
		return nil, fmt.Errorf("%w: prepared txn version %d", ErrCorruptStore, v)
	}
	p := &preparedTxn{}
	p.body = bytes.Clone(r.bytes())
	p.session, p.minZxid, p.time = r.varint(), r.varint(), r.varint()
	if v == preparedVersion {
		p.floor = r.varint()
	}
	if n := r.count(2); n > 0 {
		p.auth = make([]wire.ID, n)
		for i := range p.auth {
			p.auth[i] = wire.ID{Scheme: r.str(), ID: r.str()}
		}
	}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("%w: prepared txn: %v", ErrCorruptStore, err)
	}
	var err error
	if p.prep, err = DecodeTxnPrepare(p.body); err != nil {
		return nil, fmt.Errorf("%w: prepared txn: %v", ErrCorruptStore, err)
	}
	p.setLocks()
	return p, nil
}

func appendDecision(dst []byte, d decision) []byte {
	dst = appendBool(dst, d.committed)
	dst = binary.AppendVarint(dst, d.zxid)
	return binary.AppendVarint(dst, d.time)
}

func decodeDecision(val []byte) (decision, error) {
	r := reader{buf: val}
	d := decision{committed: r.bool(), zxid: r.varint(), time: r.varint()}
	if err := r.finish(); err != nil {
		return decision{}, fmt.Errorf("%w: txn decision: %v", ErrCorruptStore, err)
	}
	return d, nil
}

// appendTxnCanonical appends the prepared transaction and the decisions by id.
func (s *State) appendTxnCanonical(dst []byte) []byte {
	if s.prepared == nil {
		dst = append(dst, 0)
	} else {
		dst = appendPrepared(append(dst, 1), s.prepared)
	}
	ids := make([]uint64, 0, len(s.decisions.byID))
	for id := range s.decisions.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	for _, id := range ids {
		dst = binary.AppendUvarint(dst, id)
		dst = appendDecision(dst, s.decisions.byID[id])
	}
	return dst
}
