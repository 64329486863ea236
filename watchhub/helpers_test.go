package watchhub

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// fakeConn is a Watcher that records what it is sent.
type fakeConn struct {
	id   uint64
	auth []wire.ID

	mu  sync.Mutex
	evs []wire.WatcherEvent
}

func (c *fakeConn) ID() uint64         { return c.id }
func (c *fakeConn) AuthIDs() []wire.ID { return c.auth }

func (c *fakeConn) DeliverEvent(ev wire.WatcherEvent) {
	c.mu.Lock()
	c.evs = append(c.evs, ev)
	c.mu.Unlock()
}

// take returns the events received since the last call as "Type /path" strings.
func (c *fakeConn) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ev := range c.evs {
		if ev.State != wire.StateSyncConnected {
			out = append(out, fmt.Sprintf("state %d", ev.State))
		}
		out = append(out, evName[ev.Type]+" "+ev.Path)
	}
	c.evs = nil
	return out
}

var evName = map[wire.EventType]string{
	wire.EventNodeCreated:         "Created",
	wire.EventNodeDeleted:         "Deleted",
	wire.EventNodeDataChanged:     "DataChanged",
	wire.EventNodeChildrenChanged: "ChildrenChanged",
}

var evType = map[string]wire.EventType{
	"Created": wire.EventNodeCreated, "Deleted": wire.EventNodeDeleted,
	"DataChanged": wire.EventNodeDataChanged, "ChildrenChanged": wire.EventNodeChildrenChanged,
}

// evs parses "Type /path" strings into world-readable events.
func evs(specs ...string) []shard.Event {
	out := make([]shard.Event, len(specs))
	for i, s := range specs {
		typ, path, _ := strings.Cut(s, " ")
		t, ok := evType[typ]
		if !ok {
			panic("bad event " + s)
		}
		out[i] = shard.Event{Type: t, Path: path, Zxid: int64(i + 1), ACL: wire.OpenACLUnsafe}
	}
	return out
}

var modeName = [...]string{"-", "std", "pers", "rec"}

// dump lists every entry as "w<id> <path> data=<mode> child=<mode>", sorted.
func dump(h *Hub) []string {
	var out []string
	h.walk(func(path string, ws *wstate, m modes) {
		out = append(out, fmt.Sprintf("w%d %s data=%s child=%s", ws.id, path, modeName[m.data()], modeName[m.child()]))
	})
	slices.Sort(out)
	return out
}

