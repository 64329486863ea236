package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/corral/corral/format"
	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// Group commit of one session's writes across shards (docs/design.md §8, "Pipelining one
// session's writes across shards").
//
// Invariant: a session's writes take effect in request order, across shards too. No reader sees
// a write of the session without every earlier one, and a later write's zxid is above an
// earlier one's.
//
// Two shards' proposers do not order their entries against each other, so a write to another
// shard than the connection's previous write cannot be proposed while earlier writes are
// unanswered. Instead of stopping the request loop until they are (one Raft round per change of
// shard), such a write starts a group, and every write read while the group waits for the
// earlier replies joins it. Once every earlier reply is queued the group runs: on one shard its
// writes go to that shard's proposer in order; over several, as one cross-shard transaction
// whose ops succeed or fail one by one (router.TxnRequest.Group), so the whole group takes
// effect at once on every shard it touches, or nowhere, each write with its own zxid in the
// session's order (shard.GroupZxid). A group transaction's writes are answered at its decision
// (replyAtDecision). Writes read while a group runs form the next group, which takes the
// earlier group's commits along with its own prepares (router.GroupCommits). Any other request
// (a read, a multi, a sync, an auth packet, a write that cannot join) starts the pending group
// at once and then waits behind it as behind any write, until it is applied here.

// Bounds of one group: its ops travel in one Raft entry per participant.
const (
	maxGroupOps   = 256
	maxGroupBytes = 1 << 20
)

// groupMarker is lastWriteShard while the connection's latest write is in a group: the next
// write, to any shard, joins a group unless every earlier reply is queued.
const groupMarker = ^uint64(0)

// writeGroup is a session's writes collected to run together (request goroutine only until
// started).
type writeGroup struct {
	session int64
	epoch   uint64
	auth    []wire.ID
	ops     []wire.MultiOp
	writes  []groupedWrite
	bytes   int
	// ready is closed once every request before the group has its reply queued.
	ready <-chan struct{}
	// after is the group just before this one, with no other request between them (nil if
	// there is none): once it is decided, this group may be prepared as a transaction without
	// waiting for its replies.
	after *writeGroup
	// end is the connection's count of reserved slots after this group's last (set when the
	// group starts).
	end uint64
	// decided is closed once the group, run as a transaction, is decided to commit and its
	// commits are submitted to every participant or handed to the next group (commits); top is
	// then its last write's zxid.
	decided chan struct{}
	top     int64
	commits *router.GroupCommits
	// repliedAtDecision and round are set only when the group's replies are queued at its
	// decision, before the first of them (so before the next group's ready or decided
	// closes): how long its prepare round took, from its transaction's start to its
	// decision. The next group's linger reads them.
	repliedAtDecision bool
	round             time.Duration
	// early counts the writes that joined the group before after was decided (request
	// goroutine only): the ones the client sent before the replies that decision queued.
	early int
	// refill and lingerEnd are set while the group lingers after its predecessor's decision
	// (request goroutine only, nextBatch): it starts once it holds refill writes or at
	// lingerEnd, whichever comes first.
	refill    int
	lingerEnd *time.Timer
	// prev is the group started before this one, if any (with or without requests between).
	prev *writeGroup
	// blocked is, once the group runs, each shard it touches with that shard's count of
	// blocked batches on this server's view (shard.View.BlockedBatches); the next group
	// compares (writersWaiting).
	blocked atomic.Pointer[map[uint64]uint64]
	// applied is closed once prev's is and the group's writes are applied on this server, or
	// their replies are queued only after they are (writes proposed to a shard's proposer), or
	// the group ended otherwise (it failed, the connection closed). A group whose replies were
	// queued at its decision (replyAtDecision) may not be applied yet then: the connection is
	// idle only once its last group is applied (conn.idle).
	applied chan struct{}
}

// groupedWrite is one client write of a group.
type groupedWrite struct {
	h   wire.RequestHeader
	rec wire.Record
	// body is the request body the write's op was decoded from (its records alias it); a
	// group that lands on one shard proposes it as a plain op.
	body []byte
	sl   *slot
}

// groupOpcode reports whether a request with this opcode may join a group (the request itself
// may still not: groupOp).
func groupOpcode(op wire.OpCode) bool {
	switch op {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpDelete, wire.OpSetData:
		return true
	}
	return false
}

