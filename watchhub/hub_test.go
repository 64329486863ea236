package watchhub

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/corral/corral/wire"
)

func TestRemove(t *testing.T) {
	tests := []struct {
		name  string
		regs  []string
		who   int
		path  string
		typ   int32
		want  bool
		left  []string
		again bool // a second identical Remove's result
	}{
		0: {"data watch by Data", []string{"1 data /a"}, 1, "/a", wire.WatcherData, true, nil, false},
		1: {"data watch by Any", []string{"1 data /a"}, 1, "/a", wire.WatcherAny, true, nil, false},
		2: {"data watch by Children: nothing", []string{"1 data /a"}, 1, "/a", wire.WatcherChildren, false,
			[]string{"w1 /a data=std child=-"}, false},
		3: {"child watch by Children", []string{"1 child /a"}, 1, "/a", wire.WatcherChildren, true, nil, false},
		4: {"child watch by Data: nothing", []string{"1 child /a"}, 1, "/a", wire.WatcherData, false,
			[]string{"w1 /a data=- child=std"}, false},
		5: {"data+child by Data keeps child", []string{"1 data /a", "1 child /a"}, 1, "/a", wire.WatcherData, true,
			[]string{"w1 /a data=- child=std"}, false},
		6: {"data+child by Any", []string{"1 data /a", "1 child /a"}, 1, "/a", wire.WatcherAny, true, nil, false},
		7: {"persistent by Any", []string{"1 pers /a"}, 1, "/a", wire.WatcherAny, true, nil, false},
		8: {"persistent by Data removes the data half", []string{"1 pers /a"}, 1, "/a", wire.WatcherData, true,
			[]string{"w1 /a data=- child=pers"}, false},
		9: {"persistent by Children removes the child half", []string{"1 pers /a"}, 1, "/a", wire.WatcherChildren,
			true, []string{"w1 /a data=pers child=-"}, false},
		10: {"recursive by Any", []string{"1 rec /a"}, 1, "/a", wire.WatcherAny, true, nil, false},
		11: {"recursive by Children", []string{"1 rec /a"}, 1, "/a", wire.WatcherChildren, true,
			[]string{"w1 /a data=rec child=-"}, false},
		12: {"someone else's watch is not removed", []string{"2 data /a"}, 1, "/a", wire.WatcherAny, false,
			[]string{"w2 /a data=std child=-"}, false},
		13: {"unknown watcher", nil, 1, "/a", wire.WatcherAny, false, nil, false},
		14: {"other path", []string{"1 data /a"}, 1, "/b", wire.WatcherAny, false,
			[]string{"w1 /a data=std child=-"}, false},
		15: {"invalid type", []string{"1 data /a"}, 1, "/a", 7, false, []string{"w1 /a data=std child=-"}, false},
		16: {"recursive on an ancestor is not removed by the descendant's path", []string{"1 rec /a"}, 1, "/a/b",
			wire.WatcherAny, false, []string{"w1 /a data=rec child=rec"}, false},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%02d-%s", i, tt.name), func(t *testing.T) {
			h := New(Options{})
			cs := conns{}
			register(t, h, cs, tt.regs)
			w := cs.get(tt.who)
			if got := h.Remove(w, tt.path, tt.typ); got != tt.want {
				t.Errorf("Remove = %v, want %v", got, tt.want)
			}
			if got := dump(h); !slices.Equal(got, tt.left) {
				t.Errorf("left %q, want %q", got, tt.left)
			}
			if got := h.Remove(w, tt.path, tt.typ); got != tt.again {
				t.Errorf("second Remove = %v, want %v", got, tt.again)
			}
			checkInvariants(t, h)
		})
	}
}

