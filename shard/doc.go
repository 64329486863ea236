// Package shard is the replicated znode state machine of one subtree of the namespace, as a pure
// core: State.Apply with ZooKeeper 3.8's write semantics reproduced exactly — stat fields, the
// cversion formula, sequential suffixes, ephemerals, containers and TTL nodes, the order in which
// checks decide which error wins, multi with one zxid and per-op results — plus exactly-once
// batching, zxid assignment, an ephemeral index, lock-free views for reads, the participant side
// of cross-shard transactions (two-phase commit: prepare, commit, abort, resolve, the blocked
// state, and the stubs that stand for top-level znodes living on other shards) and of subtree
// moves, and the state as records to persist. It runs no goroutines, reads no clock and does no
// I/O: package replica runs it as a Raft group's state machine (dragonboat), keeps its records
// in pebble and streams them in snapshots.
//
// # Who calls what
//
//   - The router encodes a Batch (Batch.AppendTo) of client writes and internal ops and proposes
//     it to the shard's Raft group; it decodes the entry's result with DecodeBatchResult.
//   - A replica (replica.Machine, which dragonboat drives) applies each entry with State.Apply,
//     persists the changes (State.WriteChanges), and hands the new *View and the entries' events
//     to its listener (the router), which publishes the view to readers and the events to the
//     watch hub.
//   - The server answers reads from a View (View.Read, GetEphemerals) without locks.
//   - The session manager proposes OpCloseSession; the leader's expiry scan
//     (View.ExpiryCandidates) proposes OpDeleteContainer.
//   - A transaction coordinator (the router) proposes OpTxnPrepare, OpTxnCommit, OpTxnAbort and
//     OpTxnResolve through each participant's control proposer (Batch.Control), and its recovery
//     loop resolves transactions a view reports prepared past their deadline (View.Prepared).
//   - The cluster adds a data shard online by proposing OpAddShard to the root shard's control
//     proposer; every server learns the root shard's list of added shards from its views
//     (View.AddedShards) and starts the new Raft groups (addshard.go, docs/design.md §12).
//
// # Determinism contract
//
// State.Apply is a pure function of (state, batch). It reads no clock (times come from
// Batch.Time, stamped by the proposer: ctime, mtime, TTL expiry, proposer and tombstone
// expiry all use it), no randomness, and never lets the iteration order of a Go map influence the
// state, the results or the events. Every replica that applies the same entries from the same
// state reaches byte-identical state (State.AppendCanonical) and returns identical results.
// Anything that shapes apply is in StateConfig and must be the same on all replicas.
// A malformed entry cannot come from Corral's proposers: DecodeBatch fails with ErrMalformedBatch
// and the replica stops (fatal) rather than let replicas diverge.
//
// # Zxids
//
// A zxid is counter<<8 | tag: tag is the shard's 8-bit Config.Tag, counter a 55-bit hybrid
// logical clock. Every op of an applied batch consumes one zxid, whether it succeeds or fails (as
// ZooKeeper logs an error txn); a whole multi, and a closeSession deleting many nodes, use one.
// For op o of a batch b:
//
//	counter = max(prev + 1, b.Time << 12, (o.MinZxid >> 8) + 1)
//
// where prev is the counter of the shard's last zxid (State.LastZxid; 0 before any write).
//   - Unique: within a shard the counter strictly increases; across shards the tags differ (tags
//     must be unique among the shards of a cluster).
//   - Increasing per shard: counter > prev, and the tag is constant, so every zxid exceeds every
//     earlier zxid of the shard, across restarts too (the last zxid is persisted with the applied
//     index and in snapshots).
//   - Above what the session has seen: MinZxid is the largest zxid the proposing session has
//     seen (on any shard). counter >= (MinZxid>>8) + 1 gives zxid >= ((MinZxid>>8)+1)<<8 >
//     MinZxid. So zxids grow along every session's history, across shards.
//   - Close to wall time: b.Time<<12 keeps the counters of all shards near the same physical
//     clock, so zxids of different shards are roughly comparable (4096 logical ticks per ms);
//     inputs that would overflow 55 bits are ignored instead of wrapping.
//   - Time follows the zxid: the time of an op (ctime, mtime, TTL and tombstone decisions) is
//     max(b.Time, counter>>12), so it never goes backwards as zxids grow, on one shard or
//     across shards. It exceeds the batch time only while the counter runs ahead of the clock:
//     a MinZxid from a faster clock, over 4096 ops in a millisecond, or after a cross-shard
//     commit at a reserved floor (up to reserveMs ahead; the commit's own time is its zxid's
//     millisecond too).
//
// # Exactly once and in order
//
// dragonboat's client sessions are unavailable to on-disk state machines, so Batch carries
// (Proposer, Seq) and the state keeps per proposer the last applied Seq and the results of its
// last 32 batches (persisted): Seq == last+1 (or 1 for an unknown proposer) applies; an older Seq
// returns BatchDuplicate with the cached results or BatchDuplicateUnknown; anything else is
// BatchOutOfOrder and changes nothing. Proposers silent for 24 h of batch time are forgotten.
//
// # Cross-shard transactions
//
// A client multi whose ops live on several shards, and the create or delete of a top-level
// znode "/x" that lives on data shard X while "/" lives on the root shard, run as a transaction
// over several shards. The coordinator sends every participant OpTxnPrepare with the multi
// as ParticipantMulti gives it (its own ops; another shard's op as a placeholder unless the
// whole-request checks need it) and, per op, the participant's TxnRole (RoleNone: another
// shard's op, skipped;
// RoleFull: evaluated as in a single-shard multi; RoleParent and RoleNode: the two halves of a
// top-level create or delete, see createAs and deleteAs). A participant evaluates its ops in
// index order in the overlay, exactly as multi does, at the provisional zxid floor<<8|tag and
// the batch time, and discards the overlay either way: on the first failure it answers
// TxnFailed (the op's index and error, or index -1 for a MARSHALLINGERROR of the whole
// request); on success it holds the transaction prepared and answers TxnPrepared with its
// reserved floor — the zxid counter it would assign next, max(last>>8 + 1, batch.Time<<12,
// MinZxid>>8 + 1), raised to (batch.Time + reserveMs)<<12 (reserveMs = 250) — and its
// provisional results. It also records the transaction's lock set: the tree keys its ops of
// this shard touch (node and parent of a create or delete — for RoleParent "/" and the stub's
// key —, the node of a setData or check). The coordinator commits with one zxid Z on
// every participant: Z's counter is the largest floor and its tag the anchor's (the
// participant that records the decision, to which recovery sends OpTxnResolve). Commit
// re-evaluates the ops under Z and the commit's time, applies the overlay, and sets the last
// zxid to Z. A group transaction (TxnPrepare.Group, format level 4: a session's writes
// committed together) differs in three ways: an op that fails gets its error result and the
// others still apply; op i gets zxid GroupZxid(Z, i) (Z's counter plus i) and the last zxid
// becomes the group's last; and it is decided when every participant prepared it (its prepare
// names them all, Parts), so recovery probes each participant (TxnResolve.Probe: its decision,
// or its floor while prepared; an unknown transaction is recorded aborted) instead of asking
// the anchor. Invariants:
//
//   - One prepared transaction per shard. While it is prepared the shard applies no batch that
//     touches the transaction's znodes, and no zxid at or above the reserved floor: a
//     non-control batch is BatchBlocked (checked before the proposer table: nothing applied, no
//     zxid consumed, Seq not advanced, nothing cached, no proposer or tombstone expiry; only
//     the advisory count of blocked batches, View.BlockedBatches, grows) when any
//     of its ops touches a locked key (create, delete, deleteContainer: node and parent;
//     setData, setACL, check: the node; a multi: the union over its ops; a body that does not
//     decode: nothing, it fails with MARSHALLINGERROR), is a closeSession (its nodes are not
//     known in advance) or an OpSessionOwner (the prepared transaction may be the session's),
//     or would get a zxid counter >= the floor (its batch time reached the
//     reservation, or a MinZxid pushes it there: then the shard blocks everything until the
//     decision, which recovery bounds); an out-of-order batch is reported BatchBlocked too, so
//     that its proposer backs off behind a blocked predecessor. Other batches apply; while the
//     prepared transaction is a cut (TxnPrepare.Cut, cut.go: a backup's, with no ops, never
//     committed) every non-control batch is BatchBlocked. A write
//     changes only the nodes of its key set, and a transaction op's outcome depends only on
//     the nodes of its own keys (node and parent: existence, version, ACL, children, cversion)
//     and the session's tombstone, which only closeSession adds; control batches carry only
//     transaction ops, which change neither the tree nor the last zxid except the commit; and
//     an expired tombstone cannot turn an ephemeral create that passed into one that fails. So
//     the ops evaluate at commit (and at a repeated prepare, which answers the recorded floor)
//     exactly as at prepare (but for zxid and time), and the commit succeeds.
//   - Zxids still strictly increase in apply order on every shard: every op applied while the
//     transaction is prepared has a counter below the participant's floor, Z's counter is at
//     least that floor, and a commit with Z <= the last zxid is refused (TxnAborted, nothing
//     changes, the transaction stays prepared: a coordinator bug). After the commit the last
//     zxid is Z, so the shard's next own zxid is above it.
//   - Z is unique across shards: it carries the anchor's tag, only the anchor's clock produces
//     zxids with that tag, and Z is above the anchor's previous zxid too.
//   - A transaction commits under the one zxid Z on every participant, with one ctime/mtime
//     (TxnCommit.Time); its events carry Z. Transaction ops consume no zxid but the commit.
//   - Every step is idempotent: the decision (committed with Z, or aborted) is recorded on each
//     participant, and a repeated or late prepare, commit, abort or resolve answers from it; a
//     decided transaction is never prepared again; an abort or resolve of an unknown
//     transaction records it aborted, so a prepare still in flight is refused. Decisions
//     expire after 24 h of batch time, like tombstones.
//   - Everything is a pure function of (state, batch), as every other op.
//
// Transaction ops in a non-control batch, and client or internal ops in a control batch, fail
// with UNIMPLEMENTED and consume no zxid. The prepared transaction (the TxnPrepare, the
// session, auth, MinZxid and batch time of its prepare op, and the reserved floor; the lock set
// is recomputed from the TxnPrepare on load) and the decisions are persisted with the rest of
// the state.
//
// # Stubs
//
// The parent side of a top-level create (RoleParent on the root shard) runs the whole create
// check sequence and updates "/" as a create does, but stores a stub instead of the node: a
// node marked as a stub (in memory its ACL pointer is stubACL, on disk a flag), without data,
// owned by the session for an ephemeral mode (else 0). A stub
// is listed among the children of "/" (getChildren, Children) and counted in its stat, so "/"
// looks exactly as in ZooKeeper; it takes the name (NODEEXISTS); and it is no node of this
// shard: reads of its own path are NONODE, it is never a parent, setData, check and delete see
// no node there, Get, Walk, Len, CountDescendants and getAllChildrenNumber skip it, Ephemerals
// does not list it (the node's own shard does, so shards never list a path twice), and it is
// never an expiry candidate. closeSession removes ephemeral stubs with only the parent's
// NodeChildrenChanged; the parent side of a delete (RoleParent) removes the stub the same way.
// The node side (RoleNode on X) creates or deletes the real node with no parent record and only
// NodeCreated or NodeDeleted.
//
// # Sessions
//
// Ephemeral creates need a session (Op.Session != 0). OpCloseSession deletes the session's
// ephemerals in this shard under one zxid and leaves a tombstone (CloseSessionFence: the
// tombstone alone, the first of the close's two rounds): later writes of the session in a
// SessionFence batch, and ephemeral creates in any batch, fail with SESSIONEXPIRED, so a write
// proposed before the close but applied after it cannot leak an ephemeral or land after the
// session's ephemerals are gone. Tombstones expire after 24 h of batch time. Session ids must not have
// 0xFF as top byte nor be math.MinInt64 (the TTL and container encodings of ephemeralOwner).
//
// OpSessionOwner records a session's ownership epoch (owner.go): afterwards every write of the
// session with a lower Op.Epoch fails with SESSIONMOVED (an error txn), wherever its path
// leads, and so does a cross-shard prepare. The record only grows, waits while a transaction is
// prepared, and goes with the session's close.
//
// # Where the shard deliberately differs from ZooKeeper 3.8
//
//   - A top-level check (13) is a write that consumes a zxid, as in 3.8, but succeeds with no
//     body (3.8 tries to serialise a SetDataResponse with a null stat; 3.9 made check a read).
//   - createTTL with a non-TTL mode is BADARGUMENTS whatever the ttl (3.8 accepts ttl < 0 in prep
//     and then fails in apply).
//   - OpDeleteContainer refuses persistent nodes and re-checks a TTL node's expiry against the
//     batch time (3.8 deletes any non-ephemeral empty node it is handed).
//   - Quotas (quota.go): the stats of a quota count only the nodes this shard holds (the router
//     places /zookeeper/quota/<p> with <p>, so that is all of them unless a subtree below <p> is
//     mounted elsewhere); a multi's ops are checked against the limits one after the other,
//     each seeing the earlier ones (3.8 checks them all against the state before the multi);
//     "Quota exceeded" is logged by every replica.
//   - Child lists come back in byte order (ZooKeeper's order is unspecified).
//
// # In-memory layout
//
// The tree is a btree.BTreeG[*node] keyed by the path with '/' replaced by "\x01" (the root is
// ""), so a node's subtree is one contiguous key range and its children are found by skipping
// from child to child. Nodes are immutable once published: a change replaces the *node, and a
// View is three O(1) copy-on-write btree clones (nodes, ephemerals by session, containers and
// TTL nodes). Identical ACL lists are interned. Ops stage their changes in an overlay (txn) so a
// multi sees its earlier ops and a failure discards everything.
//
// # Records
//
// The state persists as records, keys and values (records.go, which documents the layout):
// State.WriteInitial and State.WriteChanges write them to a RecordWriter, LoadState reads them
// back from a RecordReader; where they live is the replica's business (package replica: pebble).
package shard
