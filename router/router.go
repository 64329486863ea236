package router

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/corral/corral/shard"
)

// Trigger hands a batch of applied changes to the watch hub. It must not block.
type Trigger func(events []shard.Event)

// Shard is this server's handle on one data shard: its latest published view, its proposer and
// the registration lock that orders watch registration against watch triggering.
type Shard struct {
	ID       uint64
	Proposer *Proposer
	// Control proposes the cross-shard transaction steps (prepare, commit, abort, resolve) in
	// control batches, which the shard applies even while a prepared transaction blocks it.
	Control *Proposer
	// Taps is the registry Proposer and this server's replica share for views between the
	// ops of its batches (shard.Taps); nil where the server does not park reads.
	Taps *shard.Taps

	closer closer

	tag     atomic.Uint32 // the zxid tag; 0 until known for a shard added online (shardset.go)
	regMu   sync.RWMutex
	view    atomic.Pointer[shard.View]
	trigger Trigger
	maxZxid *atomic.Int64
	mounted atomic.Bool // serves a subtree in the mount table
	// routed is the last view whose routes (subtrees moved in or out) were merged into the
	// mount table; only this shard's apply goroutine touches it.
	routed    *shard.View
	testHooks shardTestHooks // test-only behaviours of corraltesting builds (testhooks.go)
	ready     chan struct{}
	once      sync.Once
}

// Tag returns the shard's zxid tag (0 for an added shard whose record this server has not
// applied yet).
func (s *Shard) Tag() uint8 { return uint8(s.tag.Load()) }

// View returns the latest published view (nil before the shard has opened).
func (s *Shard) View() *shard.View { return s.view.Load() }

// Ready is closed once the shard published its first view.
func (s *Shard) Ready() <-chan struct{} { return s.ready }

// RegisterLock takes the shard's registration lock in shared mode and returns its unlock.
// Hold it while loading the view, reading, registering a watch and queueing the reply.
func (s *Shard) RegisterLock() func() {
	s.regMu.RLock()
	return s.regMu.RUnlock
}

// publish triggers the events and publishes v, atomically with respect to RegisterLock holders.
func (s *Shard) publish(v *shard.View, events []shard.Event) {
	s.regMu.Lock()
	if len(events) > 0 && s.trigger != nil {
		s.trigger(events)
	}
	s.view.Store(v)
	s.regMu.Unlock()
	z := v.Zxid()
	for s.mounted.Load() {
		cur := s.maxZxid.Load()
		if z <= cur || s.maxZxid.CompareAndSwap(cur, z) {
			break
		}
	}
	s.once.Do(func() { close(s.ready) })
}

// Mount maps a subtree to the data shard that serves it.
type Mount struct {
	Path    string // "/" or a znode path
	ShardID uint64
	// Zxid is the commit zxid of the move that put the subtree on the shard (0: configured
	// in zoo.cfg). A read of the subtree waits until the shard's view has it (a server may
	// learn of a move from the source before its replica of the destination applied it).
	Zxid int64
}

// Router resolves paths to shards and is the shard state machines' apply listener.
type Router struct {
	set       atomic.Pointer[shardSet] // the data shards (shardset.go); copy on write
	placement Placement
	mounts    atomic.Pointer[[]Mount] // sorted by descending path length
	mountMu   sync.Mutex              // serialises changes of mounts and of set
	mountGen  atomic.Uint64           // MountGen
	maxZxid   atomic.Int64
	sync      SyncFunc
	txn       txnOptions
	trigger   Trigger
	hooks     ShardHooks
	addedSeen int                                    // records of the root shard's list learned; its apply goroutine owns it
	quotaMode atomic.Pointer[func() shard.QuotaMode] // quota.go
}

// New returns a router over the given data shards (the first is the root shard, which holds
// "/"); trigger receives every applied event. With PlaceHash every shard serves top-level
// subtrees; with PlaceSingle only the root shard serves znodes.
func New(shardIDs []uint64, tags []uint8, placement Placement, trigger Trigger) *Router {
	r := &Router{placement: placement, trigger: trigger}
	set := &shardSet{byID: map[uint64]*Shard{}, initial: append([]uint64(nil), shardIDs...)}
	for i, id := range shardIDs {
		s := r.newShard(id, tags[i])
		set.byID[id] = s
		set.ordered = append(set.ordered, s)
	}
	r.set.Store(set)
	r.SetMounts([]Mount{{Path: "/", ShardID: shardIDs[0]}})
	return r
}

// newShard returns a handle for data shard id.
func (r *Router) newShard(id uint64, tag uint8) *Shard {
	s := &Shard{ID: id, trigger: r.trigger, maxZxid: &r.maxZxid, ready: make(chan struct{})}
	s.tag.Store(uint32(tag))
	s.closer.init()
	return s
}

// Placement returns how top-level znodes are spread over the shards.
func (r *Router) Placement() Placement { return r.placement }

// Root returns the root shard (it holds "/" and "/zookeeper").
func (r *Router) Root() *Shard { return r.set.Load().ordered[0] }

// SetMounts replaces the mount table.
func (r *Router) SetMounts(m []Mount) {
	r.mountMu.Lock()
	defer r.mountMu.Unlock()
	r.storeMounts(append([]Mount(nil), m...))
}

// MountGen returns the mount table's generation, which grows every time the table changes (a
// subtree moved, or the table was set).
func (r *Router) MountGen() uint64 { return r.mountGen.Load() }