func TestHas(t *testing.T) {
	h := New(Options{})
	cs := conns{}
	register(t, h, cs, []string{"1 data /d", "1 child /c", "1 pers /p", "2 rec /r", "2 data /o"})
	w1, w2, w3 := cs.get(1), cs.get(2), cs.get(3)
	tests := []struct {
		w         Watcher
		path      string
		typ       int32
		has, owns bool
	}{
		0:  {w1, "/d", wire.WatcherData, true, true},
		1:  {w1, "/d", wire.WatcherChildren, false, false},
		2:  {w1, "/d", wire.WatcherAny, true, true},
		3:  {w1, "/c", wire.WatcherChildren, true, true},
		4:  {w1, "/c", wire.WatcherData, false, false},
		5:  {w1, "/p", wire.WatcherData, true, true},
		6:  {w1, "/p", wire.WatcherChildren, true, true},
		7:  {w2, "/r", wire.WatcherAny, true, true},
		8:  {w2, "/r/x", wire.WatcherAny, false, false}, // 3.8 checks only the leaf for a non-recursive mode there
		9:  {w1, "/x", wire.WatcherAny, false, false},
		10: {w1, "/d", 0, false, false},
		// ZooKeeper 3.8's containsWatcher answers for the table, not the connection.
		11: {w1, "/o", wire.WatcherData, true, false},
		12: {w3, "/d", wire.WatcherAny, true, false},
		13: {w3, "/o", wire.WatcherChildren, false, false},
	}
	for i, tt := range tests {
		if got := h.Has(tt.w, tt.path, tt.typ); got != tt.has {
			t.Errorf("%d: Has(w%d, %s, %d) = %v, want %v", i, tt.w.ID(), tt.path, tt.typ, got, tt.has)
		}
		if got := h.HasOwn(tt.w, tt.path, tt.typ); got != tt.owns {
			t.Errorf("%d: HasOwn(w%d, %s, %d) = %v, want %v", i, tt.w.ID(), tt.path, tt.typ, got, tt.owns)
		}
	}
	h.Trigger(evs("DataChanged /d"))
	if h.Has(w1, "/d", wire.WatcherAny) {
		t.Errorf("fired watch still reported")
	}
}

func TestSetWatches(t *testing.T) {
	const rel = 100
	type node struct{ mzxid, pzxid int64 }
	tree := map[string]node{
		"/old":      {50, 60},
		"/newdata":  {150, 60},
		"/newchild": {50, 150},
		"/edge":     {100, 100},
	}
	lookup := func(p string) (int64, int64, bool) {
		n, ok := tree[p]
		return n.mzxid, n.pzxid, ok
	}
	tests := []struct {
		name                                   string
		data, exist, child, persistent, recurs []string
		want                                   []string // events delivered before SetWatches returned
		left                                   []string
	}{
		0: {name: "data: missing -> Deleted", data: []string{"/gone"}, want: []string{"Deleted /gone"}},
		1: {name: "data: mzxid > rel -> DataChanged", data: []string{"/newdata"}, want: []string{"DataChanged /newdata"}},
		2: {name: "data: unchanged -> re-armed", data: []string{"/old", "/edge", "/newchild"},
			left: []string{"w1 /edge data=std child=-", "w1 /newchild data=std child=-", "w1 /old data=std child=-"}},
		3: {name: "exist: exists -> Created", exist: []string{"/old"}, want: []string{"Created /old"}},
		4: {name: "exist: missing -> re-armed", exist: []string{"/gone"}, left: []string{"w1 /gone data=std child=-"}},
		5: {name: "child: missing -> Deleted", child: []string{"/gone"}, want: []string{"Deleted /gone"}},
		6: {name: "child: pzxid > rel -> ChildrenChanged", child: []string{"/newchild"},
			want: []string{"ChildrenChanged /newchild"}},
		7: {name: "child: unchanged -> re-armed", child: []string{"/old", "/edge", "/newdata"},
			left: []string{"w1 /edge data=- child=std", "w1 /newdata data=- child=std", "w1 /old data=- child=std"}},
		8: {name: "persistent and recursive: re-armed without events, even if missing or changed",
			persistent: []string{"/gone", "/newdata"}, recurs: []string{"/newchild"},
			left: []string{"w1 /gone data=pers child=pers", "w1 /newchild data=rec child=rec",
				"w1 /newdata data=pers child=pers"}},
		9: {name: "events in list order: data, exist, child",
			data: []string{"/gone", "/newdata"}, exist: []string{"/old"}, child: []string{"/x", "/newchild"},
			want: []string{"Deleted /gone", "DataChanged /newdata", "Created /old", "Deleted /x",
				"ChildrenChanged /newchild"}},
		10: {name: "later lists override modes: data then persistent on one path",
			data: []string{"/old"}, child: []string{"/old"}, persistent: []string{"/old"},
			left: []string{"w1 /old data=pers child=pers"}},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%02d-%s", i, tt.name), func(t *testing.T) {
			h := New(Options{})
			w := &fakeConn{id: 1, auth: []wire.ID{{Scheme: "digest", ID: "nobody"}}}
			h.SetWatches(w, rel, tt.data, tt.exist, tt.child, tt.persistent, tt.recurs, lookup)
			if got := w.take(); !slices.Equal(got, tt.want) {
				t.Errorf("events %q, want %q", got, tt.want)
			}
			if got := dump(h); !slices.Equal(got, tt.left) {
				t.Errorf("left %q, want %q", got, tt.left)
			}
			if got := h.Stats().CatchUpDelivered; got != uint64(len(tt.want)) {
				t.Errorf("CatchUpDelivered = %d, want %d", got, len(tt.want))
			}
			checkInvariants(t, h)
		})
	}
}

