package watchhub

import (
	"strings"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// Trigger fires the watches matched by each event, in order. For every event it delivers
// WatcherEvent{Type: ev.Type, State: SyncConnected, Path: ev.Path} at most once to each matching
// watcher whose AuthIDs hold READ on ev.ACL, before moving to the next event. The rules are
// ZooKeeper 3.8's DataTree/WatchManager:
//
//	NodeCreated, NodeDataChanged  data table:  entries on Path (standard ones removed), and
//	                                           recursive entries on Path and every ancestor
//	NodeDeleted                   data table, then child table (one event per watcher): entries
//	                                           on Path (standard ones removed), recursive entries
//	                                           on Path and every ancestor
//	NodeChildrenChanged           child table: standard (removed) and persistent entries on Path;
//	                                           recursive entries never get it
//
// A standard watch is consumed even when the ACL filters its event, as in ZooKeeper. Other event
// types are ignored. Trigger may run concurrently for disjoint subtrees; see the package comment
// for what the caller must serialize.
func (h *Hub) Trigger(events []shard.Event) {
	bufp := h.scratch.Get().(*[]*wstate)
	buf := *bufp
	for i := range events {
		ev := &events[i]
		if ev.Path == "" {
			continue
		}
		var t table
		switch ev.Type {
		case wire.EventNodeCreated, wire.EventNodeDataChanged:
			t = tData
		case wire.EventNodeDeleted:
			t = tBoth
		case wire.EventNodeChildrenChanged:
			t = tChild
		default:
			continue
		}
		h.ctr.events.Add(1)
		buf = h.collect(ev.Path, ev.Type, t, buf[:0])
		if len(buf) == 0 {
			continue
		}
		h.ctr.matched[ev.Type].Add(uint64(len(buf)))
		we := wire.WatcherEvent{Type: ev.Type, State: wire.StateSyncConnected, Path: ev.Path}
		var delivered, filtered uint64
		for _, ws := range buf {
			if h.check(ev.ACL, wire.PermRead, ws.w.AuthIDs()) {
				ws.w.DeliverEvent(we)
				delivered++
			} else {
				filtered++
			}
		}
		h.ctr.delivered.Add(delivered)
		h.ctr.filtered.Add(filtered)
		clear(buf) // drop the references; only what this event used
	}
	if cap(buf) <= maxPooledScratch {
		*bufp = buf[:0]
		h.scratch.Put(bufp)
	}
}

// maxPooledScratch bounds the scratch buffers kept for reuse; a trigger with a larger fan-out
// allocates its own.
const maxPooledScratch = 4096

// collect appends to out the watchers matched by an event of type typ on path in table(s) t,
// each once, and consumes the matched standard entries.
func (h *Hub) collect(path string, typ wire.EventType, t table, out []*wstate) []*wstate {
	out = h.collectAt(path, typ, t, out)
	if typ == wire.EventNodeChildrenChanged || h.recRoots.Load() == 0 {
		return out
	}
	atPath := len(out)
	for p := parent(path); p != ""; p = parent(p) {
		hv := h.hash(p)
		r := &h.rec[hv&stripeMask]
		r.mu.RLock()
		_, ok := r.roots[p]
		r.mu.RUnlock()
		if ok {
			out = h.collectRecursive(p, hv, t, out)
		}
	}
	if len(out) > atPath && len(out) > 1 {
		out = dedup(out)
	}
	return out
}

// collectAt matches the entries on the changed path itself.
func (h *Hub) collectAt(path string, typ wire.EventType, t table, out []*wstate) []*wstate {
	hv := h.hash(path)
	si := int(hv & stripeMask)
	s := &h.stripes[si]
	s.mu.Lock()
	defer s.mu.Unlock()
	local, ok := s.find(hv, path)
	if !ok {
		return out
	}
	ps := s.slot(local)
	pid := pathID(si, local)
	if ps.big != nil {
		for slot, m := range ps.big {
			if nm, hit := match(m, typ, t); hit {
				ws := h.reg.at(slot)
				out = append(out, ws)
				if nm != m {
					h.consume(si, ps, pid, ws, slot, m, nm)
				}
			}
		}
	} else {
		for i := 0; i < len(ps.small); {
			e := ps.small[i]
			slot, m := uint32(e>>8), modes(e)
			nm, hit := match(m, typ, t)
			if hit {
				out = append(out, h.reg.at(slot))
			}
			if nm == m {
				i++
				continue
			}
			ws := h.reg.at(slot)
			if nm == 0 {
				ps.delSmall(i) // the last entry moves to i: look at i again
			} else {
				ps.small[i] = uint64(slot)<<8 | uint64(nm)
				i++
			}
			h.account(si, ps, ws, m, nm)
			if nm == 0 {
				unlinkReverse(ws, pid)
			}
		}
	}
	ps.maybeShrink()
	dropPathIfEmpty(s, local)
	return out
}

// consume stores the modes left after standard entries fired (big-map representation).
func (h *Hub) consume(si int, ps *pathSlot, pid uint32, ws *wstate, slot uint32, m, nm modes) {
	if nm == 0 {
		delete(ps.big, slot)
	} else {
		ps.big[slot] = nm
	}
	h.account(si, ps, ws, m, nm)
	if nm == 0 {
		unlinkReverse(ws, pid)
	}
}

// match applies ZooKeeper 3.8's triggerWatch at the changed path to one entry: it reports whether
// the entry's watcher gets the event and returns the entry's modes afterwards (standard modes of
// the triggered tables are consumed).
func match(m modes, typ wire.EventType, t table) (modes, bool) {
	hit := false
	if t&tData != 0 {
		switch m.data() {
		case modeStandard:
			hit = true
			m = m.with(tData, modeNone)
		case modePersistent, modeRecursive:
			hit = true
		}
	}
	if t&tChild != 0 {
		switch m.child() {
		case modeStandard:
			hit = true
			m = m.with(tChild, modeNone)
		case modePersistent:
			hit = true
		case modeRecursive:
			if typ != wire.EventNodeChildrenChanged {
				hit = true
			}
		}
	}
	return m, hit
}

// collectRecursive matches the recursive entries on an ancestor of the changed path.
func (h *Hub) collectRecursive(p string, hv uint64, t table, out []*wstate) []*wstate {
	s := &h.stripes[hv&stripeMask]
	s.mu.Lock()
	defer s.mu.Unlock()
	local, ok := s.find(hv, p)
	if !ok || s.slot(local).nRec == 0 {
		return out
	}
	ps := s.slot(local)
	hit := func(m modes) bool {
		return (t&tData != 0 && m.data() == modeRecursive) ||
			(t&tChild != 0 && m.child() == modeRecursive)
	}
	if ps.big != nil {
		for slot, m := range ps.big {
			if hit(m) {
				out = append(out, h.reg.at(slot))
			}
		}
		return out
	}
	for _, e := range ps.small {
		if hit(modes(e)) {
			out = append(out, h.reg.at(uint32(e>>8)))
		}
	}
	return out
}

// parent returns the parent of an absolute path, "" for "/".
func parent(p string) string {
	if p == "/" {
		return ""
	}
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// dedup removes repeated watchers, keeping the first occurrence.
func dedup(ws []*wstate) []*wstate {
	if len(ws) <= 32 {
		n := 0
	next:
		for _, w := range ws {
			for _, v := range ws[:n] {
				if v == w {
					continue next
				}
			}
			ws[n] = w
			n++
		}
		clear(ws[n:])
		return ws[:n]
	}
	seen := make(map[*wstate]struct{}, len(ws))
	n := 0
	for _, w := range ws {
		if _, ok := seen[w]; !ok {
			seen[w] = struct{}{}
			ws[n] = w
			n++
		}
	}
	clear(ws[n:])
	return ws[:n]
}

// SetWatches re-registers a reconnecting client's watches (setWatches / setWatches2) with
// ZooKeeper 3.8's catch-up rules, lookup giving the current state of a path:
//
//	data       node missing -> NodeDeleted; mzxid > relZxid -> NodeDataChanged; else re-armed
//	exist      node exists -> NodeCreated; else re-armed (as a data watch)
//	child      node missing -> NodeDeleted; pzxid > relZxid -> NodeChildrenChanged; else re-armed
//	persistent, recursive: re-armed, no event
//
// Lists are processed in that order, with the same last-registration-wins rule as the Add
// methods. Catch-up events are delivered before SetWatches returns, so the caller's reply goes
// out after them; like ZooKeeper they are not ACL-filtered. The caller serializes SetWatches with
// the triggers of the shards it looks up, as for any registration.
func (h *Hub) SetWatches(w Watcher, relZxid int64, data, exist, child, persistent, recursive []string,
	lookup func(path string) (mzxid, pzxid int64, exists bool)) {
	fire := func(typ wire.EventType, path string) {
		h.ctr.catchUp.Add(1)
		w.DeliverEvent(wire.WatcherEvent{Type: typ, State: wire.StateSyncConnected, Path: path})
	}
	for _, p := range data {
		mzxid, _, ok := lookup(p)
		switch {
		case !ok:
			fire(wire.EventNodeDeleted, p)
		case mzxid > relZxid:
			fire(wire.EventNodeDataChanged, p)
		default:
			h.AddData(w, p)
		}
	}
	for _, p := range exist {
		if _, _, ok := lookup(p); ok {
			fire(wire.EventNodeCreated, p)
		} else {
			h.AddData(w, p)
		}
	}
	for _, p := range child {
		_, pzxid, ok := lookup(p)
		switch {
		case !ok:
			fire(wire.EventNodeDeleted, p)
		case pzxid > relZxid:
			fire(wire.EventNodeChildrenChanged, p)
		default:
			h.AddChild(w, p)
		}
	}
	for _, p := range persistent {
		h.AddPersistent(w, p)
	}
	for _, p := range recursive {
		h.AddPersistentRecursive(w, p)
	}
}
