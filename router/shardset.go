package router

import (
	"slices"

	"github.com/corral/corral/shard"
)

// The set of data shards this server routes to. It starts with the shards of the first start
// (zoo.cfg's corral.shards) and grows at run time when a data shard is added online
// (docs/design.md §12): the root shard's state lists the added shards, and this server learns
// each record when its replica of the root shard publishes a view that holds it (Applied). The
// set is copy on write behind an atomic pointer, so Lookup, Route, Shard, Shards and LockAll
// read it without a lock while it grows; Router.mountMu serialises the changes (with those of
// the mount table).

// shardSet is one immutable version of the set.
type shardSet struct {
	byID    map[uint64]*Shard
	ordered []*Shard // by id; the root shard first
	// initial are the ids of the first start's data shards. PlaceHash hashes top-level names
	// over these only, so adding a shard never moves existing data: an added shard serves only
	// what is moved (or mounted) onto it.
	initial []uint64
}

// with returns a new set that also holds sh (whose id is new).
func (ss *shardSet) with(sh *Shard) *shardSet {
	next := &shardSet{byID: make(map[uint64]*Shard, len(ss.byID)+1), initial: ss.initial}
	for id, o := range ss.byID {
		next.byID[id] = o
	}
	next.byID[sh.ID] = sh
	next.ordered = append(slices.Clone(ss.ordered), sh)
	slices.SortFunc(next.ordered, func(a, b *Shard) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return next
}

func (ss *shardSet) isInitial(id uint64) bool { return slices.Contains(ss.initial, id) }

// ShardHooks connect the router to the server that runs the replicas of added shards.
type ShardHooks struct {
	// Proposers sets sh.Proposer and sh.Control. The router calls it once for every shard
	// handle it adds at run time, before the handle becomes visible to any reader (so before
	// the replica can start and before anything can submit to it), on an apply goroutine:
	// it must not block.
	Proposers func(sh *Shard)
	// Start asks for this server's replica of an added shard to be started, once per record,
	// after Proposers ran for its handle. It runs on the root shard's apply goroutine and must
	// not block (dragonboat forbids starting a replica from there): hand the work to a
	// goroutine the server owns.
	Start func(rec shard.AddedShard)
}

// SetShardHooks installs the hooks (cluster wiring, before any replica starts).
func (r *Router) SetShardHooks(h ShardHooks) { r.hooks = h }

// shardLocked returns the handle of data shard id, adding one if the set does not hold it yet.
// r.mountMu is held. A handle added for a route (a subtree moved to a shard this server has not
// learned of yet: its replica of the root shard lags behind its replica of the move's source)
// has tag 0 until the root shard's record arrives (learnAdded); reads routed to it wait for its
// replica (the SyncFunc waits), writes are retried by its proposer until the replica runs, and a
// transaction never needs its tag before its local replica applied a prepare, which it can only
// do once started.
func (r *Router) shardLocked(id uint64) *Shard {
	cur := r.set.Load()
	if sh := cur.byID[id]; sh != nil {
		return sh
	}
	sh := r.newShard(id, 0)
	if r.hooks.Proposers != nil {
		r.hooks.Proposers(sh)
	}
	r.set.Store(cur.with(sh))
	return sh
}

// learnAdded adds the shards of the root shard's list this server has not learned of yet and
// asks for their replicas to be started. Called on the root shard's apply goroutine, before the
// view holding the records is published.
func (r *Router) learnAdded(list []shard.AddedShard) {
	if len(list) <= r.addedSeen {
		return
	}
	r.mountMu.Lock()
	var start []shard.AddedShard
	for _, rec := range list[r.addedSeen:] {
		sh := r.shardLocked(rec.ID)
		sh.tag.Store(uint32(rec.Tag))
		start = append(start, rec)
	}
	r.mountMu.Unlock()
	r.addedSeen = len(list)
	for _, rec := range start {
		if r.hooks.Start != nil {
			r.hooks.Start(rec)
		}
	}
}

// AddedShards returns the data shards added online as the root shard's latest view lists them
// (nil before it opened).
func (r *Router) AddedShards() []shard.AddedShard {
	if v := r.Root().View(); v != nil {
		return v.AddedShards()
	}
	return nil
}

// InitialShards returns the ids of the first start's data shards (the ones PlaceHash uses).
func (r *Router) InitialShards() []uint64 { return slices.Clone(r.set.Load().initial) }
