package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// Cross-shard transactions (docs/design.md, "Cross-shard transactions").
//
// The coordinator is the server that received the request. It prepares the transaction on
// every participant (each validates its own ops, and a prepared shard applies nothing else),
// then commits it with one zxid Z — above every participant's floor, with the anchor's tag —
// first on the anchor (the participant with the smallest shard id, which records the decision),
// then on the others. A participant left prepared past the deadline (its coordinator died) is
// resolved by RecoverTxn: the anchor's recorded decision wins, an undecided anchor aborts.
//
// A group transaction (TxnRequest.Group) is decided once every participant holds it prepared:
// its commits go to all participants at once (commitGroup), and its recovery probes them all
// (recoverGroup). docs/design.md §8, "How a group commits".

// txnOptions tune the coordinator.
type txnOptions struct {
	deadline time.Duration // a prepared txn older than this may be resolved by recovery
	// testHooks stop a coordinator at a step, in tests (SetTxnHook, testhooks.go).
	testHooks txnTestHooks
}

func (r *Router) txnStep(step string) { r.txn.testHooks.at(step) }

// TxnDeadline is how long a participant may stay prepared before any server resolves it.
const TxnDeadline = time.Second

// TxnRequest is a write whose ops live on several shards.
type TxnRequest struct {
	Session  int64
	Epoch    uint64 // the session's ownership epoch at this server (shard.Op.Epoch)
	Auth     []wire.ID
	MinZxid  int64
	Internal bool // server-generated: no ACL checks
	Multi    wire.MultiRequest
	// Group makes the ops a session's independent writes committed together (shard.TxnPrepare
	// Group; only at format.Level4): each op's result is its own, failed ones included, and
	// the transaction fails as a whole only for what fails every op (a moved or expired
	// session).
	Group bool
	// Decided, when set, is called once the transaction is decided to commit at zxid (its
	// anchor committed; for a group, every participant prepared) and the commits to the other
	// participants are submitted, or offered to the next group (Commits): a transaction
	// prepared after this on any of them is applied after this one's commit there (each
	// shard's control proposer keeps its order). For a group, results are its per-op
	// results as the commit will report them (provisionalResults), derived from the prepares;
	// nil for other transactions.
	Decided func(zxid int64, results []wire.MultiResult)
	// Commits, when set (a group), may carry the group's commits to the session's next group,
	// whose TxnRequest.After it is (GroupCommits): each shard's commit then travels with that
	// group's prepare.
	Commits *GroupCommits
	After   *GroupCommits
}

// TxnResult is the outcome of a cross-shard transaction.
type TxnResult struct {
	// Results are ZooKeeper's per-op multi results: the applied ops' results on success, error
	// results (earlier ops OK, the failing op its code, later ops RUNTIMEINCONSISTENCY) on failure.
	Results []wire.MultiResult
	Failed  bool
	// FailErr is the failing op's code; MARSHALLINGERROR with nil Results when the request as a
	// whole is malformed.
	FailErr wire.Err
	Zxid    int64
}

// ErrTxnGaveUp: the transaction kept meeting other transactions until its context ended;
// nothing was applied.
var ErrTxnGaveUp = errors.New("router: cross-shard transaction did not get through")

// ErrGroupBusy: a group transaction met another transaction on a participant (or recovery
// aborted it) and was aborted everywhere; nothing was applied.
var ErrGroupBusy = errors.New("router: group transaction met another transaction")

// opTarget returns the path of a multi op and whether it is a create (and sequential) or delete.
func opTarget(op *wire.MultiOp) (path string, create, seq, del bool) {
	switch {
	case op.Create != nil:
		return op.Create.Path, true, op.Create.Flags == wire.FlagPersistentSequential || op.Create.Flags == wire.FlagEphemeralSequential || op.Create.Flags == wire.FlagPersistentSequentialWithTTL, false
	case op.CreateTTL != nil:
		return op.CreateTTL.Path, true, op.CreateTTL.Flags == wire.FlagPersistentSequentialWithTTL || op.CreateTTL.Flags == wire.FlagPersistentSequential || op.CreateTTL.Flags == wire.FlagEphemeralSequential, false
	case op.Delete != nil:
		return op.Delete.Path, false, false, true
	case op.SetData != nil:
		return op.SetData.Path, false, false, false
	case op.Check != nil:
		return op.Check.Path, false, false, false
	}
	return "/", false, false, false
}

