package watchhub

import "sync"

// mode is the watcher mode of one (watcher, path, table) triple, ZooKeeper 3.8's WatcherMode. As
// in 3.8's WatcherModeManager a triple has exactly one mode and the last registration wins.
type mode uint8

const (
	modeNone       mode = iota // no entry in the table
	modeStandard               // one-shot: getData, exists, getChildren, setWatches
	modePersistent             // addWatch PERSISTENT
	modeRecursive              // addWatch PERSISTENT_RECURSIVE
)

// table says which of ZooKeeper's two watch managers (DataTree.dataWatches, DataTree.childWatches)
// an operation touches.
type table uint8

const (
	tData  table = 1 << iota // dataWatches: getData, exists, addWatch
	tChild                   // childWatches: getChildren, addWatch
	tBoth  = tData | tChild
)

// modes packs a watcher's data-table mode (bits 0-1) and child-table mode (bits 2-3) on one path.
// Zero means the watcher has no watch on the path.
type modes uint8

func (m modes) data() mode  { return mode(m & 3) }
func (m modes) child() mode { return mode(m >> 2 & 3) }

func (m modes) with(t table, md mode) modes {
	if t&tData != 0 {
		m = m&^3 | modes(md)
	}
	if t&tChild != 0 {
		m = m&^(3<<2) | modes(md)<<2
	}
	return m
}

func (m modes) recursive() bool { return m.data() == modeRecursive || m.child() == modeRecursive }

// smallMax is the number of watchers a path holds in a plain slice before it switches to a map.
// A scan of 16 packed words is cheaper than a map lookup and costs 8 bytes per watcher.
const smallMax = 16

// pathSlot is one watched path: the interned path and the set of (watcher slot, modes) on it.
// While few watchers watch the path they sit in small, packed as slot<<8 | modes; beyond smallMax
// they move to big. Neither representation holds Go pointers, so the garbage collector does not
// scan the 10^7 entries.
type pathSlot struct {
	path   string
	small  []uint64
	big    map[uint32]modes
	nData  uint32 // entries whose data mode is set
	nChild uint32 // entries whose child mode is set
	nRec   uint32 // entries with a recursive mode in either table
	tag    uint32 // upper half of the path's hash, its key in the stripe's index
}

func (p *pathSlot) len() int {
	if p.big != nil {
		return len(p.big)
	}
	return len(p.small)
}

// get returns the modes of watcher slot ws on the path (0 when absent).
func (p *pathSlot) get(ws uint32) modes {
	if p.big != nil {
		return p.big[ws]
	}
	for _, e := range p.small {
		if uint32(e>>8) == ws {
			return modes(e)
		}
	}
	return 0
}

// set stores the modes of watcher slot ws; m == 0 deletes the entry.
func (p *pathSlot) set(ws uint32, m modes) {
	if p.big != nil {
		if m == 0 {
			delete(p.big, ws)
			p.maybeShrink()
		} else {
			p.big[ws] = m
		}
		return
	}
	for i, e := range p.small {
		if uint32(e>>8) == ws {
			if m == 0 {
				p.delSmall(i)
			} else {
				p.small[i] = uint64(ws)<<8 | uint64(m)
			}
			return
		}
	}
	if m == 0 {
		return
	}
	if len(p.small) < smallMax {
		p.small = append(p.small, uint64(ws)<<8|uint64(m))
		return
	}
	p.big = make(map[uint32]modes, 2*smallMax)
	for _, e := range p.small {
		p.big[uint32(e>>8)] = modes(e)
	}
	p.big[ws] = m
	p.small = nil
}

// maybeShrink moves a big set that has mostly emptied back into a slice (Go maps never shrink).
func (p *pathSlot) maybeShrink() {
	if p.big == nil || len(p.big) > smallMax/2 {
		return
	}
	small := make([]uint64, 0, len(p.big))
	for ws, m := range p.big {
		small = append(small, uint64(ws)<<8|uint64(m))
	}
	p.big = nil
	if len(small) > 0 {
		p.small = small
	}
}

func (p *pathSlot) delSmall(i int) {
	last := len(p.small) - 1
	p.small[i] = p.small[last]
	p.small = p.small[:last]
	if len(p.small) == 0 {
		p.small = nil
	}
}

// stripe is one lock stripe of the path table. A path lives in the stripe chosen by its hash; a
// path id is local<<stripeBits | stripe index.
type stripe struct {
	mu     sync.Mutex
	index  pathIndex    // interned path -> local slot
	chunks []*pathChunk // local slot -> path; a slot with path == "" is free
	nslots uint32       // slots ever allocated (the high-water mark)
	free   []uint32

	dataRefs  int // entries with a data mode: ZooKeeper's dataWatches.size()
	childRefs int // entries with a child mode: childWatches.size()
	dataPaths int // paths with nData > 0: the paths of dataWatches' watchTable
	_         [32]byte
}

// pathChunk is a fixed block of path slots. Chunks never move, so the table grows without copying
// (and without the spare capacity of a growing slice) under the stripe lock.
type pathChunk [pathChunkSize]pathSlot

const (
	pathChunkBits = 6
	pathChunkSize = 1 << pathChunkBits
)

// slot returns the path slot with the given local number, which must be below s.nslots.
func (s *stripe) slot(local uint32) *pathSlot {
	return &s.chunks[local>>pathChunkBits][local&(pathChunkSize-1)]
}

// recStripe holds the roots of recursive watches that hash to the same stripe index, so that a
// trigger checks each ancestor of the changed path without touching the path table.
type recStripe struct {
	mu    sync.RWMutex
	roots map[string]struct{}
	_     [32]byte
}

const (
	stripeBits = 8
	nStripes   = 1 << stripeBits
	stripeMask = nStripes - 1
	maxLocal   = 1<<(32-stripeBits) - 1
)

func pathID(stripe int, local uint32) uint32 { return local<<stripeBits | uint32(stripe) }