// storeMounts publishes the mount table cp (which it sorts); r.mountMu is held.
func (r *Router) storeMounts(cp []Mount) {
	defer r.mountGen.Add(1)
	in := map[uint64]bool{}
	for _, mt := range cp {
		in[mt.ShardID] = true
	}
	set := r.set.Load()
	for id, s := range set.byID {
		// Under PlaceHash every shard of the first start serves top-level subtrees; a shard
		// added online serves only what is moved onto it.
		s.mounted.Store(in[id] || r.placement == PlaceHash && set.isInitial(id))
	}
	sort.SliceStable(cp, func(i, j int) bool { return len(cp[i].Path) > len(cp[j].Path) })
	r.mounts.Store(&cp)
}

// mergeRoutes folds the routes of v, a view of shard id, into the mount table: a subtree that
// moved in maps to id, one that moved out to its destination; of two entries for one path the
// later move (larger zxid) wins. Called on the shard's apply goroutine before v is published,
// so a reader that sees a view without a moved subtree also sees the mount that sends it
// elsewhere.
func (r *Router) mergeRoutes(id uint64, v *shard.View) {
	r.mountMu.Lock()
	defer r.mountMu.Unlock()
	cur := *r.mounts.Load()
	next := append([]Mount(nil), cur...)
	changed := false
	for _, rt := range v.Routes() {
		to := rt.To
		if to == 0 {
			to = id
		}
		r.shardLocked(to) // a shard added online whose record this server has not applied yet
		i := slices.IndexFunc(next, func(m Mount) bool { return m.Path == rt.Path })
		switch {
		case i < 0:
			next = append(next, Mount{Path: rt.Path, ShardID: to, Zxid: rt.Zxid})
		case next[i].Zxid < rt.Zxid:
			next[i] = Mount{Path: rt.Path, ShardID: to, Zxid: rt.Zxid}
		default:
			continue
		}
		changed = true
	}
	if changed {
		r.storeMounts(next)
	}
}

// Mounts returns the mount table.
func (r *Router) Mounts() []Mount { return append([]Mount(nil), *r.mounts.Load()...) }

// Lookup returns the shard serving path: the shard of the longest explicit mount that is a
// prefix of path (at a component boundary), else, under PlaceHash, the root shard for "/",
// for "/zookeeper" and for top-level names that end in ten digits (what a sequential create at
// the top level produces, so such creates stay on one shard), and TopLevelShard of the path's
// top-level name for everything else; under PlaceSingle, the root shard. With quotas on
// (SetQuotaMode), /zookeeper/quota/<p>/... is looked up as /<p>/... (QuotaTarget).
func (r *Router) Lookup(path string) *Shard {
	sh, _ := r.Route(path)
	return sh
}

// Route is Lookup that also returns the zxid of the move that put the path's subtree on the
// shard (0 when none did): a read must not use a view of the shard below it.
func (r *Router) Route(path string) (*Shard, int64) {
	path = r.quotaRoute(path) // /zookeeper/quota/<p> lives with <p> (quota.go)
	// The set is loaded after the mount table: a mount names only shards already in the set.
	mounts := *r.mounts.Load()
	set := r.set.Load()
	for _, m := range mounts {
		if m.Path == "/" {
			if r.placement == PlaceHash {
				break
			}
			return set.byID[m.ShardID], m.Zxid
		}
		if path == m.Path || len(path) > len(m.Path) && strings.HasPrefix(path, m.Path) && path[len(m.Path)] == '/' {
			return set.byID[m.ShardID], m.Zxid
		}
	}
	if r.placement == PlaceHash {
		name := topLevelName(path)
		if name == "" || hasSequentialSuffix(name) {
			return set.ordered[0], 0
		}
		return set.byID[TopLevelShard(name, set.initial)], 0
	}
	return nil, 0
}

// Shard returns the handle of a data shard by id (nil if this server does not know it).
func (r *Router) Shard(id uint64) *Shard { return r.set.Load().byID[id] }

// Shards returns every data shard handle in id order, shards added online included. The slice
// is shared: do not modify it. A shard added later is not in it; call again.
func (r *Router) Shards() []*Shard { return r.set.Load().ordered }

// LastZxid is the largest zxid this server has applied on any mounted shard: ZooKeeper's
// "last processed zxid", carried in every reply header. Shards that serve no subtree (they only
// see closeSession operations) do not count: their clock-driven zxids could run ahead of a
// mounted shard's, and a client that saw such a zxid would skip catch-up events for that shard's
// later writes (see docs/design.md, section 1).
func (r *Router) LastZxid() int64 { return r.maxZxid.Load() }

// Applied implements replica.Listener.
func (r *Router) Applied(shardID uint64, v *shard.View, events []shard.Event) {
	if s := r.Shard(shardID); s != nil {
		s.testHooks.beforePublish(len(events))
		if s == r.Root() {
			r.learnAdded(v.AddedShards())
		}
		if v.RoutesChanged(s.routed) {
			r.mergeRoutes(shardID, v)
		}
		s.routed = v
		s.publish(v, events)
	}
}

// LockAll takes every shard's registration lock in shared mode, in id order (for watches that
// span shards, such as setWatches and recursive watches on "/"), and returns the unlock. A shard
// added meanwhile is not locked: it serves nothing until a move installs a subtree on it, and
// a move fires no events.
func (r *Router) LockAll() func() {
	ordered := r.set.Load().ordered
	for _, s := range ordered {
		s.regMu.RLock()
	}
	return func() {
		for i := len(ordered) - 1; i >= 0; i-- {
			ordered[i].regMu.RUnlock()
		}
	}
}