// TestSetWatchesRearmedFire checks that re-armed watches behave like fresh registrations.
func TestSetWatchesRearmedFire(t *testing.T) {
	h := New(Options{})
	w := &fakeConn{id: 1}
	h.SetWatches(w, 10, []string{"/a"}, []string{"/b"}, []string{"/a"}, nil, []string{"/r"},
		func(p string) (int64, int64, bool) { return 5, 5, p == "/a" })
	h.Trigger(evs("DataChanged /a", "Created /b", "ChildrenChanged /a", "Created /r/x", "DataChanged /a"))
	want := []string{"DataChanged /a", "Created /b", "ChildrenChanged /a", "Created /r/x"}
	if got := w.take(); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRemoveWatcher(t *testing.T) {
	h := New(Options{})
	cs := conns{}
	var regs []string
	kinds := []string{"data", "child", "pers", "rec"}
	for w := 1; w <= 5; w++ {
		for p := 0; p < 40; p++ {
			regs = append(regs, fmt.Sprintf("%d %s /p%d/q%d", w, kinds[(w+p)%4], p%7, p))
		}
		regs = append(regs, fmt.Sprintf("%d data /shared", w), fmt.Sprintf("%d rec /", w))
	}
	for w := 6; w <= 30; w++ { // enough watchers on one path for the map representation
		regs = append(regs, fmt.Sprintf("%d pers /shared", w))
	}
	register(t, h, cs, regs)
	checkInvariants(t, h)

	h.RemoveWatcher(cs[3])
	checkInvariants(t, h)
	for _, e := range dump(h) {
		if e[:3] == "w3 " {
			t.Fatalf("w3 entry left: %s", e)
		}
	}
	h.Trigger(evs("DataChanged /shared", "Created /p1/x"))
	if got := cs[3].take(); len(got) != 0 {
		t.Errorf("removed watcher got %q", got)
	}
	if got := cs[1].take(); !slices.Equal(got, []string{"DataChanged /shared", "Created /p1/x"}) {
		t.Errorf("w1 got %q", got)
	}
	h.RemoveWatcher(cs[3]) // idempotent
	for n, c := range cs {
		if n != 3 {
			h.RemoveWatcher(c)
		}
	}
	checkEmpty(t, h)

	// A removed watcher's slot is reused and nothing leaks into the new owner.
	w := &fakeConn{id: 99}
	h.AddData(w, "/z")
	h.Trigger(evs("DataChanged /shared", "DataChanged /z"))
	if got := w.take(); !slices.Equal(got, []string{"DataChanged /z"}) {
		t.Errorf("new watcher got %q", got)
	}
	h.RemoveWatcher(w)
	checkEmpty(t, h)
}

// TestRegistrationRacingRemoveWatcher checks that a registration that looked the watcher up
// before RemoveWatcher and records the watch after it is dropped.
func TestRegistrationRacingRemoveWatcher(t *testing.T) {
	h := New(Options{})
	w := &fakeConn{id: 1}
	h.AddData(w, "/a")
	ws := h.reg.getOrCreate(w) // the racing registration's lookup
	h.RemoveWatcher(w)
	h.addTo(ws, "/b", tData, modeStandard) // ... and its second half
	h.addTo(ws, "/a", tBoth, modeRecursive)
	checkEmpty(t, h)
}

func TestIntrospection(t *testing.T) {
	h := New(Options{})
	cs := conns{}
	register(t, h, cs, []string{
		"1 data /a", "1 child /a", "1 child /b", "1 pers /c",
		"2 data /a", "2 rec /",
		"3 child /only-child",
	})
	st := h.Stats()
	// Data table: 1:/a, 1:/c, 2:/a, 2:/ ; child table: 1:/a, 1:/b, 1:/c, 2:/, 3:/only-child.
	if h.Count() != 4 || st.DataWatches != 4 {
		t.Errorf("Count() = %d (stats %d), want 4", h.Count(), st.DataWatches)
	}
	if h.WatchCount() != 9 || st.ChildWatches != 5 {
		t.Errorf("WatchCount() = %d (child %d), want 9 (5)", h.WatchCount(), st.ChildWatches)
	}
	if h.Paths() != 3 || st.Paths != 3 {
		t.Errorf("Paths() = %d, want 3", h.Paths())
	}
	if h.Connections() != 2 {
		t.Errorf("Connections() = %d, want 2", h.Connections())
	}
	if st.RecursiveRoots != 1 {
		t.Errorf("RecursiveRoots = %d, want 1", st.RecursiveRoots)
	}
	byW := h.ByWatcher()
	for _, v := range byW {
		slices.Sort(v)
	}
	wantW := map[uint64][]string{1: {"/a", "/c"}, 2: {"/", "/a"}}
	if !maps.EqualFunc(byW, wantW, slices.Equal) {
		t.Errorf("ByWatcher() = %v, want %v", byW, wantW)
	}
	byP := h.ByPath()
	for _, v := range byP {
		slices.Sort(v)
	}
	wantP := map[string][]uint64{"/a": {1, 2}, "/c": {1}, "/": {2}}
	if !maps.EqualFunc(byP, wantP, slices.Equal) {
		t.Errorf("ByPath() = %v, want %v", byP, wantP)
	}

	h.Trigger(evs("DataChanged /a", "ChildrenChanged /b"))
	st = h.Stats()
	if st.Events != 2 || st.MatchedDataChanged != 2 || st.MatchedChildrenChanged != 1 || st.Delivered != 3 {
		t.Errorf("stats after trigger: %+v", st)
	}
	if h.Count() != 2 || h.Paths() != 2 || h.Connections() != 2 {
		t.Errorf("after trigger Count/Paths/Connections = %d/%d/%d, want 2/2/2", h.Count(), h.Paths(), h.Connections())
	}
	h.Remove(cs[1], "/c", wire.WatcherData)
	if h.Connections() != 1 {
		t.Errorf("Connections() = %d, want 1 once w1 has no data watch", h.Connections())
	}
}

func TestPathInterning(t *testing.T) {
	h := New(Options{})
	buf := []byte("/interned/path")
	h.AddData(&fakeConn{id: 1}, unsafe.String(&buf[0], 9)) // "/interned", aliasing buf
	copy(buf, "/XXXXXXXX")                                 // the request buffer is reused
	h.AddData(&fakeConn{id: 2}, "/interned")
	s := &h.stripes[h.hash("/interned")&stripeMask]
	local, ok := s.find(h.hash("/interned"), "/interned")
	if s.index.n != 1 || !ok || s.slot(local).len() != 2 || s.slot(local).path != "/interned" {
		t.Fatalf("expected one interned path /interned with two watchers, have %d", s.index.n)
	}
}

// TestMemoryGivenBack checks that emptied structures do not keep their high-water size.
func TestMemoryGivenBack(t *testing.T) {
	h := New(Options{})
	w := &fakeConn{id: 1}
	var events []string
	const n = 40000 // about 156 paths per stripe: three chunks each
	for i := 0; i < n; i++ {
		p := "/m/" + strconv.Itoa(i)
		h.AddData(w, p)
		events = append(events, "DataChanged "+p)
	}
	keep := &fakeConn{id: 2}
	h.AddChild(keep, "/keep")
	ws := h.reg.get(1)
	h.Trigger(evs(events...))
	if got := len(w.take()); got != n {
		t.Fatalf("%d events, want %d", got, n)
	}
	ws.mu.Lock()
	peak, left := ws.mu.peak, len(ws.mu.paths)
	ws.mu.Unlock()
	if peak != 0 || left != 0 {
		t.Errorf("reverse index not reallocated: peak %d len %d", peak, left)
	}
	var chunks, buckets int
	keepStripe := int(h.hash("/keep") & stripeMask)
	for i := range h.stripes {
		if i != keepStripe {
			chunks += len(h.stripes[i].chunks)
		}
		buckets += len(h.stripes[i].index.buckets)
	}
	// An emptied stripe keeps one chunk and the smallest index, so that a path watched and fired
	// over and over does not allocate each time; the stripe of /keep keeps its chunks (a
	// non-empty stripe does not shrink its slab; how many it had depends on the hash seed) but
	// shrinks its index.
	if chunks > nStripes-1 || buckets > nStripes*minBuckets {
		t.Errorf("%d chunks in the emptied stripes and %d index buckets kept for one path", chunks, buckets)
	}
	checkInvariants(t, h)
}