// groupOp returns the multi op a write becomes in a group, or false for a write that runs alone:
// a create with a mode a multi treats differently from a single request (container flag on a
// plain create, TTL modes), and any other opcode.
func groupOp(op wire.OpCode, rec wire.Record) (wire.MultiOp, bool) {
	switch r := rec.(type) {
	case *wire.CreateRequest:
		if op != wire.OpCreateContainer && (r.Flags < wire.FlagPersistent || r.Flags > wire.FlagEphemeralSequential) {
			return wire.MultiOp{}, false
		}
		if m, ok := router.SingleAsMulti(op, rec); ok {
			return m.Ops[0], true
		}
	case *wire.DeleteRequest:
		return wire.MultiOp{Op: op, Delete: r}, true
	case *wire.SetDataRequest:
		return wire.MultiOp{Op: op, SetData: r}, true
	}
	return wire.MultiOp{}, false
}

// groups reports whether the ensemble reads group transactions (format.Level4).
func (c *conn) groups() bool { return c.s.o.Sessions.Table().Level() >= format.Level4 }

// joinGroup adds a single-shard write (to sh) to the pending group, or starts one when the write
// goes to another shard than the previous write while earlier requests are unanswered. grouped
// is false when the write runs alone (the caller proposes it after writeBarrier); alive is
// false when the connection closed while waiting for the session's ownership record.
func (c *conn) joinGroup(h wire.RequestHeader, rec wire.Record, body []byte, sh *router.Shard) (grouped, alive bool) {
	op, ok := groupOp(h.Op, rec)
	if !ok || !c.groups() {
		c.flushGroup()
		return false, true
	}
	if c.group == nil {
		if c.lastWriteShard == sh.ID || c.idle() {
			return false, true // in order behind the earlier writes, or nothing to wait for
		}
		if !c.awaitOwned() {
			return false, false
		}
		c.group = &writeGroup{session: c.sessionID, epoch: c.epoch, auth: c.AuthIDs(), decided: make(chan struct{}),
			prev: c.lastGroup, applied: make(chan struct{}), commits: router.NewGroupCommits()}
		if p := c.lastGroup; p != nil && p.end == c.reservedSlots() {
			c.group.after = p // this group's prepares may carry p's commits
		}
	}
	g := c.group
	sl := c.reserve("write", sh)
	if len(g.writes) == 0 {
		g.ready = c.whenHead(sl)
	}
	g.countEarly()
	g.ops = append(g.ops, op)
	g.writes = append(g.writes, groupedWrite{h: h, rec: rec, body: body, sl: sl})
	g.bytes += len(body)
	c.lastWriteShard = groupMarker
	if len(g.ops) >= maxGroupOps || g.bytes >= maxGroupBytes || g.lingerEnd != nil && len(g.writes) >= g.refill {
		c.flushGroup()
	}
	return true, true
}

// flushGroup starts the pending group, if any: it runs once every earlier reply is queued.
func (c *conn) flushGroup() {
	g := c.group
	if g == nil {
		return
	}
	c.group = nil
	if g.lingerEnd != nil {
		g.lingerEnd.Stop()
	}
	g.end = c.reservedSlots()
	c.lastGroup = g
	c.s.o.Metrics.groups.Inc()
	c.s.o.Metrics.groupedWrites.Add(float64(len(g.writes)))
	go c.runGroup(g)
}

