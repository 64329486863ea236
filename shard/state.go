package shard

import (
	"github.com/corral/corral/wire"
)

// StateConfig is the part of Config that shapes apply. It must be identical on every replica of
// a shard and must not change over the shard's life (Tag, ExtendedTypes) or only through a
// replicated operation (Root, once mounting exists).
type StateConfig struct {
	// Tag is the low 8 bits of every zxid this shard assigns; unique among live shards.
	Tag uint8
	// OwnsRoot seeds the tree with "/", "/zookeeper", "/zookeeper/quota" and "/zookeeper/config".
	OwnsRoot bool
	// Root is "/" for the root shard, "" for a data shard: recorded at creation (corral inspect
	// shows it). Which subtrees a shard serves is the mount table's and the routes' business
	// (placement, moves), not this field's.
	Root string
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled); without it a TTL create
	// mode is UNIMPLEMENTED.
	ExtendedTypes bool
}

// State is the replicated state of one shard: the znode tree with its indexes, the last assigned
// zxid, the proposer table (exactly-once, FIFO batches), the closed-session tombstones, the
// session ownership epochs, and the
// cross-shard transaction state (the prepared transaction, the recorded decisions).
//
// State is not safe for concurrent use: one goroutine (dragonboat's apply loop) calls Apply;
// readers use Views, which are immutable.
type State struct {
	cfg        StateConfig
	tree       tree
	lastZxid   int64
	proposers  map[uint64]*proposer
	tombstones tombstones
	owners     map[int64]uint64 // session -> ownership epoch recorded by OpSessionOwner (owner.go)
	prepared   *preparedTxn     // nil, or the one transaction held prepared
	decisions  decisions
	routes     *routes      // subtrees moved in or out (nil: none)
	added      []AddedShard // root shard: data shards added online (addshard.go); copy on write
	// blocked counts the batches this replica applied as BatchBlocked since it was loaded. It
	// is advisory: not persisted, not in snapshots, and no outcome depends on it; coordinators
	// read it from views to see that writers wait behind prepared transactions
	// (View.BlockedBatches).
	blocked uint64

	// batchQuota is the quota mode of the batch being applied (Batch.Quota); quotaMsgs the
	// quota messages of the applies since the replica last took them (quota.go).
	batchQuota QuotaMode
	quotaMsgs  []string

	// scratch reused by Apply
	tx  txn
	enc wire.Encoder

	// track is set for a replica's state (AttachReplica): Apply then records what changed for
	// WriteChanges.
	track bool
	// taps, set by AttachReplica, hands views between ops to the server that proposed a batch
	// (taps.go); tapShard is the shard id those views carry.
	taps     *Taps
	tapShard uint64
	dirty    dirtySet
}

// NewState returns the initial state of a shard: the ZooKeeper 3.8 initial tree when
// cfg.OwnsRoot, an empty tree otherwise.
func NewState(cfg StateConfig) *State {
	s := &State{cfg: cfg, proposers: make(map[uint64]*proposer), tombstones: newTombstones(),
		owners: make(map[int64]uint64), decisions: newDecisions()}
	if cfg.OwnsRoot {
		s.tree = initialTree()
	} else {
		s.tree = newTree()
	}
	s.tx.s = s
	s.dirty.reset()
	return s
}

// LastZxid returns the last zxid the shard assigned (0 before any write).
func (s *State) LastZxid() int64 { return s.lastZxid }

// Config returns the state's configuration.
func (s *State) Config() StateConfig { return s.cfg }

// View returns an immutable snapshot of the current state for lock-free reads. It costs three
// O(1) btree clones; the live tree then copies shared btree nodes on its next writes.
func (s *State) View(shardID uint64) *View {
	v := &View{shardID: shardID, zxid: s.lastZxid, tree: s.tree.clone(), routes: s.routes, added: s.added, blocked: s.blocked}
	if s.prepared != nil {
		v.prepared = s.prepared.info()
	}
	return v
}

// dirtySet records what Apply changed since the last store flush.
type dirtySet struct {
	nodes      map[string]struct{} // tree keys written or deleted
	proposers  map[uint64]struct{} // proposers whose header changed or that were forgotten
	results    []resultKey         // cached batch results written
	dropped    []resultKey         // cached batch results evicted
	tombstones map[int64]struct{}  // tombstones added or expired
	owners     map[int64]struct{}  // session ownership epochs recorded or dropped
	prepared   bool                // the prepared transaction was set or cleared
	decisions  map[uint64]struct{} // transaction decisions recorded or expired
	routes     bool                // the routes changed
	added      bool                // the list of added shards changed
}

type resultKey struct {
	proposer uint64
	seq      uint64
}

func (d *dirtySet) reset() {
	d.nodes = make(map[string]struct{})
	d.proposers = make(map[uint64]struct{})
	d.results = d.results[:0]
	d.dropped = d.dropped[:0]
	d.tombstones = make(map[int64]struct{})
	d.owners = make(map[int64]struct{})
	d.prepared = false
	d.decisions = make(map[uint64]struct{})
	d.routes = false
	d.added = false
}

func (d *dirtySet) empty() bool {
	return len(d.nodes) == 0 && len(d.proposers) == 0 && len(d.results) == 0 && len(d.dropped) == 0 &&
		len(d.tombstones) == 0 && len(d.owners) == 0 && !d.prepared && len(d.decisions) == 0 && !d.routes && !d.added
}
