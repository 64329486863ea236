package watchhub

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/wire"
)

// Watcher is a client connection as the hub sees it.
//
// Contract: ID is unique among the connections of one Hub and constant for the connection's life.
// AuthIDs and DeliverEvent are called concurrently from shard apply goroutines and from the
// goroutine calling SetWatches; both must be safe for concurrent use and must not block.
// DeliverEvent appends the notification to the connection's ordered outbound queue; the hub calls
// it without holding any of its own locks, but from inside Trigger, so it should return quickly.
type Watcher interface {
	ID() uint64
	AuthIDs() []wire.ID
	DeliverEvent(ev wire.WatcherEvent)
}

// ACLCheck reports whether ids hold perm on a node with the given ACL.
type ACLCheck func(acls []wire.ACL, perm int32, ids []wire.ID) bool

// Options configures a Hub.
type Options struct {
	// CheckACL filters event delivery: a watcher gets an event only if its AuthIDs hold READ on
	// the event's ACL. Nil means acl.Check, ZooKeeper's checkACL.
	CheckACL ACLCheck
}

// Hub is the per-server watch registry. All methods are safe for concurrent use.
//
// Lock order: a goroutine takes these top to bottom and never the other way round.
//
//	registry.byID[i]  watcher id -> state (only around the lookup; slab is taken inside it)
//	stripe.mu         one path stripe at a time
//	wstate.mu         a watcher's reverse index and dead flag
//	recStripe.mu      recursive roots (written under stripe.mu; triggers read it holding nothing)
//	registry.slab     watcher slot allocation
//
// No hub lock is held while Watcher methods are called, so a Watcher may call back
// into the Hub.
type Hub struct {
	check ACLCheck
	seed  maphash.Seed

	stripes  [nStripes]stripe
	rec      [nStripes]recStripe
	recRoots atomic.Int64 // paths with at least one recursive entry
	conns    atomic.Int64 // watchers with at least one data-table entry

	reg registry

	scratch sync.Pool // *[]*wstate reused by Trigger

	ctr struct {
		events    atomic.Uint64
		matched   [5]atomic.Uint64 // indexed by event type 1..4
		delivered atomic.Uint64
		filtered  atomic.Uint64
		catchUp   atomic.Uint64
	}
}

// New returns an empty Hub.
func New(opts Options) *Hub {
	h := &Hub{check: opts.CheckACL, seed: maphash.MakeSeed()}
	if h.check == nil {
		h.check = acl.Check
	}
	for i := range h.stripes {
		h.rec[i].roots = make(map[string]struct{})
	}
	empty := []*slotChunk{}
	h.reg.chunks.Store(&empty)
	h.scratch.New = func() any { s := make([]*wstate, 0, 16); return &s }
	return h
}

func (h *Hub) hash(path string) uint64 { return maphash.String(h.seed, path) }

// AddData registers a standard (one-shot) data watch: getData with watch, and exists with watch
// whether or not the node exists. Like ZooKeeper 3.8 it replaces whatever mode w had in the data
// table for path, including a persistent or recursive one. (Which reads register is the caller's
// call: ZooKeeper registers getData's and getChildren's watches only after NONODE and the READ
// check passed, exists' watch before NONODE and its READ check only on an existing node.)
func (h *Hub) AddData(w Watcher, path string) { h.add(w, path, tData, modeStandard) }

// AddChild registers a standard (one-shot) child watch (getChildren with watch). It replaces the
// mode w had in the child table for path.
func (h *Hub) AddChild(w Watcher, path string) { h.add(w, path, tChild, modeStandard) }

// AddPersistent registers addWatch(PERSISTENT): a data and a child entry that stay after firing.
func (h *Hub) AddPersistent(w Watcher, path string) { h.add(w, path, tBoth, modePersistent) }

// AddPersistentRecursive registers addWatch(PERSISTENT_RECURSIVE): a data and a child entry that
// stay after firing and also match every descendant of path.
func (h *Hub) AddPersistentRecursive(w Watcher, path string) {
	h.add(w, path, tBoth, modeRecursive)
}

func (h *Hub) add(w Watcher, path string, t table, md mode) {
	h.addTo(h.reg.getOrCreate(w), path, t, md)
}

