package watchhub

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// conns creates watchers on demand, by number.
type conns map[int]*fakeConn

func (cs conns) get(n int) *fakeConn {
	if cs[n] == nil {
		cs[n] = &fakeConn{id: uint64(n)}
	}
	return cs[n]
}

// register applies specs of the form "<watcher> <kind> <path>", kind being data, child, pers or
// rec (the Add methods) or rm-data, rm-child, rm-any (Remove).
func register(t *testing.T, h *Hub, cs conns, specs []string) {
	t.Helper()
	for _, s := range specs {
		f := strings.Fields(s)
		n, err := strconv.Atoi(f[0])
		if err != nil || len(f) != 3 {
			t.Fatalf("bad registration %q", s)
		}
		w, p := cs.get(n), f[2]
		switch f[1] {
		case "data":
			h.AddData(w, p)
		case "child":
			h.AddChild(w, p)
		case "pers":
			h.AddPersistent(w, p)
		case "rec":
			h.AddPersistentRecursive(w, p)
		case "rm-data":
			h.Remove(w, p, wire.WatcherData)
		case "rm-child":
			h.Remove(w, p, wire.WatcherChildren)
		case "rm-any":
			h.Remove(w, p, wire.WatcherAny)
		default:
			t.Fatalf("bad registration %q", s)
		}
	}
}

// checkDelivered compares what each watcher received with want (watcher -> events in order).
func checkDelivered(t *testing.T, cs conns, want map[int][]string) {
	t.Helper()
	for n, c := range cs {
		if got := c.take(); !slices.Equal(got, want[n]) {
			t.Errorf("w%d got %q, want %q", n, got, want[n])
		}
	}
	for n := range want {
		if cs[n] == nil {
			t.Errorf("w%d expected events but was never registered", n)
		}
	}
}