// checkInvariants recomputes every derived structure of h and compares. h must be quiescent.
func checkInvariants(t testing.TB, h *Hub) {
	t.Helper()
	live := map[uint32]*wstate{}
	for _, ws := range h.reg.watchers() {
		if got := h.reg.at(ws.slot); got != ws {
			t.Errorf("slot %d of watcher %d holds %p, want %p", ws.slot, ws.id, got, ws)
		}
		live[ws.slot] = ws
	}
	reverse := map[*wstate]map[uint32]bool{}
	nData := map[*wstate]int32{}
	var recRoots int64
	recPaths := map[string]bool{}
	for si := range h.stripes {
		s := &h.stripes[si]
		var dataRefs, childRefs, dataPaths int
		free := map[uint32]bool{}
		for _, l := range s.free {
			free[l] = true
		}
		for local := uint32(0); local < s.nslots; local++ {
			ps := s.slot(local)
			if ps.path == "" {
				if !free[local] {
					t.Errorf("stripe %d slot %d empty but not free", si, local)
				}
				if ps.small != nil || ps.big != nil {
					t.Errorf("stripe %d free slot %d has entries", si, local)
				}
				continue
			}
			if free[local] {
				t.Errorf("stripe %d slot %d (%s) in use and free", si, local, ps.path)
			}
			if ps.tag != tagOf(h.hash(ps.path)) {
				t.Errorf("path %s has tag %x, want %x", ps.path, ps.tag, tagOf(h.hash(ps.path)))
			}
			if got, ok := s.find(h.hash(ps.path), ps.path); !ok || got != local {
				t.Errorf("index[%s] = %d,%v want %d", ps.path, got, ok, local)
			}
			if int(h.hash(ps.path)&stripeMask) != si {
				t.Errorf("path %s in wrong stripe %d", ps.path, si)
			}
			if ps.len() == 0 {
				t.Errorf("path %s kept without entries", ps.path)
			}
			if ps.big != nil && ps.small != nil {
				t.Errorf("path %s has both representations", ps.path)
			}
			var pd, pc, pr uint32
			h.walkSlot(ps, func(slot uint32, m modes) {
				ws := live[slot]
				if ws == nil {
					t.Errorf("path %s: entry for unregistered slot %d", ps.path, slot)
					return
				}
				if m == 0 {
					t.Errorf("path %s: zero entry for w%d", ps.path, ws.id)
				}
				if reverse[ws] == nil {
					reverse[ws] = map[uint32]bool{}
				}
				reverse[ws][pathID(si, local)] = true
				if m.data() != modeNone {
					pd++
					nData[ws]++
				}
				if m.child() != modeNone {
					pc++
				}
				if m.recursive() {
					pr++
				}
			})
			if pd != ps.nData || pc != ps.nChild || pr != ps.nRec {
				t.Errorf("path %s counts data/child/rec %d/%d/%d, want %d/%d/%d", ps.path,
					ps.nData, ps.nChild, ps.nRec, pd, pc, pr)
			}
			dataRefs += int(pd)
			childRefs += int(pc)
			if pd > 0 {
				dataPaths++
			}
			if pr > 0 {
				recRoots++
				recPaths[ps.path] = true
			}
		}
		if s.index.n+len(s.free) != int(s.nslots) {
			t.Errorf("stripe %d: %d indexed + %d free != %d slots", si, s.index.n, len(s.free), s.nslots)
		}
		var buckets int
		for _, b := range s.index.buckets {
			if b != 0 {
				buckets++
			}
		}
		if buckets != s.index.n {
			t.Errorf("stripe %d: %d full buckets, index says %d", si, buckets, s.index.n)
		}
		if dataRefs != s.dataRefs || childRefs != s.childRefs || dataPaths != s.dataPaths {
			t.Errorf("stripe %d counters %d/%d/%d, want %d/%d/%d", si, s.dataRefs, s.childRefs, s.dataPaths,
				dataRefs, childRefs, dataPaths)
		}
		for p := range h.rec[si].roots {
			if !recPaths[p] {
				t.Errorf("recursive root %s has no recursive entry", p)
			}
		}
	}
	var nroots int
	for i := range h.rec {
		nroots += len(h.rec[i].roots)
	}
	if int64(nroots) != recRoots || h.recRoots.Load() != recRoots {
		t.Errorf("recursive roots: table %d, counter %d, want %d", nroots, h.recRoots.Load(), recRoots)
	}
	var conns int64
	for _, ws := range live {
		ws.mu.Lock()
		if len(ws.mu.paths) != len(reverse[ws]) {
			t.Errorf("w%d reverse index has %d paths, want %d", ws.id, len(ws.mu.paths), len(reverse[ws]))
		}
		for pid := range reverse[ws] {
			if _, ok := ws.mu.paths[pid]; !ok {
				t.Errorf("w%d reverse index misses path id %d", ws.id, pid)
			}
		}
		ws.mu.Unlock()
		if ws.nData.Load() != nData[ws] {
			t.Errorf("w%d nData %d, want %d", ws.id, ws.nData.Load(), nData[ws])
		}
		if nData[ws] > 0 {
			conns++
		}
	}
	if h.conns.Load() != conns {
		t.Errorf("connections %d, want %d", h.conns.Load(), conns)
	}
}

func (h *Hub) walkSlot(ps *pathSlot, fn func(slot uint32, m modes)) {
	for slot, m := range ps.big {
		fn(slot, m)
	}
	for _, e := range ps.small {
		fn(uint32(e>>8), modes(e))
	}
}

// checkEmpty asserts that h holds nothing at all.
func checkEmpty(t testing.TB, h *Hub) {
	t.Helper()
	checkInvariants(t, h)
	if n := h.Count(); n != 0 {
		t.Errorf("Count() = %d, want 0", n)
	}
	if n := h.WatchCount(); n != 0 {
		t.Errorf("WatchCount() = %d, want 0", n)
	}
	if n := h.Paths(); n != 0 {
		t.Errorf("Paths() = %d, want 0", n)
	}
	if n := h.Connections(); n != 0 {
		t.Errorf("Connections() = %d, want 0", n)
	}
	for i := range h.stripes {
		if s := &h.stripes[i]; s.index.n != 0 || s.nslots != 0 || len(s.chunks) > 1 || len(s.index.buckets) > minBuckets {
			t.Errorf("stripe %d still indexes %d paths (%d chunks, %d buckets)", i, s.index.n, len(s.chunks),
				len(s.index.buckets))
		}
		if n := len(h.rec[i].roots); n != 0 {
			t.Errorf("recursive stripe %d still has %d roots", i, n)
		}
	}
	if ws := h.reg.watchers(); len(ws) != 0 {
		t.Errorf("%d watchers still registered", len(ws))
	}
	h.reg.slab.Lock()
	if len(h.reg.slab.free) != int(h.reg.slab.next) {
		t.Errorf("%d of %d watcher slots free", len(h.reg.slab.free), h.reg.slab.next)
	}
	h.reg.slab.Unlock()
}