// PlanMulti returns the participants of a multi with each one's role per op. When the multi
// needs no transaction (every op on one shard, no top-level create or delete across shards) it
// returns that shard and nil roles.
func (r *Router) PlanMulti(m *wire.MultiRequest) (*Shard, map[uint64][]shard.TxnRole) {
	roles := map[uint64][]shard.TxnRole{}
	set := func(id uint64, i int, role shard.TxnRole) {
		rs := roles[id]
		if rs == nil {
			rs = make([]shard.TxnRole, len(m.Ops))
			roles[id] = rs
		}
		rs[i] = role
	}
	split := false
	for i := range m.Ops {
		path, create, seq, del := opTarget(&m.Ops[i])
		if (create || del) && r.MountPoint(path, seq) {
			split = true
			parent, _ := parentOf(path)
			set(r.Lookup(parent).ID, i, shard.RoleParent)
			set(r.Lookup(path).ID, i, shard.RoleNode)
			continue
		}
		sh := r.Lookup(path)
		if create {
			sh = r.CreateShard(path, seq)
		}
		set(sh.ID, i, shard.RoleFull)
	}
	if !split && len(roles) <= 1 {
		for id := range roles {
			return r.Shard(id), nil
		}
		return r.Root(), nil
	}
	return nil, roles
}

// planRoles is PlanMulti that always returns roles: a multi on one shard becomes a
// transaction with one participant, every op RoleFull.
func (r *Router) planRoles(m *wire.MultiRequest) map[uint64][]shard.TxnRole {
	one, roles := r.PlanMulti(m)
	if roles == nil {
		rs := make([]shard.TxnRole, len(m.Ops))
		for i := range rs {
			rs[i] = shard.RoleFull
		}
		roles = map[uint64][]shard.TxnRole{one.ID: rs}
	}
	return roles
}

