package shard

import "github.com/corral/corral/wire"

// Op is one request inside a Batch: a client write (create, create2, createContainer, createTTL,
// delete, setData, setACL, check, multi) or an internal operation proposed by a server
// (OpCloseSession to remove a session's ephemerals, OpDeleteContainer to delete an expired
// container or TTL node).
type Op struct {
	// Session is the ZooKeeper session that issued the request (0 for internal ops that have none).
	Session int64
	// Auth is the caller's authenticated identities at proposal time (ip, digest, ... and
	// ID{Scheme: "super"} for a superuser). ACL checks and the "auth" ACL scheme use it.
	Auth []wire.ID
	// Code is the request opcode.
	Code wire.OpCode
	// Body is the wire-encoded request record (e.g. a CreateRequest), exactly as the client sent it.
	Body []byte
	// MinZxid is the largest zxid the session has seen; the op's zxid is assigned above it so that
	// zxids grow along every session's history across shards.
	MinZxid int64
	// ViewZxid is the zxid of the proposing server's view of this shard when the op was handed
	// to the proposer (0: unknown). The source of a subtree move sends back, for a while, every
	// write with a ViewZxid below the move's zxid: it was issued by a server that had not applied
	// the move yet and so may be pipelined behind a write the move sends back (FIFO order,
	// docs/design.md §9). It is the proposer's own replica's clock, unlike MinZxid, which may come
	// from a faster shard. Batches of codec version 2 and older carry none; their ops use MinZxid.
	ViewZxid int64
	// Epoch is the ownership epoch of Session at the proposing server (0: none): the meta Raft
	// index of the take-over that made that server the session's owner (1 for the server that
	// created it). A shard refuses, with SESSIONMOVED, a write of a session whose epoch is below
	// the one a newer owner recorded there with OpSessionOwner (owner.go).
	Epoch uint64
}

// Batch is the command of one Raft entry: many requests from one proposer, applied in order.
// Proposer and Seq make re-proposal safe: a shard applies a proposer's batches exactly once and in
// Seq order (see BatchStatus).
type Batch struct {
	Proposer uint64 // random id of the proposing server incarnation
	Seq      uint64 // 1, 2, 3, ... per proposer and shard
	Time     int64  // proposer's wall clock in Unix milliseconds: ctime/mtime and TTL decisions use it
	// Control marks a batch of a coordinator's control proposer: it holds only control ops
	// (OpTxnPrepare, OpTxnCommit, OpTxnAbort, OpTxnResolve, and OpAddShard on the root shard)
	// and is applied even while the shard holds a prepared transaction. Client and internal ops in a control batch, and transaction
	// ops in any other batch, fail with UNIMPLEMENTED without consuming a zxid.
	Control bool
	// SessionFence marks a batch whose ops of a closed session (one this shard holds a
	// tombstone of) fail with SESSIONEXPIRED, whatever they are. Every batch a current proposer
	// builds has it; a batch from before the flag existed (an older server's log) applies as it
	// did then, ephemeral creates alone being refused, so replaying an old log stays
	// deterministic. An older server refuses a batch with the flag (unknown flags are an error).
	SessionFence bool
	// Quota says how the batch's writes treat quotas (quota.go): QuotaOff (no accounting, what
	// every batch from before format.LevelQuota does), QuotaCount (zookeeper_stats nodes follow
	// every change below a quota'd path) or QuotaEnforce (also ZooKeeper's
	// zookeeper.enforceQuota: a write beyond a hard limit fails with QUOTAEXCEEDED). The
	// proposing server sets it; apply reads only the batch, so replicas agree.
	Quota QuotaMode
	Ops   []Op
}

// BatchStatus says what the shard did with a batch.
type BatchStatus uint8

// Batch statuses.
const (
	// BatchApplied: every op was applied (each op's own result may still be an error).
	BatchApplied BatchStatus = iota + 1
	// BatchDuplicate: the batch was applied before; Results are the cached results.
	BatchDuplicate
	// BatchDuplicateUnknown: the batch was applied before, but its results are no longer cached.
	BatchDuplicateUnknown
	// BatchOutOfOrder: Seq was not the proposer's next; nothing was applied, no zxid consumed.
	BatchOutOfOrder
	// BatchBlocked: the shard holds a prepared cross-shard transaction and the batch (not a
	// control batch) touches one of its znodes, would reach its reserved zxid floor, or is out
	// of order: nothing was applied, no zxid consumed, the proposer's Seq not advanced and
	// nothing cached. Propose it again (same Seq) after a backoff.
	BatchBlocked
)

// OpResult is the outcome of one Op.
type OpResult struct {
	Err  wire.Err // the reply header's error code
	Zxid int64    // the zxid assigned to the op (also for failed writes, as ZooKeeper does)
	Body []byte   // the wire-encoded response record (nil when the reply has no body)
}

// BatchResult is the outcome of one Batch, returned to the proposer in the Raft entry's Result.
type BatchResult struct {
	Status  BatchStatus
	Results []OpResult // one per op when Status is BatchApplied or BatchDuplicate
}

// Event is a change that can trigger watches, in apply order.
type Event struct {
	Type wire.EventType // NodeCreated, NodeDeleted, NodeDataChanged or NodeChildrenChanged
	Path string
	Zxid int64
	// ACL is the node's ACL (for NodeChildrenChanged, the parent's): watch events are delivered only
	// to connections with READ permission on it, as ZooKeeper does.
	ACL []wire.ACL
	// Session is, on the NodeDeleted of an ephemeral removed because its session closed or
	// expired (OpCloseSession, or a move bringing in a closed session's ephemerals), that
	// session; 0 on every other event. The audit log's
	// ephemeralZNodeDeletionOnSessionCloseOrExpire lines come from it.
	Session int64
}