func TestTriggerRules(t *testing.T) {
	tests := []struct {
		name   string
		regs   []string
		events []string
		want   map[int][]string
		left   []string // dump() after the events
	}{
		0: {
			name:   "data watch fires on data change and is consumed",
			regs:   []string{"1 data /a"},
			events: []string{"DataChanged /a", "DataChanged /a"},
			want:   map[int][]string{1: {"DataChanged /a"}},
		},
		1: {
			name:   "exists watch on a missing node fires on create",
			regs:   []string{"1 data /a"},
			events: []string{"Created /a", "ChildrenChanged /"},
			want:   map[int][]string{1: {"Created /a"}},
		},
		2: {
			name:   "data watch ignores child changes; child watch ignores data changes",
			regs:   []string{"1 data /a", "2 child /a"},
			events: []string{"ChildrenChanged /a", "DataChanged /a"},
			want:   map[int][]string{1: {"DataChanged /a"}, 2: {"ChildrenChanged /a"}},
		},
		3: {
			name:   "child watch is consumed",
			regs:   []string{"1 child /a"},
			events: []string{"ChildrenChanged /a", "ChildrenChanged /a", "Deleted /a"},
			want:   map[int][]string{1: {"ChildrenChanged /a"}},
		},
		4: {
			name:   "delete fires data and child watches once per watcher",
			regs:   []string{"1 data /a", "1 child /a", "2 child /a", "3 data /a"},
			events: []string{"Deleted /a", "ChildrenChanged /"},
			want:   map[int][]string{1: {"Deleted /a"}, 2: {"Deleted /a"}, 3: {"Deleted /a"}},
		},
		5: {
			name:   "registration is a set: repeated registration fires once",
			regs:   []string{"1 data /a", "1 data /a", "1 data /a"},
			events: []string{"DataChanged /a"},
			want:   map[int][]string{1: {"DataChanged /a"}},
		},
		6: {
			name: "persistent watch gets every event on its path and stays",
			regs: []string{"1 pers /a"},
			events: []string{"Created /a", "DataChanged /a", "ChildrenChanged /a", "DataChanged /a",
				"Deleted /a"},
			want: map[int][]string{1: {"Created /a", "DataChanged /a", "ChildrenChanged /a",
				"DataChanged /a", "Deleted /a"}},
			left: []string{"w1 /a data=pers child=pers"},
		},
		7: {
			name:   "persistent watch does not match descendants",
			regs:   []string{"1 pers /a"},
			events: []string{"Created /a/b", "ChildrenChanged /a", "DataChanged /a/b", "Deleted /a/b"},
			want:   map[int][]string{1: {"ChildrenChanged /a"}},
			left:   []string{"w1 /a data=pers child=pers"},
		},
		8: {
			name: "recursive watch: descendants, event path is the changed node, no ChildrenChanged",
			regs: []string{"1 rec /a"},
			events: []string{"Created /a/b/c", "ChildrenChanged /a/b", "DataChanged /a", "ChildrenChanged /a",
				"Deleted /a/b/c", "DataChanged /ab", "Created /b"},
			want: map[int][]string{1: {"Created /a/b/c", "DataChanged /a", "Deleted /a/b/c"}},
			left: []string{"w1 /a data=rec child=rec"},
		},
		9: {
			name:   "recursive watch on the root sees the whole tree",
			regs:   []string{"1 rec /"},
			events: []string{"Created /x", "ChildrenChanged /", "DataChanged /", "Deleted /x/y/z"},
			want:   map[int][]string{1: {"Created /x", "DataChanged /", "Deleted /x/y/z"}},
			left:   []string{"w1 / data=rec child=rec"},
		},
		10: {
			name:   "recursive watch on the deleted node itself",
			regs:   []string{"1 rec /a"},
			events: []string{"Deleted /a", "Created /a"},
			want:   map[int][]string{1: {"Deleted /a", "Created /a"}},
			left:   []string{"w1 /a data=rec child=rec"},
		},
		11: {
			name:   "standard watch plus recursive ancestor: one event, standard consumed",
			regs:   []string{"1 rec /a", "1 data /a/b", "2 data /a/b"},
			events: []string{"DataChanged /a/b", "DataChanged /a/b"},
			want:   map[int][]string{1: {"DataChanged /a/b", "DataChanged /a/b"}, 2: {"DataChanged /a/b"}},
			left:   []string{"w1 /a data=rec child=rec"},
		},
		12: {
			name:   "nested recursive watches of one watcher: one event",
			regs:   []string{"1 rec /", "1 rec /a", "1 rec /a/b", "1 child /a/b/c", "1 data /a/b/c"},
			events: []string{"Deleted /a/b/c"},
			want:   map[int][]string{1: {"Deleted /a/b/c"}},
			left: []string{"w1 / data=rec child=rec", "w1 /a data=rec child=rec",
				"w1 /a/b data=rec child=rec"},
		},
		13: {
			name:   "addWatch over a pending standard watch makes it persistent",
			regs:   []string{"1 data /a", "1 pers /a"},
			events: []string{"DataChanged /a", "DataChanged /a"},
			want:   map[int][]string{1: {"DataChanged /a", "DataChanged /a"}},
			left:   []string{"w1 /a data=pers child=pers"},
		},
		14: {
			name: "3.8: getData over a persistent watch makes its data half one-shot",
			regs: []string{"1 pers /a", "1 data /a"},
			events: []string{"DataChanged /a", "DataChanged /a", "ChildrenChanged /a",
				"ChildrenChanged /a"},
			want: map[int][]string{1: {"DataChanged /a", "ChildrenChanged /a", "ChildrenChanged /a"}},
			left: []string{"w1 /a data=- child=pers"},
		},
		15: {
			name: "3.8: getChildren over a recursive watch makes its child half one-shot",
			regs: []string{"1 rec /a", "1 child /a"},
			events: []string{"ChildrenChanged /a", "ChildrenChanged /a", "Created /a/b", "ChildrenChanged /a",
				"Deleted /a/b/c"},
			want: map[int][]string{1: {"ChildrenChanged /a", "Created /a/b", "Deleted /a/b/c"}},
			left: []string{"w1 /a data=rec child=-"},
		},
		16: {
			name:   "create fires the node's data watches, then the parent's child watches, in order",
			regs:   []string{"1 data /a/b", "1 child /a", "2 child /a", "3 data /a"},
			events: []string{"Created /a/b", "ChildrenChanged /a"},
			want:   map[int][]string{1: {"Created /a/b", "ChildrenChanged /a"}, 2: {"ChildrenChanged /a"}},
			left:   []string{"w3 /a data=std child=-"},
		},
		17: {
			name:   "delete: node's watchers, then the parent's child watchers and recursive ancestors",
			regs:   []string{"1 child /a", "2 rec /", "3 data /a/b", "4 pers /a/b"},
			events: []string{"Deleted /a/b", "ChildrenChanged /a"},
			want: map[int][]string{1: {"ChildrenChanged /a"}, 2: {"Deleted /a/b"}, 3: {"Deleted /a/b"},
				4: {"Deleted /a/b"}},
			left: []string{"w2 / data=rec child=rec", "w4 /a/b data=pers child=pers"},
		},
		18: {
			name:   "unrelated and prefix-but-not-ancestor paths do not match",
			regs:   []string{"1 data /a", "2 rec /a", "3 child /a"},
			events: []string{"DataChanged /ab", "Created /ab/c", "ChildrenChanged /ab", "DataChanged /"},
			want:   map[int][]string{},
			left:   []string{"w1 /a data=std child=-", "w2 /a data=rec child=rec", "w3 /a data=- child=std"},
		},
		19: {
			name:   "removed data half of a persistent watch leaves the child half",
			regs:   []string{"1 pers /a", "1 rm-data /a"},
			events: []string{"DataChanged /a", "ChildrenChanged /a"},
			want:   map[int][]string{1: {"ChildrenChanged /a"}},
			left:   []string{"w1 /a data=- child=pers"},
		},
		20: {
			name:   "removed child half of a recursive watch still matches descendants",
			regs:   []string{"1 rec /a", "1 rm-child /a"},
			events: []string{"Created /a/b", "Deleted /a/b"},
			want:   map[int][]string{1: {"Created /a/b", "Deleted /a/b"}},
			left:   []string{"w1 /a data=rec child=-"},
		},
		21: {
			name:   "child half of a recursive watch alone still gets NodeDeleted of descendants",
			regs:   []string{"1 rec /a", "1 rm-data /a"},
			events: []string{"Created /a/b", "DataChanged /a/b", "Deleted /a/b", "ChildrenChanged /a"},
			want:   map[int][]string{1: {"Deleted /a/b"}},
			left:   []string{"w1 /a data=- child=rec"},
		},
		22: {
			name:   "removeWatches Any drops a persistent watch",
			regs:   []string{"1 pers /a", "1 rm-any /a", "2 rec /", "2 rm-any /"},
			events: []string{"DataChanged /a", "ChildrenChanged /a", "Created /a/b"},
			want:   map[int][]string{},
		},
		23: {
			name:   "unknown event types are ignored",
			regs:   []string{"1 data /a"},
			events: nil,
			want:   map[int][]string{},
			left:   []string{"w1 /a data=std child=-"},
		},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%02d-%s", i, tt.name), func(t *testing.T) {
			h := New(Options{})
			cs := conns{}
			register(t, h, cs, tt.regs)
			events := evs(tt.events...)
			if i == 23 {
				events = []shard.Event{{Type: wire.EventNone, Path: "/a"}, {Type: wire.EventDataWatchRemoved, Path: "/a"}}
			}
			h.Trigger(events)
			checkDelivered(t, cs, tt.want)
			if got := dump(h); !slices.Equal(got, tt.left) {
				t.Errorf("left %q, want %q", got, tt.left)
			}
			checkInvariants(t, h)
		})
	}
}