// RunTxn runs a cross-shard transaction with the roles PlanMulti returned. An error means the
// outcome is unknown to this server (it may still commit through recovery): the caller treats
// it as ZooKeeper treats a lost leader, by closing the client's connection.
func (r *Router) RunTxn(ctx context.Context, req *TxnRequest, roles map[uint64][]shard.TxnRole) (TxnResult, error) {
	parts := make([]uint64, 0, len(roles))
	for id := range roles {
		parts = append(parts, id)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	backoff := time.Millisecond
	for {
		res, retry, err := r.tryTxn(ctx, req, parts, roles)
		replanned := false
		if err == nil && res.Failed && res.FailErr == shard.ErrMoved {
			replanned = true
			// A participant no longer holds an op's subtree (it moved): plan again with
			// the mount table, which this server's replica of that participant updated
			// when it applied the move.
			roles, parts, retry = r.planRoles(&req.Multi), nil, true
			for id := range roles {
				parts = append(parts, id)
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		}
		if err != nil || !retry {
			return res, err
		}
		if req.Group && !replanned {
			// A group that met another transaction is not retried: nothing was applied, and
			// its writes can still go one shard at a time (the caller's fallback), where
			// retrying would let concurrent groups over the same shards abort each other.
			return TxnResult{}, ErrGroupBusy
		}
		// Another transaction held a participant, or recovery aborted this one: nothing was
		// applied; try again with a new id after a short random pause.
		select {
		case <-ctx.Done():
			return TxnResult{}, ErrTxnGaveUp
		case <-time.After(backoff + time.Duration(rand.Int64N(int64(backoff)))):
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

type partReply struct {
	id    uint64
	reply shard.TxnReply
	err   error
}

// control submits one txn op to a participant's control proposer and decodes the reply.
func (r *Router) control(id uint64, op shard.Op, out chan<- partReply) {
	r.Shard(id).Control.Submit(controlRequest(id, op, out))
}

// controlRequest is the request of one txn op to participant id, whose decoded reply goes to out.
func controlRequest(id uint64, op shard.Op, out chan<- partReply) *Request {
	return &Request{Op: op, Done: func(res shard.OpResult, err error) {
		pr := partReply{id: id, err: err}
		if err == nil {
			if res.Err != wire.ErrOK {
				pr.err = fmt.Errorf("router: txn op on shard %d: %s", id, res.Err)
			} else {
				pr.reply, pr.err = shard.DecodeTxnReply(res.Body)
			}
		}
		out <- pr
	}}
}

// broadcast sends op (built per participant) to every listed participant and collects replies.
func (r *Router) broadcast(ctx context.Context, ids []uint64, op func(id uint64) shard.Op) (map[uint64]partReply, error) {
	return r.broadcastThen(ctx, ids, op, nil)
}

// broadcastThen is broadcast that calls submitted (when not nil) once every op is submitted,
// before waiting for the replies.
func (r *Router) broadcastThen(ctx context.Context, ids []uint64, op func(id uint64) shard.Op, submitted func()) (map[uint64]partReply, error) {
	out := make(chan partReply, len(ids))
	for _, id := range ids {
		r.control(id, op(id), out)
	}
	if submitted != nil {
		submitted()
	}
	return collect(ctx, ids, out)
}

// broadcastAfter is broadcast where a participant's op follows, in the same batch, the request
// before holds for it (a previous group's commit, GroupCommits); the requests of before for
// other shards are submitted too. h, when not nil, is marked submitted afterwards.
func (r *Router) broadcastAfter(ctx context.Context, ids []uint64, op func(id uint64) shard.Op, before map[uint64]*Request, h *GroupCommits) (map[uint64]partReply, error) {
	out := make(chan partReply, len(ids))
	for _, id := range ids {
		req := controlRequest(id, op(id), out)
		if b := before[id]; b != nil {
			r.Shard(id).Control.SubmitAll(b, req)
		} else {
			r.Shard(id).Control.Submit(req)
		}
	}
	for id, b := range before {
		if !slices.Contains(ids, id) {
			r.Shard(id).Control.Submit(b)
		}
	}
	if h != nil && before != nil {
		h.markSubmitted()
	}
	return collect(ctx, ids, out)
}

// collect waits for the replies of the ops submitted to ids.
func collect(ctx context.Context, ids []uint64, out <-chan partReply) (map[uint64]partReply, error) {
	got := make(map[uint64]partReply, len(ids))
	for range ids {
		select {
		case pr := <-out:
			got[pr.id] = pr
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
	return got, nil
}

func (r *Router) abortAll(ids []uint64, txnID uint64) {
	body := (&shard.TxnAbort{ID: txnID}).AppendTo(nil)
	out := make(chan partReply, len(ids))
	for _, id := range ids {
		r.control(id, shard.Op{Code: shard.OpTxnAbort, Body: body}, out)
	}
	// Aborts are idempotent and recovery repeats them if needed; nobody waits for them.
}

func (r *Router) tryTxn(ctx context.Context, req *TxnRequest, parts []uint64, roles map[uint64][]shard.TxnRole) (TxnResult, bool, error) {
	txnID := rand.Uint64() | 1
	anchor := parts[0]
	deadline := time.Now().Add(TxnDeadline).UnixMilli()
	quota := r.QuotaMode()
	// The previous group's commits, when handed to this group, go with its prepares.
	prep, err := r.broadcastAfter(ctx, parts, func(id uint64) shard.Op {
		p := shard.TxnPrepare{ID: txnID, Anchor: anchor, Deadline: deadline, Internal: req.Internal,
			Multi: shard.ParticipantMulti(&req.Multi, roles[id]), Roles: roles[id], Group: req.Group, Quota: quota}
		if req.Group {
			p.Parts = parts
		}
		return shard.Op{Session: req.Session, Epoch: req.Epoch, Auth: req.Auth, MinZxid: req.MinZxid, Code: shard.OpTxnPrepare,
			Body: p.AppendTo(nil)}
	}, takeCommits(req.After), req.After)
	for _, pr := range prep {
		if err == nil && pr.err != nil {
			err = pr.err
		}
	}
	if err != nil {
		if !req.Group {
			r.abortAll(parts, txnID)
		}
		// A group may be prepared everywhere by now, which commits it: only recovery, probing
		// every participant, may decide (an abort here could race its commit).
		return TxnResult{}, false, err
	}
	failIdx, failErr, retry := int32(-2), wire.ErrOK, false
	var floor int64
	for _, id := range parts {
		rep := prep[id].reply
		switch rep.Outcome {
		case shard.TxnPrepared:
			floor = max(floor, rep.Floor)
		case shard.TxnFailed:
			// The first failing op in request order; at equal index the parent side (on the
			// root shard, the smallest id, visited first) wins: ZooKeeper checks the parent
			// before the node. A participant reports -1 when the scan reached a plain create
			// with a TTL mode (the whole request fails to deserialize there): that happens at
			// the index of that op, so an earlier op failing elsewhere still wins.
			idx := rep.FailIndex
			if idx < 0 {
				idx = ttlCreateIndex(&req.Multi)
			}
			if failIdx == -2 || idx < failIdx {
				failIdx, failErr = idx, rep.FailErr
			}
		default: // busy, or aborted by recovery
			retry = true
		}
	}
	if failIdx != -2 || retry {
		// Some participant did not prepare (failed, busy, or fenced by recovery), so no one
		// can commit: aborting everywhere is safe, for a group too.
		r.abortAll(parts, txnID)
		if failIdx == -2 {
			return TxnResult{}, true, nil
		}
		if failIdx == ttlCreateIndex(&req.Multi) && failErr == wire.ErrMarshallingError {
			failIdx = -1
		}
		return failedResult(len(req.Multi.Ops), failIdx, failErr), false, nil
	}
	zxid := floor<<8 | int64(r.Shard(anchor).Tag())
	var all map[uint64]partReply
	if req.Group {
		// Every participant holds the group prepared: that is its commit (recovery, probing
		// them, decides the same), so the commits go to all of them at once.
		var decided func(int64)
		if req.Decided != nil {
			decided = func(z int64) { req.Decided(z, r.provisionalResults(prep, roles, len(req.Multi.Ops), z)) }
		}
		all, err = r.commitGroup(ctx, parts, txnID, zxid, decided, req.Commits)
		if err != nil {
			return TxnResult{}, false, err
		}
	} else {
		var decided func(int64)
		if req.Decided != nil {
			decided = func(z int64) { req.Decided(z, nil) }
		}
		all, retry, err = r.commitTxn(ctx, parts, txnID, zxid, decided)
		if err != nil || retry {
			return TxnResult{}, retry, err
		}
	}
	results := make([]wire.MultiResult, len(req.Multi.Ops))
	for id, pr := range all {
		for i, role := range roles[id] {
			if role != shard.RoleFull && role != shard.RoleNode {
				continue
			}
			if i >= len(pr.reply.Results) {
				// Recovery committed this participant before the coordinator's commit reached
				// it, and a decision record keeps no results: the transaction committed, but
				// its per-op results are not known here. Treat it like a lost leader: the
				// client's connection closes and it re-reads.
				return TxnResult{}, false, fmt.Errorf("%w: transaction %x committed by recovery on shard %d", ErrOutcomeUnknown, txnID, id)
			}
			results[i] = pr.reply.Results[i]
		}
	}
	return TxnResult{Results: results, Zxid: zxid}, false, nil
}

// commitTxn commits a transaction prepared on every participant under zxid: on the anchor
// (parts[0]) first — its commit is the decision —, then on the others. retry is true when
// recovery aborted the transaction at the anchor first (nothing applied anywhere; the others
// are sent aborts).
func (r *Router) commitTxn(ctx context.Context, parts []uint64, txnID uint64, zxid int64, decided func(int64)) (map[uint64]partReply, bool, error) {
	anchor := parts[0]
	commit := func(id uint64) shard.Op {
		return shard.Op{Code: shard.OpTxnCommit, Body: (&shard.TxnCommit{ID: txnID, Zxid: zxid, Time: CommitTime(zxid)}).AppendTo(nil)}
	}
	first, err := r.broadcast(ctx, parts[:1], commit)
	if err == nil {
		err = first[anchor].err
	}
	if err != nil {
		return nil, false, err
	}
	switch first[anchor].reply.Outcome {
	case shard.TxnCommitted:
	case shard.TxnAborted:
		// Recovery decided abort at the anchor before this commit arrived.
		r.abortAll(parts, txnID)
		return nil, true, nil
	default:
		return nil, false, fmt.Errorf("router: anchor shard %d answered commit with outcome %d", anchor, first[anchor].reply.Outcome)
	}
	r.txnStep("anchor-committed")
	rest, err := r.broadcastThen(ctx, parts[1:], commit, func() {
		if decided != nil {
			decided(zxid)
		}
	})
	if err != nil {
		return nil, false, err
	}
	all := map[uint64]partReply{anchor: first[anchor]}
	for id, pr := range rest {
		if pr.err != nil {
			return nil, false, pr.err
		}
		if pr.reply.Outcome != shard.TxnCommitted {
			return nil, false, fmt.Errorf("router: shard %d did not commit a transaction its anchor committed (outcome %d)", id, pr.reply.Outcome)
		}
		all[id] = pr
	}
	return all, false, nil
}

// commitGroup commits a group transaction prepared on every participant under zxid, on all of
// them at once: a group is decided once all its participants hold it prepared (RecoverTxn
// probes them and reaches the same decision, with the same zxid from the same floors). The
// commits may be handed to the session's next group through h (GroupCommits).
func (r *Router) commitGroup(ctx context.Context, parts []uint64, txnID uint64, zxid int64, decided func(int64), h *GroupCommits) (map[uint64]partReply, error) {
	commit := shard.Op{Code: shard.OpTxnCommit, Body: (&shard.TxnCommit{ID: txnID, Zxid: zxid, Time: CommitTime(zxid)}).AppendTo(nil)}
	out := make(chan partReply, len(parts))
	reqs := make(map[uint64]*Request, len(parts))
	for _, id := range parts {
		reqs[id] = controlRequest(id, commit, out)
	}
	r.submitCommits(h, reqs, func() {
		if decided != nil {
			decided(zxid)
		}
	})
	all, err := collect(ctx, parts, out)
	if err != nil {
		return nil, err
	}
	for id, pr := range all {
		if pr.err != nil {
			return nil, pr.err
		}
		if pr.reply.Outcome != shard.TxnCommitted {
			return nil, fmt.Errorf("router: shard %d did not commit group transaction %x every participant had prepared (outcome %d)", id, txnID, pr.reply.Outcome)
		}
	}
	return all, nil
}

// provisionalResults returns a group's per-op results, committed at zxid, from its
// participants' prepare replies: what the commit will report, without waiting for it. A
// participant evaluates a group's ops at prepare exactly as at commit (its state does not
// change in between: docs/design.md §7, "Blocking and its bound"), except for the zxid and
// time: op i gets GroupZxid(floor<<8|tag, i) and the prepare's batch time there, and
// GroupZxid(zxid, i) and CommitTime(zxid) at commit. Every zxid of a prepare's results in that
// provisional range was written by the group's op i (the participant applied nothing at or
// above its floor), so it maps to GroupZxid(zxid, i); a ctime or mtime is the group's when its
// czxid or mzxid is (a create sets both pairs, a setData the second).
func (r *Router) provisionalResults(prep map[uint64]partReply, roles map[uint64][]shard.TxnRole, n int, zxid int64) []wire.MultiResult {
	results := make([]wire.MultiResult, n)
	commitTime := CommitTime(zxid)
	for id, pr := range prep {
		rs := pr.reply.Results
		tag := int64(r.Shard(id).Tag())
		floor := pr.reply.Floor
		remap := func(v int64) (int64, bool) {
			if v&0xff != tag {
				return v, false
			}
			if i := v>>8 - floor; i >= 0 && i < int64(n) {
				return shard.GroupZxid(zxid, int(i)), true
			}
			return v, false
		}
		for i, role := range roles[id] {
			if (role != shard.RoleFull && role != shard.RoleNode) || i >= len(rs) {
				continue
			}
			res := rs[i]
			st := &res.Stat
			var ok bool
			if st.Czxid, ok = remap(st.Czxid); ok {
				st.Ctime = commitTime
			}
			if st.Mzxid, ok = remap(st.Mzxid); ok {
				st.Mtime = commitTime
			}
			st.Pzxid, _ = remap(st.Pzxid)
			results[i] = res
		}
	}
	return results
}

// CommitTime is the ctime/mtime a transaction committed at zxid gets on every participant: the
// millisecond its zxid's clock counter stands for (recovery derives it from the zxid alone).
func CommitTime(zxid int64) int64 { return shard.ZxidCounter(zxid) >> 12 }

// ttlCreateIndex returns the index of the first plain create with a TTL mode in m (which makes
// ZooKeeper fail the whole multi with MARSHALLINGERROR when it reaches it), or len(m.Ops).
func ttlCreateIndex(m *wire.MultiRequest) int32 {
	for i := range m.Ops {
		if c := m.Ops[i].Create; c != nil && (c.Flags == wire.FlagPersistentWithTTL || c.Flags == wire.FlagPersistentSequentialWithTTL) {
			return int32(i)
		}
	}
	return int32(len(m.Ops))
}

// failedResult builds ZooKeeper's results of a failed multi.
func failedResult(n int, failed int32, err wire.Err) TxnResult {
	if failed < 0 {
		return TxnResult{Failed: true, FailErr: err}
	}
	res := make([]wire.MultiResult, n)
	for i := range res {
		res[i] = wire.MultiResult{Op: wire.OpError}
		switch {
		case int32(i) == failed:
			res[i].Err = err
		case int32(i) > failed:
			res[i].Err = wire.ErrRuntimeInconsistency
		}
	}
	return TxnResult{Results: res, Failed: true, FailErr: err}
}

// RecoverTxn resolves the transaction sh holds prepared (its deadline passed): it asks the
// anchor for the decision — an undecided anchor aborts — and applies it to sh. A group
// transaction is resolved on all its participants by recoverGroup.
func (r *Router) RecoverTxn(ctx context.Context, sh *Shard, info shard.PreparedInfo) error {
	if info.Group {
		return r.recoverGroup(ctx, info)
	}
	body := (&shard.TxnResolve{ID: info.ID}).AppendTo(nil)
	got, err := r.broadcast(ctx, []uint64{info.Anchor}, func(uint64) shard.Op {
		return shard.Op{Code: shard.OpTxnResolve, Body: body}
	})
	if err != nil {
		return err
	}
	pr := got[info.Anchor]
	if pr.err != nil {
		return pr.err
	}
	if sh.ID == info.Anchor {
		return nil // resolving at the anchor already applied the decision there
	}
	var op shard.Op
	switch pr.reply.Outcome {
	case shard.TxnCommitted:
		z := pr.reply.Zxid
		op = shard.Op{Code: shard.OpTxnCommit, Body: (&shard.TxnCommit{ID: info.ID, Zxid: z, Time: CommitTime(z)}).AppendTo(nil)}
	default:
		op = shard.Op{Code: shard.OpTxnAbort, Body: (&shard.TxnAbort{ID: info.ID}).AppendTo(nil)}
	}
	got, err = r.broadcast(ctx, []uint64{sh.ID}, func(uint64) shard.Op { return op })
	if err != nil {
		return err
	}
	return got[sh.ID].err
}

// recoverGroup resolves a group transaction left prepared: it probes every participant (a
// participant that never saw the prepare records the transaction aborted, so the prepare can no
// longer succeed there). If all hold it prepared, or one committed it, it is committed on all
// of them, with the zxid its coordinator chose (or would have): the largest floor with the
// anchor's tag. Otherwise it is aborted on all of them: no participant can have committed,
// since a coordinator commits only after every participant answered its prepare, and one of
// them had not prepared when probed.
func (r *Router) recoverGroup(ctx context.Context, info shard.PreparedInfo) error {
	if len(info.Parts) == 0 {
		return fmt.Errorf("router: group transaction %x names no participants", info.ID)
	}
	probe := (&shard.TxnResolve{ID: info.ID, Probe: true}).AppendTo(nil)
	got, err := r.broadcast(ctx, info.Parts, func(uint64) shard.Op { return shard.Op{Code: shard.OpTxnResolve, Body: probe} })
	if err != nil {
		return err
	}
	var floor, committed int64
	aborted := false
	for _, id := range info.Parts {
		pr := got[id]
		if pr.err != nil {
			return pr.err
		}
		switch pr.reply.Outcome {
		case shard.TxnPrepared:
			floor = max(floor, pr.reply.Floor)
		case shard.TxnCommitted:
			committed = pr.reply.Zxid
		default:
			aborted = true
		}
	}
	var op shard.Op
	switch {
	case aborted && committed != 0:
		return fmt.Errorf("router: group transaction %x is committed on one participant and aborted on another", info.ID)
	case aborted:
		op = shard.Op{Code: shard.OpTxnAbort, Body: (&shard.TxnAbort{ID: info.ID}).AppendTo(nil)}
	default:
		z := committed
		if z == 0 {
			z = floor<<8 | int64(r.Shard(info.Parts[0]).Tag())
		}
		op = shard.Op{Code: shard.OpTxnCommit, Body: (&shard.TxnCommit{ID: info.ID, Zxid: z, Time: CommitTime(z)}).AppendTo(nil)}
	}
	got, err = r.broadcast(ctx, info.Parts, func(uint64) shard.Op { return op })
	if err != nil {
		return err
	}
	for _, id := range info.Parts {
		if pr := got[id]; pr.err != nil {
			return pr.err
		}
	}
	return nil
}
