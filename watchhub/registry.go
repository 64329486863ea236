package watchhub

import (
	"sync"
	"sync/atomic"
)

// wstate is the hub's record of one Watcher: its slot number (what path entries store) and the
// reverse index of the paths it watches, used by RemoveWatcher.
type wstate struct {
	w    Watcher
	id   uint64
	slot uint32

	// nData counts the watcher's entries with a data mode; the hub's connection count (wchs)
	// counts watchers with nData > 0. Updated under the owning path stripe's lock.
	nData atomic.Int32

	mu struct {
		sync.Mutex
		dead  bool                // RemoveWatcher has started: registrations are ignored
		paths map[uint32]struct{} // ids of the paths with an entry for this watcher
		peak  int                 // largest len(paths) since paths was allocated
	}
}

const (
	regStripes = 64
	chunkBits  = 10
	chunkSize  = 1 << chunkBits
)

type slotChunk [chunkSize]atomic.Pointer[wstate]

// registry maps watcher ids to their state and slot numbers to state. Lookups by slot are
// lock-free (atomic loads), so triggers resolve entries without touching the registry locks.
type registry struct {
	byID [regStripes]struct {
		sync.Mutex
		m map[uint64]*wstate
		_ [48]byte
	}

	slab struct {
		sync.Mutex
		free []uint32
		next uint32
	}
	chunks atomic.Pointer[[]*slotChunk] // grows by copy; chunks never move
}

// at returns the watcher in slot s. The caller must hold the lock of a path stripe that has an
// entry for s, which keeps the slot allocated.
func (r *registry) at(s uint32) *wstate {
	return (*r.chunks.Load())[s>>chunkBits][s&(chunkSize-1)].Load()
}

func (r *registry) get(id uint64) *wstate {
	b := &r.byID[id%regStripes]
	b.Lock()
	ws := b.m[id]
	b.Unlock()
	return ws
}

func (r *registry) getOrCreate(w Watcher) *wstate {
	id := w.ID()
	b := &r.byID[id%regStripes]
	b.Lock()
	defer b.Unlock()
	if ws := b.m[id]; ws != nil {
		return ws
	}
	ws := &wstate{w: w, id: id}
	ws.mu.paths = make(map[uint32]struct{})
	ws.slot = r.allocSlot(ws)
	if b.m == nil {
		b.m = make(map[uint64]*wstate)
	}
	b.m[id] = ws
	return ws
}

// remove unregisters the watcher with the given id; its slot stays allocated until freeSlot.
func (r *registry) remove(id uint64) *wstate {
	b := &r.byID[id%regStripes]
	b.Lock()
	ws := b.m[id]
	delete(b.m, id)
	b.Unlock()
	return ws
}

func (r *registry) allocSlot(ws *wstate) uint32 {
	r.slab.Lock()
	defer r.slab.Unlock()
	var s uint32
	if n := len(r.slab.free); n > 0 {
		s = r.slab.free[n-1]
		r.slab.free = r.slab.free[:n-1]
	} else {
		s = r.slab.next
		r.slab.next++
		chunks := r.chunks.Load()
		if int(s>>chunkBits) >= len(*chunks) {
			grown := make([]*slotChunk, len(*chunks)+1, 2*len(*chunks)+1)
			copy(grown, *chunks)
			grown[len(*chunks)] = new(slotChunk)
			r.chunks.Store(&grown)
		}
	}
	(*r.chunks.Load())[s>>chunkBits][s&(chunkSize-1)].Store(ws)
	return s
}

func (r *registry) freeSlot(s uint32) {
	r.slab.Lock()
	defer r.slab.Unlock()
	(*r.chunks.Load())[s>>chunkBits][s&(chunkSize-1)].Store(nil)
	r.slab.free = append(r.slab.free, s)
}

// watchers returns every registered watcher state.
func (r *registry) watchers() []*wstate {
	var out []*wstate
	for i := range r.byID {
		b := &r.byID[i]
		b.Lock()
		for _, ws := range b.m {
			out = append(out, ws)
		}
		b.Unlock()
	}
	return out
}
