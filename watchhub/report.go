package watchhub

import "github.com/corral/corral/wire"

// The introspection below follows ZooKeeper 3.8, whose four-letter words wchs, wchc and wchp (and
// the admin commands watch_summary, watches, watches_by_path) report only the data-watch table
// (DataTree.dumpWatchesSummary, dumpWatches, getWatches*), while mntr's watch_count adds both
// tables. Data-table entries are those of getData, exists, addWatch and setWatches' data, exist,
// persistent and recursive lists; a watch set only by getChildren is not listed. A persistent or
// recursive watch holds an entry in each table, so it counts twice in WatchCount. The values are
// read stripe by stripe, not as one atomic snapshot.

// Count is the number of data-table watches: the "Total watches" line of wchs.
func (h *Hub) Count() int {
	n := 0
	for i := range h.stripes {
		s := &h.stripes[i]
		s.mu.Lock()
		n += s.dataRefs
		s.mu.Unlock()
	}
	return n
}

// WatchCount is mntr's watch_count: data-table plus child-table watches.
func (h *Hub) WatchCount() int {
	n := 0
	for i := range h.stripes {
		s := &h.stripes[i]
		s.mu.Lock()
		n += s.dataRefs + s.childRefs
		s.mu.Unlock()
	}
	return n
}

// Paths is the number of paths with at least one data-table watch (wchs: "watching N paths").
func (h *Hub) Paths() int {
	n := 0
	for i := range h.stripes {
		s := &h.stripes[i]
		s.mu.Lock()
		n += s.dataPaths
		s.mu.Unlock()
	}
	return n
}

// Connections is the number of watchers with at least one data-table watch (wchs: "N connections
// watching"). ZooKeeper 3.8 also keeps counting a connection whose last watch has fired until it
// closes; Corral does not.
func (h *Hub) Connections() int { return int(h.conns.Load()) }

// ByWatcher maps each watcher id to the paths of its data-table watches (wchc). Slow: it walks
// the whole table.
func (h *Hub) ByWatcher() map[uint64][]string {
	out := make(map[uint64][]string)
	h.walk(func(path string, ws *wstate, m modes) {
		if m.data() != modeNone {
			out[ws.id] = append(out[ws.id], path)
		}
	})
	return out
}

// ByPath maps each path to the ids of the watchers with a data-table watch on it (wchp). Slow.
func (h *Hub) ByPath() map[string][]uint64 {
	out := make(map[string][]uint64)
	h.walk(func(path string, ws *wstate, m modes) {
		if m.data() != modeNone {
			out[path] = append(out[path], ws.id)
		}
	})
	return out
}

// walk calls fn for every entry, holding one stripe lock at a time.
func (h *Hub) walk(fn func(path string, ws *wstate, m modes)) {
	for i := range h.stripes {
		s := &h.stripes[i]
		s.mu.Lock()
		for j := uint32(0); j < s.nslots; j++ {
			ps := s.slot(j)
			if ps.path == "" {
				continue
			}
			for slot, m := range ps.big {
				fn(ps.path, h.reg.at(slot), m)
			}
			for _, e := range ps.small {
				fn(ps.path, h.reg.at(uint32(e>>8)), modes(e))
			}
		}
		s.mu.Unlock()
	}
}

// Stats is a snapshot of the hub's gauges and cumulative counters, for the server's metrics.
type Stats struct {
	DataWatches    int // Count
	ChildWatches   int // child-table watches; DataWatches+ChildWatches is WatchCount
	Paths          int // Paths
	Connections    int // Connections
	RecursiveRoots int // paths holding at least one recursive watch

	Events uint64 // events passed to Trigger that can fire watches
	// Matched counts watchers matched per event type (ZooKeeper's node_created_watch_count,
	// node_deleted_watch_count, node_changed_watch_count, node_children_watch_count), before
	// ACL filtering.
	MatchedCreated, MatchedDeleted, MatchedDataChanged, MatchedChildrenChanged uint64
	Delivered                                                                  uint64 // events handed to DeliverEvent by Trigger
	FilteredByACL                                                              uint64 // matched but not delivered for lack of READ
	CatchUpDelivered                                                           uint64 // events raised by SetWatches
}

// Stats returns the current gauges and counters.
func (h *Hub) Stats() Stats {
	st := Stats{
		Connections:            h.Connections(),
		RecursiveRoots:         int(h.recRoots.Load()),
		Events:                 h.ctr.events.Load(),
		MatchedCreated:         h.ctr.matched[wire.EventNodeCreated].Load(),
		MatchedDeleted:         h.ctr.matched[wire.EventNodeDeleted].Load(),
		MatchedDataChanged:     h.ctr.matched[wire.EventNodeDataChanged].Load(),
		MatchedChildrenChanged: h.ctr.matched[wire.EventNodeChildrenChanged].Load(),
		Delivered:              h.ctr.delivered.Load(),
		FilteredByACL:          h.ctr.filtered.Load(),
		CatchUpDelivered:       h.ctr.catchUp.Load(),
	}
	for i := range h.stripes {
		s := &h.stripes[i]
		s.mu.Lock()
		st.DataWatches += s.dataRefs
		st.ChildWatches += s.childRefs
		st.Paths += s.dataPaths
		s.mu.Unlock()
	}
	return st
}