// TestTriggerEventsOneByOne checks that a batch gives the same result as triggering its events one
// at a time (events of a batch are applied in order, each fully delivered before the next).
func TestTriggerEventsOneByOne(t *testing.T) {
	regs := []string{"1 data /a", "1 child /", "2 rec /", "3 pers /a", "4 data /a/b", "4 child /a"}
	events := []string{"Created /a", "ChildrenChanged /", "Created /a/b", "ChildrenChanged /a",
		"DataChanged /a", "Deleted /a/b", "ChildrenChanged /a", "Deleted /a", "ChildrenChanged /"}
	batch, single := New(Options{}), New(Options{})
	cb, cs := conns{}, conns{}
	register(t, batch, cb, regs)
	register(t, single, cs, regs)
	batch.Trigger(evs(events...))
	for _, e := range events {
		single.Trigger(evs(e))
	}
	for n := range cb {
		got, want := cb[n].take(), cs[n].take()
		if !slices.Equal(got, want) {
			t.Errorf("w%d: batch %q, one by one %q", n, got, want)
		}
	}
	if !slices.Equal(dump(batch), dump(single)) {
		t.Errorf("left: batch %q, one by one %q", dump(batch), dump(single))
	}
}

func TestTriggerACL(t *testing.T) {
	alice := acl.Digest("alice:secret")
	aliceID := wire.ID{Scheme: "digest", ID: alice}
	aliceOnly := []wire.ACL{{Perms: wire.PermAll, ID: aliceID}}
	tests := []struct {
		name   string
		acl    []wire.ACL
		auth   []wire.ID
		typ    wire.EventType
		reg    string
		want   bool
		remain bool // the watch is still registered afterwards
	}{
		0: {"open ACL", wire.OpenACLUnsafe, nil, wire.EventNodeDataChanged, "data", true, false},
		1: {"empty ACL allows all", nil, nil, wire.EventNodeDataChanged, "data", true, false},
		2: {"no READ for anyone", []wire.ACL{{Perms: wire.PermAll &^ wire.PermRead, ID: wire.ID{Scheme: "world", ID: "anyone"}}}, nil, wire.EventNodeDataChanged, "data", false, false},
		3: {"digest match", aliceOnly, []wire.ID{aliceID}, wire.EventNodeDataChanged, "data", true, false},
		4: {"digest mismatch: filtered, one-shot still consumed", aliceOnly, []wire.ID{{Scheme: "digest", ID: "bob:x"}}, wire.EventNodeDataChanged, "data", false, false},
		5: {"super sees everything", aliceOnly, []wire.ID{{Scheme: "super"}}, wire.EventNodeDeleted, "child", true, false},
		6: {"recursive watcher filtered by the changed node's ACL", aliceOnly, nil, wire.EventNodeCreated, "rec", false, true},
		7: {"persistent filtered, stays", aliceOnly, nil, wire.EventNodeChildrenChanged, "pers", false, true},
		8: {"ip match", []wire.ACL{{Perms: wire.PermRead, ID: wire.ID{Scheme: "ip", ID: "10.0.0.0/8"}}}, []wire.ID{{Scheme: "ip", ID: "10.1.2.3"}}, wire.EventNodeChildrenChanged, "child", true, false},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%02d-%s", i, tt.name), func(t *testing.T) {
			h := New(Options{})
			w := &fakeConn{id: 1, auth: tt.auth}
			other := &fakeConn{id: 2} // world only
			path, regPath := "/n", "/n"
			if tt.reg == "rec" {
				regPath = "/"
			}
			for _, c := range []*fakeConn{w, other} {
				register(t, h, conns{int(c.id): c}, []string{fmt.Sprintf("%d %s %s", c.id, tt.reg, regPath)})
			}
			h.Trigger([]shard.Event{{Type: tt.typ, Path: path, ACL: tt.acl}})
			got := len(w.take()) == 1
			if got != tt.want {
				t.Errorf("delivered = %v, want %v", got, tt.want)
			}
			if remain := len(dump(h)) == 2; remain != tt.remain {
				t.Errorf("watches remain = %v (%q), want %v", remain, dump(h), tt.remain)
			}
			if st := h.Stats(); st.Delivered+st.FilteredByACL != 2 || st.Events != 1 {
				t.Errorf("stats: %d delivered + %d filtered of %d events, want 2 matched of 1", st.Delivered,
					st.FilteredByACL, st.Events)
			}
			checkInvariants(t, h)
		})
	}
}