// runGroup waits for the replies of every request before g, then proposes g's writes: on one
// shard in order through its proposer, over several as one group transaction. A group over
// several shards right behind another such group starts as soon as that one is decided: its
// prepares reach every shard after that group's commit (each shard's control proposer keeps
// their order), its zxids are above that group's (MinZxid), and a reader that sees one of its
// writes before that group's commit is applied on another shard finds that group prepared
// there and waits for it (router.EnsureClosed), as for any transaction.
func (c *conn) runGroup(g *writeGroup) {
	defer c.groupApplied(g)
	r := c.s.o.Router
	m := wire.MultiRequest{Ops: g.ops}
	var early <-chan struct{} // nil: wait for every earlier reply
	if g.after != nil {
		early = g.after.decided // closed only if it ran as a transaction
	}
	minZxid := int64(0)
	select {
	case <-g.ready:
	case <-early:
		minZxid = g.after.top
	case <-c.writerEnd:
		for _, w := range g.writes {
			c.complete(w.sl, nil)
		}
		return
	}
	one, roles := r.PlanMulti(&m) // a subtree may have moved since the writes were read
	waiting := c.writersWaiting(g, one, roles)
	if roles == nil && minZxid == 0 && isApplied(g.prev) {
		// Every write on one shard, every earlier reply queued and every earlier group
		// applied here: its proposer keeps them in order.
		var viewZxid int64
		if v := one.View(); v != nil {
			viewZxid = v.Zxid()
		}
		for _, w := range g.writes {
			op := shard.Op{Session: g.session, Epoch: g.epoch, Auth: g.auth, Code: w.h.Op, Body: w.body,
				MinZxid: c.lastZxid.Load(), ViewZxid: viewZxid}
			c.propose(w.sl, w.h, w.rec, op, one)
		}
		return
	}
	if waiting {
		// Writes of other connections waited behind the session's earlier groups on a shard
		// this group touches: run it without a transaction, so that no transaction of the
		// session holds those shards prepared while they go in.
		c.s.o.Metrics.groupsYielded.Inc()
		c.runInOrder(g)
		return
	}
	if roles == nil {
		// On one shard, behind a group that is decided but may not be applied yet (its
		// replies may have been queued at its decision): that shard's data proposer is not
		// ordered behind the group's commit, its control proposer is. So these writes run
		// as a group transaction too, with one participant.
		full := make([]shard.TxnRole, len(g.ops))
		for i := range full {
			full[i] = shard.RoleFull
		}
		roles = map[uint64][]shard.TxnRole{one.ID: full}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
	defer cancel()
	replied := false // set by Decided, on this goroutine (RunTxn calls it)
	start := time.Now()
	req := &router.TxnRequest{Session: g.session, Epoch: g.epoch, Auth: g.auth,
		MinZxid: max(c.lastZxid.Load(), minZxid), Multi: m, Group: true, Commits: g.commits,
		Decided: func(z int64, results []wire.MultiResult) {
			g.top = shard.GroupZxid(z, len(g.ops)-1)
			replied = c.replyAtDecision(g, z, results, time.Since(start))
			if !replied {
				g.commits.Release() // its replies wait for its commits to apply here
			}
			close(g.decided)
		}}
	if g.after != nil {
		req.After = g.after.commits
	}
	c.written.noteRoles(roles)
	res, err := r.RunTxn(ctx, req, roles)
	if g.commits.Handed() {
		c.s.o.Metrics.groupCommitsHanded.Inc()
	}
	switch {
	case replied:
		// Every write has its reply: the group is decided, so it commits on every participant
		// (recovery would commit it if this server's commits were lost).
		if err != nil && !errors.Is(err, router.ErrStopped) {
			c.s.o.Log.Warn("group replied at its decision, commit not seen applied here", "session", sessionHex(c.sessionID), "err", err)
		}
	case errors.Is(err, router.ErrGroupBusy):
		c.s.o.Metrics.groupsBusy.Inc()
		c.runInOrder(g)
	case err != nil:
		for _, w := range g.writes {
			c.writeFailed(w.sl, err)
		}
	case res.Failed:
		// Refused as a whole: the session moved or expired, or the request is malformed.
		if res.FailErr == wire.ErrSessionMoved {
			c.logSessionMoved(wire.OpMulti)
		}
		for _, w := range g.writes {
			c.auditWrite(w.h.Op, w.rec, res.FailErr, "")
			c.complete(w.sl, c.frame(w.h.Xid, res.FailErr, 0, nil))
			c.countReply(res.FailErr)
		}
	default:
		for i, w := range g.writes {
			z := shard.GroupZxid(res.Zxid, i)
			c.auditWrite(w.h.Op, w.rec, res.Results[i].Err, res.Results[i].Path)
			c.complete(w.sl, c.frame(w.h.Xid, res.Results[i].Err, z, groupReplyBody(w.h.Op, &res.Results[i])))
			c.countReply(res.Results[i].Err)
		}
	}
}

// Yielding to waiting writers (docs/design.md §8, "Groups yield to waiting writers"). While a
// shard holds one of the session's group transactions prepared, another connection's write to a
// key the group locked (a create under a parent the group also creates under) is refused as
// BatchBlocked and proposed again once the transaction resolves. A session that keeps
// pipelining across shards prepares its next group as soon as the last one is decided, its
// commits travelling with the next prepares, so the shard is never without one of its
// transactions and the waiting write never gets in. The shard counts the batches it refused
// (shard.View.BlockedBatches); when that count grew on a shard since the session's previous
// group ran, the next group runs without a transaction (runInOrder), so the waiting write finds
// the shard free when its proposer proposes it again (after its backoff of 1-50 ms).

// writersWaiting records the blocked-batch counts of the shards g touches (one, or the shards
// of roles) on this server's views, and reports whether any of them changed since the group
// before g recorded its own.
func (c *conn) writersWaiting(g *writeGroup, one *router.Shard, roles map[uint64][]shard.TxnRole) bool {
	r := c.s.o.Router
	counts := map[uint64]uint64{}
	note := func(sh *router.Shard) {
		if sh == nil {
			return
		}
		if v := sh.View(); v != nil {
			counts[sh.ID] = v.BlockedBatches()
		}
	}
	if roles == nil {
		note(one)
	}
	for id := range roles {
		note(r.Shard(id))
	}
	g.blocked.Store(&counts)
	if g.prev == nil {
		return false
	}
	before := g.prev.blocked.Load()
	if before == nil {
		return false
	}
	for id, n := range counts {
		if was, ok := (*before)[id]; ok && n != was {
			return true
		}
	}
	return false
}

// Lingering for the refill. A group right behind a group transaction may start at that
// group's decision (runGroup), but if it did at once it would hold only the writes read while
// that group prepared: with W requests in flight, a session streaming writes over several
// shards would split them into groups of about W/2, two in flight, each costing one control
// entry on every shard it touches. The decision queues the earlier group's replies, and a
// client that keeps W requests in flight answers them with as many new writes a client
// round-trip later, far less than a prepare round. So the pending group waits for them: it
// starts once it holds, besides the writes it held before the decision, as many as the
// earlier group replied to, or after a quarter of the earlier group's prepare round (at most
// maxLinger), whichever comes first, and at once when any other request or the outstanding
// limit needs it (flushGroup). Groups then hold about W writes, one in flight, and a session's
// writes cost half the control entries; a client with fewer writes to send waits at most the
// linger. Ordering is not at stake: the group only collects longer, as it does while earlier
// replies are outstanding.

// countEarly counts a write joining g before the group g follows is decided (g.early).
func (g *writeGroup) countEarly() {
	if g.after != nil && !closed(g.after.decided) {
		g.early++
	}
}

// closed reports whether ch is closed (ch is only ever closed, never sent on).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// maxLinger bounds how long a group waits for the refill after its predecessor's decision.
const maxLinger = 2 * time.Millisecond

// linger starts g's wait for the refill after its predecessor's decision (request goroutine
// only); false when g should start at once: the predecessor's replies were not queued at its
// decision, or g already holds the refill.
func (c *conn) linger(g *writeGroup) bool {
	p := g.after
	if p == nil || !p.repliedAtDecision || g.lingerEnd != nil {
		return false
	}
	d := min(p.round/4, maxLinger)
	// The writes that came after the decision are the refill's first: counting them again
	// would ask a client that keeps W calls in flight for more than W, and the group would
	// wait for the timer with its whole refill in hand.
	refill := min(g.early+len(p.writes), maxGroupOps)
	if d <= 0 || len(g.writes) >= refill {
		return false
	}
	g.refill = refill
	g.lingerEnd = time.NewTimer(d)
	return true
}

// replyAtDecision queues the replies of g's writes once g is decided to commit at zxid, from
// the results its prepares report (router.TxnRequest.Decided), before its commits are applied:
// a write's reply then waits one Raft round (the prepare), not two. It does not when the
// connection holds a watch (a grouped write may trigger it, and its event must be queued before
// the reply, design.md §3), and reports whether it did. Until g is applied here the connection
// is not idle (conn.idle): its later requests that need every earlier write applied (reads, a
// write to one shard proposed alone, a multi, a ping) wait for that as before. A later group
// over several shards does not; its prepares follow g's commits on every shard (runGroup).
func (c *conn) replyAtDecision(g *writeGroup, zxid int64, results []wire.MultiResult, round time.Duration) bool {
	if c.watched.Load() || len(results) != len(g.writes) {
		return false
	}
	g.repliedAtDecision, g.round = true, round
	for i, w := range g.writes {
		z := shard.GroupZxid(zxid, i)
		c.auditWrite(w.h.Op, w.rec, results[i].Err, results[i].Path)
		c.complete(w.sl, c.frame(w.h.Xid, results[i].Err, z, groupReplyBody(w.h.Op, &results[i])))
		c.countReply(results[i].Err)
	}
	c.s.o.Metrics.groupsRepliedAtDecision.Inc()
	return true
}

// groupApplied closes g.applied once g's predecessor is applied (or the connection closed).
// It then drops g's links to earlier groups: every group points at the one before it, and a
// connection's groups would otherwise form one chain, kept whole (writes, bodies, reply frames,
// commits) by whatever still referenced its newest group; 200,000 grouped creates on one
// session kept about 140 MB (docs/benchmarks.md, "Memory per znode"). Only g's own goroutine
// reads g.prev and g.after once g has started (joinGroup sets them before), and this is its
// last step.
func (c *conn) groupApplied(g *writeGroup) {
	c.waitGroupApplied(g.prev)
	g.prev, g.after = nil, nil
	close(g.applied)
}

// isApplied reports whether g (nil: none) is applied on this server.
func isApplied(g *writeGroup) bool {
	return g == nil || closed(g.applied)
}

// waitGroupApplied waits until g (nil: none) is applied on this server; false if the connection
// closed first. It releases g's commits (router.GroupCommits.Release): a commit held for the
// session's next group would otherwise keep this wait up to the hand-off's bound.
func (c *conn) waitGroupApplied(g *writeGroup) bool {
	if g == nil {
		return true
	}
	g.commits.Release()
	select {
	case <-g.applied:
		return true
	case <-c.writerEnd:
		return false
	}
}

// runInOrder proposes g's writes without a transaction, after a group transaction met another
// one (router.ErrGroupBusy; nothing of it applied): as writes that join no group are, each to
// its shard's proposer, a write to another shard than the previous one, or to a shard that moved
// a subtree away lately (router.Shard.Issue, as handleWrite), only once every earlier reply is
// queued. Concurrent groups of several sessions over the same shards would otherwise
// abort each other's prepares over and over; this way they degrade to one Raft round per change
// of shard and always progress.
func (c *conn) runInOrder(g *writeGroup) {
	if !c.waitGroupApplied(g.prev) {
		for _, w := range g.writes {
			c.complete(w.sl, nil)
		}
		return
	}
	var prev uint64
	for i, w := range g.writes {
		plan := c.s.o.Router.PlanWrite(w.h.Op, w.rec)
		var viewZxid int64
		fenced := false
		if plan.Roles == nil && plan.Shard != nil {
			viewZxid, fenced = plan.Shard.Issue(time.Now().UnixMilli())
		}
		if plan.Shard == nil || plan.Shard.ID != prev || fenced {
			select {
			case <-c.whenHead(w.sl):
			case <-c.writerEnd:
				for _, rest := range g.writes[i:] {
					c.complete(rest.sl, nil)
				}
				return
			}
		}
		switch {
		case plan.Roles != nil:
			// Its path became a mount point since it was read: a transaction of its own.
			ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout())
			req := &router.TxnRequest{Session: g.session, Epoch: g.epoch, Auth: g.auth, MinZxid: c.lastZxid.Load(), Multi: plan.Multi}
			c.runTxn(ctx, w.sl, w.h, req, plan.Roles, plan.Single)
			cancel()
			prev = 0
		case plan.Shard == nil:
			c.complete(w.sl, c.frame(w.h.Xid, wire.ErrSystemError, 0, nil))
			prev = 0
		default:
			op := shard.Op{Session: g.session, Epoch: g.epoch, Auth: g.auth, Code: w.h.Op, Body: w.body,
				MinZxid: c.lastZxid.Load(), ViewZxid: viewZxid}
			c.propose(w.sl, w.h, w.rec, op, plan.Shard)
			prev = plan.Shard.ID
		}
	}
}

// groupReplyBody is the body of a grouped write's reply, as the single request's reply has it.
func groupReplyBody(op wire.OpCode, r *wire.MultiResult) []byte {
	if r.Err != wire.ErrOK {
		return nil
	}
	switch op {
	case wire.OpCreate:
		return encodeRecord(&wire.CreateResponse{Path: r.Path})
	case wire.OpCreate2, wire.OpCreateContainer:
		return encodeRecord(&wire.Create2Response{Path: r.Path, Stat: r.Stat})
	case wire.OpSetData:
		return encodeRecord(&wire.SetDataResponse{Stat: r.Stat})
	}
	return nil
}