// addTo sets ws's mode for path in table(s) t, unless ws is being removed.
func (h *Hub) addTo(ws *wstate, path string, t table, md mode) {
	hv := h.hash(path)
	si := int(hv & stripeMask)
	s := &h.stripes[si]
	s.mu.Lock()
	defer s.mu.Unlock()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.mu.dead {
		return
	}
	local, ok := s.find(hv, path)
	if !ok {
		local = newPath(s, hv, path)
	}
	ps := s.slot(local)
	old := ps.get(ws.slot)
	nm := old.with(t, md)
	if nm == old {
		return
	}
	ps.set(ws.slot, nm)
	h.account(si, ps, ws, old, nm)
	if old == 0 {
		ws.mu.paths[pathID(si, local)] = struct{}{}
		ws.mu.peak = max(ws.mu.peak, len(ws.mu.paths))
	}
}

// newPath interns path, whose hash is hv, in stripe s and returns its local slot. s.mu is held.
func newPath(s *stripe, hv uint64, path string) uint32 {
	path = strings.Clone(path) // never pin the caller's request buffer
	var local uint32
	if n := len(s.free); n > 0 {
		local = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		if s.nslots > maxLocal {
			panic("watchhub: too many watched paths")
		}
		local = s.nslots
		s.nslots++
		if int(local>>pathChunkBits) == len(s.chunks) {
			s.chunks = append(s.chunks, new(pathChunk))
		}
	}
	ps := s.slot(local)
	ps.path = path
	ps.tag = tagOf(hv)
	s.insert(ps.tag, local)
	return local
}

// dropPathIfEmpty releases a path slot that no longer has entries. s.mu is held.
func dropPathIfEmpty(s *stripe, local uint32) {
	ps := s.slot(local)
	if ps.len() != 0 {
		return
	}
	s.delete(ps.tag, local)
	*ps = pathSlot{}
	if s.index.n == 0 {
		// The stripe is empty: give back all chunks but the first (whose slots are all zero)
		// rather than keep the high-water mark.
		if len(s.chunks) > 1 {
			s.chunks = []*pathChunk{s.chunks[0]}
		}
		s.nslots, s.free = 0, nil
		return
	}
	s.free = append(s.free, local)
}

// account updates the counters and the recursive-root table after an entry of ws on ps changed
// from old to nm. The lock of stripe si is held; the reverse index is the caller's job.
func (h *Hub) account(si int, ps *pathSlot, ws *wstate, old, nm modes) {
	s := &h.stripes[si]
	if od, nd := old.data() != modeNone, nm.data() != modeNone; od != nd {
		if nd {
			s.dataRefs++
			ps.nData++
			if ps.nData == 1 {
				s.dataPaths++
			}
			if ws.nData.Add(1) == 1 {
				h.conns.Add(1)
			}
		} else {
			s.dataRefs--
			ps.nData--
			if ps.nData == 0 {
				s.dataPaths--
			}
			if ws.nData.Add(-1) == 0 {
				h.conns.Add(-1)
			}
		}
	}
	if oc, nc := old.child() != modeNone, nm.child() != modeNone; oc != nc {
		if nc {
			s.childRefs++
			ps.nChild++
		} else {
			s.childRefs--
			ps.nChild--
		}
	}
	if or, nr := old.recursive(), nm.recursive(); or != nr {
		r := &h.rec[si]
		if nr {
			ps.nRec++
			if ps.nRec == 1 {
				r.mu.Lock()
				r.roots[ps.path] = struct{}{}
				r.mu.Unlock()
				h.recRoots.Add(1)
			}
		} else {
			ps.nRec--
			if ps.nRec == 0 {
				r.mu.Lock()
				delete(r.roots, ps.path)
				r.mu.Unlock()
				h.recRoots.Add(-1)
			}
		}
	}
}

// unlinkReverse removes a path from ws's reverse index after ws's last entry on it went away.
// The path's stripe lock is held.
func unlinkReverse(ws *wstate, pid uint32) {
	ws.mu.Lock()
	if !ws.mu.dead {
		delete(ws.mu.paths, pid)
		if len(ws.mu.paths) == 0 && ws.mu.peak > 64 {
			ws.mu.paths = make(map[uint32]struct{}) // Go maps never shrink
			ws.mu.peak = 0
		}
	}
	ws.mu.Unlock()
}

func tableOf(watcherType int32) table {
	switch watcherType {
	case wire.WatcherChildren:
		return tChild
	case wire.WatcherData:
		return tData
	case wire.WatcherAny:
		return tBoth
	}
	return 0
}