func TestCustomACLCheck(t *testing.T) {
	var calls int
	h := New(Options{CheckACL: func(acls []wire.ACL, perm int32, ids []wire.ID) bool {
		calls++
		if perm != wire.PermRead {
			t.Errorf("perm %d, want READ", perm)
		}
		return len(ids) > 0 && ids[0].ID == "yes"
	}})
	yes := &fakeConn{id: 1, auth: []wire.ID{{Scheme: "x", ID: "yes"}}}
	no := &fakeConn{id: 2, auth: []wire.ID{{Scheme: "x", ID: "no"}}}
	h.AddData(yes, "/a")
	h.AddData(no, "/a")
	h.Trigger(evs("DataChanged /a"))
	if got := yes.take(); len(got) != 1 {
		t.Errorf("yes got %q", got)
	}
	if got := no.take(); len(got) != 0 {
		t.Errorf("no got %q", got)
	}
	if calls != 2 {
		t.Errorf("check called %d times, want 2", calls)
	}
}

// TestManyWatchersOnePath exercises the map representation of a path's watchers: growth,
// triggering, removal and the shrink back to a slice.
func TestManyWatchersOnePath(t *testing.T) {
	h := New(Options{})
	cs := conns{}
	const n = 100
	for i := 1; i <= n; i++ {
		h.AddData(cs.get(i), "/hot")
		if i%2 == 0 {
			h.AddPersistent(cs.get(i), "/hot")
		}
	}
	checkInvariants(t, h)
	if got := h.Count(); got != n {
		t.Fatalf("Count() = %d, want %d", got, n)
	}
	if h.stripes[h.hash("/hot")&stripeMask].slot(0).big == nil {
		t.Fatalf("expected the map representation")
	}
	h.Trigger(evs("DataChanged /hot"))
	for i := 1; i <= n; i++ {
		if got := cs[i].take(); len(got) != 1 {
			t.Fatalf("w%d got %q", i, got)
		}
	}
	checkInvariants(t, h) // odd watchers' one-shot watches are gone
	if got := h.Count(); got != n/2 {
		t.Fatalf("Count() = %d, want %d", got, n/2)
	}
	for i := 2; i <= n; i += 2 {
		if i > 10 && !h.Remove(cs[i], "/hot", wire.WatcherAny) {
			t.Fatalf("remove w%d failed", i)
		}
		checkInvariants(t, h)
	}
	ps := h.stripes[h.hash("/hot")&stripeMask].slot(0)
	if ps.big != nil || len(ps.small) != 5 {
		t.Fatalf("expected a 5-entry slice, got big=%d small=%d", len(ps.big), len(ps.small))
	}
	h.Trigger(evs("ChildrenChanged /hot"))
	for i := 2; i <= 10; i += 2 {
		if got := cs[i].take(); !slices.Equal(got, []string{"ChildrenChanged /hot"}) {
			t.Fatalf("w%d got %q", i, got)
		}
	}
	for _, c := range cs {
		h.RemoveWatcher(c)
	}
	checkEmpty(t, h)
}

func TestParent(t *testing.T) {
	for in, want := range map[string]string{"/": "", "/a": "/", "/a/b": "/a", "/a/b/c": "/a/b"} {
		if got := parent(in); got != want {
			t.Errorf("parent(%q) = %q, want %q", in, got, want)
		}
	}
}