// Remove is removeWatches: it drops w's entry for path from the child table (WatcherChildren),
// the data table (WatcherData) or both (WatcherAny), whatever its mode, and reports whether an
// entry was removed (false means the caller answers NOWATCHER). As in ZooKeeper 3.8 the mode is
// not consulted: WatcherData removes the data half of a persistent or recursive watch and leaves
// the child half armed; WatcherAny removes persistent and recursive watches entirely.
func (h *Hub) Remove(w Watcher, path string, watcherType int32) bool {
	t := tableOf(watcherType)
	if t == 0 {
		return false
	}
	ws := h.reg.get(w.ID())
	if ws == nil {
		return false
	}
	hv := h.hash(path)
	si := int(hv & stripeMask)
	s := &h.stripes[si]
	s.mu.Lock()
	defer s.mu.Unlock()
	local, ok := s.find(hv, path)
	if !ok {
		return false
	}
	ps := s.slot(local)
	old := ps.get(ws.slot)
	nm := old.with(t, modeNone)
	if nm == old {
		return false
	}
	ps.set(ws.slot, nm)
	h.account(si, ps, ws, old, nm)
	if nm == 0 {
		unlinkReverse(ws, pathID(si, local))
		dropPathIfEmpty(s, local)
	}
	return true
}

// Has is checkWatches. It reproduces ZooKeeper 3.8's WatchManager.containsWatcher, which answers
// "does the table hold any watch on path" — at the leaf "all watcher types match", and the check
// does not look at which connection owns the watch. So Has(w, ...) is true when any connection has
// an entry for path in the child table (WatcherChildren), the data table (WatcherData) or either
// (WatcherAny). ZooKeeper 3.9 (ZOOKEEPER-4466) made the check per connection; see HasOwn.
func (h *Hub) Has(w Watcher, path string, watcherType int32) bool {
	t := tableOf(watcherType)
	if t == 0 {
		return false
	}
	hv := h.hash(path)
	s := &h.stripes[hv&stripeMask]
	s.mu.Lock()
	defer s.mu.Unlock()
	local, ok := s.find(hv, path)
	if !ok {
		return false
	}
	ps := s.slot(local)
	return (t&tData != 0 && ps.nData > 0) || (t&tChild != 0 && ps.nChild > 0)
}

// HasOwn reports whether w itself has an entry for path in the given table(s): the per-connection
// check of ZooKeeper 3.9, for callers (tests, tools) that need it. checkWatches uses Has.
func (h *Hub) HasOwn(w Watcher, path string, watcherType int32) bool {
	t := tableOf(watcherType)
	ws := h.reg.get(w.ID())
	if t == 0 || ws == nil {
		return false
	}
	hv := h.hash(path)
	s := &h.stripes[hv&stripeMask]
	s.mu.Lock()
	defer s.mu.Unlock()
	local, ok := s.find(hv, path)
	if !ok {
		return false
	}
	m := s.slot(local).get(ws.slot)
	return (t&tData != 0 && m.data() != modeNone) || (t&tChild != 0 && m.child() != modeNone)
}

// RemoveWatcher drops every watch of a closed connection in O(its watches). Call it once the
// connection makes no further registrations (after its request pipeline has stopped): a
// registration that races with RemoveWatcher is ignored, but one that starts after it returns
// creates fresh state that only another RemoveWatcher releases.
func (h *Hub) RemoveWatcher(w Watcher) {
	ws := h.reg.remove(w.ID())
	if ws == nil {
		return
	}
	ws.mu.Lock()
	ws.mu.dead = true
	paths := ws.mu.paths
	ws.mu.paths = nil
	ws.mu.Unlock()
	for pid := range paths {
		si := int(pid & stripeMask)
		local := pid >> stripeBits
		s := &h.stripes[si]
		s.mu.Lock()
		if local < s.nslots {
			ps := s.slot(local)
			if old := ps.get(ws.slot); old != 0 {
				ps.set(ws.slot, 0)
				h.account(si, ps, ws, old, 0)
				dropPathIfEmpty(s, local)
			}
		}
		s.mu.Unlock()
	}
	// No entry names ws.slot any more: new entries need ws.mu with dead unset, and every entry
	// made before was in paths.
	h.reg.freeSlot(ws.slot)
}
