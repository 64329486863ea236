package shard

import (
	"reflect"
	"sort"
	"testing"
	"unsafe"

	"github.com/corral/corral/wire"
)

// roleOp applies one multi op in a role directly through the state's txn (as a committed
// transaction would) and returns its raw result, error and events.
func roleOp(s *State, role TxnRole, op wire.MultiOp, session int64, auth []wire.ID) (wire.MultiResult, wire.Err, []Event) {
	zxid := nextZxid(s.lastZxid, s.cfg.Tag, 0, 0)
	t := &s.tx
	t.begin(zxid, 7)
	var r wire.MultiResult
	err := t.multiOp(&op, role, &r, session, auth)
	if err != wire.ErrOK {
		return r, err, nil
	}
	s.lastZxid = zxid
	return r, err, t.commit(nil)
}

func eventList(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, eventNames[e.Type]+" "+e.Path)
	}
	return out
}

// TestStubs: the parent side of a top-level create leaves a stub on the root shard: listed
// among the children of "/", counted in its stat, invisible everywhere else, never a parent,
// removed by closeSession (ephemeral) with the parent's event only, and persisted.
func TestStubs(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true, ExtendedTypes: true})
	root0, _ := s.View(0).Get("/")
	r, err, evs := roleOp(s, RoleParent, mCreate("/x", []byte("data"), 0), 0, nil)
	if err != wire.ErrOK || r.Path != "/x" || r.Stat != (wire.Stat{}) {
		t.Fatalf("parent create: %v %+v", err, r)
	}
	if got := eventList(evs); !reflect.DeepEqual(got, []string{"NodeChildrenChanged /"}) {
		t.Fatalf("parent create events: %q", got)
	}
	z := s.lastZxid
	v := s.View(0)
	if _, ok := v.Get("/x"); ok {
		t.Fatal("a stub is visible to Get")
	}
	if got := v.Children("/"); !reflect.DeepEqual(got, []string{"x", "zookeeper"}) {
		t.Fatalf("children of /: %q", got)
	}
	root, _ := v.Get("/")
	if st := root.Stat(); st.NumChildren != 2 || st.Cversion != root0.Stat().Cversion+1 || root.StoredCversion() != 1 || st.Pzxid != z {
		t.Fatalf("stat of /: %+v", st)
	}
	if v.Len() != 4 || v.CountDescendants("/") != 3 {
		t.Fatalf("len %d, descendants %d: stubs must not count", v.Len(), v.CountDescendants("/"))
	}
	for _, rd := range []struct {
		code wire.OpCode
		req  wire.Record
	}{
		{wire.OpExists, &wire.ExistsRequest{Path: "/x"}},
		{wire.OpGetData, &wire.GetDataRequest{Path: "/x"}},
		{wire.OpGetACL, &wire.GetACLRequest{Path: "/x"}},
		{wire.OpGetChildren, &wire.GetChildrenRequest{Path: "/x"}},
		{wire.OpGetChildren2, &wire.GetChildrenRequest{Path: "/x"}},
		{wire.OpGetAllChildrenNumber, &wire.GetAllChildrenNumberRequest{Path: "/x"}},
	} {
		if err, _ := v.Read(rd.code, rd.req, nil); err != wire.ErrNoNode {
			t.Errorf("read %d of a stub: %v", rd.code, err)
		}
	}
	walked := 0
	v.Walk("/", func(string, NodeInfo) bool { walked++; return true })
	if walked != 4 {
		t.Fatalf("walk visited %d nodes", walked)
	}
	// the stub is no node here: no children under it, no setData, no check, no delete; but the
	// name is taken
	for _, c := range []struct {
		op   wire.MultiOp
		want wire.Err
	}{
		{mCreate("/x/c", nil, 0), wire.ErrNoNode},
		{mSet("/x", nil, -1), wire.ErrNoNode},
		{mCheck("/x", -1), wire.ErrNoNode},
		{mDelete("/x", -1), wire.ErrNoNode},
		{mCreate("/x", nil, 0), wire.ErrNodeExists},
	} {
		for _, role := range []TxnRole{RoleFull, RoleNode} {
			if c.op.Op == wire.OpCreate && c.op.Create.Path == "/x/c" && role == RoleNode {
				continue // the node side does not look at the parent
			}
			if _, err, _ := roleOp(s, role, c.op, 0, nil); err != c.want {
				t.Errorf("role %d op %d %+v: %v, want %v", role, c.op.Op, c.op, err, c.want)
			}
		}
	}

	// an ephemeral stub: indexed for closeSession, not listed by Ephemerals
	if _, err, _ := roleOp(s, RoleParent, mCreate("/e", nil, wire.FlagEphemeral), 0x42, nil); err != wire.ErrOK {
		t.Fatal(err)
	}
	if got := s.View(0).Ephemerals(0x42, "/"); len(got) != 0 {
		t.Fatalf("Ephemerals lists a stub: %q", got)
	}
	checkInvariants(t, s)
	// persistence of the flag
	key, _ := keyOf("/e")
	n := s.tree.get(key)
	back, err2 := decodeNode(key, appendNode(nil, n))
	if err2 != nil || !back.isStub() || back.owner != 0x42 {
		t.Fatalf("stub codec: %v %+v", err2, back)
	}
	s.Apply(batch(1, 1, 0, Op{Code: wire.OpCloseSession, Session: 0x42}))
	if s.tree.get(key) != nil {
		t.Fatal("closeSession left the ephemeral stub")
	}
	if got := s.View(0).Children("/"); !reflect.DeepEqual(got, []string{"x", "zookeeper"}) {
		t.Fatalf("children after close: %q", got)
	}
	// parent-side delete removes the stub with the parent's event only
	r, err, evs = roleOp(s, RoleParent, mDelete("/x", -1), 0, nil)
	if err != wire.ErrOK || r.Op != wire.OpDelete || !reflect.DeepEqual(eventList(evs), []string{"NodeChildrenChanged /"}) {
		t.Fatalf("parent delete: %v %q", err, eventList(evs))
	}
	if _, err, _ := roleOp(s, RoleParent, mDelete("/x", -1), 0, nil); err != wire.ErrNoNode {
		t.Fatalf("parent delete of a missing stub: %v", err)
	}
	checkInvariants(t, s)
	if s.tree.stubs != 0 {
		t.Fatalf("stub count %d", s.tree.stubs)
	}
}

// TestCloseSessionStubEvents: closing a session removes its ephemerals and ephemeral stubs under
// one zxid; the stub gives only the parent's NodeChildrenChanged.
func TestCloseSessionStubEvents(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	roleOp(s, RoleParent, mCreate("/s", nil, wire.FlagEphemeral), 5, nil)
	roleOp(s, RoleFull, mCreate("/r", nil, wire.FlagEphemeral), 5, nil)
	_, evs := s.Apply(batch(1, 1, 0, Op{Code: wire.OpCloseSession, Session: 5}))
	got := eventList(evs)
	sort.Strings(got)
	if want := []string{"NodeChildrenChanged /", "NodeChildrenChanged /", "NodeDeleted /r"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if evs[0].Zxid != evs[2].Zxid || s.View(0).Len() != 4 || len(s.View(0).Children("/")) != 1 {
		t.Fatal("ephemerals left, or more than one zxid")
	}
}

// TestNodeRole: the node side of a top-level create and delete on a shard without "/".
func TestNodeRole(t *testing.T) {
	s := NewState(StateConfig{Tag: 2, ExtendedTypes: true})
	r, err, evs := roleOp(s, RoleNode, mCreate("/q-0000000007", []byte("d"), wire.FlagPersistentSequential), 0, nil)
	if err != wire.ErrOK || r.Path != "/q-0000000007" || r.Stat.Czxid != s.lastZxid || r.Stat.DataLength != 1 {
		t.Fatalf("node create: %v %+v", err, r)
	}
	if got := eventList(evs); !reflect.DeepEqual(got, []string{"NodeCreated /q-0000000007"}) {
		t.Fatalf("node create events: %q", got)
	}
	// a full-role create of the same top-level path fails: no parent here
	if _, err, _ := roleOp(s, RoleFull, mCreate("/y", nil, 0), 0, nil); err != wire.ErrNoNode {
		t.Fatalf("full create without a parent: %v", err)
	}
	if _, err, _ := roleOp(s, RoleNode, mCreate("/q-0000000007", nil, 0), 0, nil); err != wire.ErrNodeExists {
		t.Fatalf("node create twice: %v", err)
	}
	if _, err, _ := roleOp(s, RoleFull, mCreate("/q-0000000007/c", nil, 0), 0, nil); err != wire.ErrOK {
		t.Fatalf("child of the mount point: %v", err)
	}
	for _, c := range []struct {
		op   wire.MultiOp
		want wire.Err
	}{
		{mDelete("/nope", -1), wire.ErrNoNode},
		{mDelete("/q-0000000007", 3), wire.ErrBadVersion},
		{mDelete("/q-0000000007", -1), wire.ErrNotEmpty},
		{mDelete("/", -1), wire.ErrBadArguments},
		{mCreate("/bad/", nil, 0), wire.ErrBadArguments},
		{mCreate("/e", nil, wire.FlagEphemeral), wire.ErrSessionExpired},
	} {
		if _, err, _ := roleOp(s, RoleNode, c.op, 0, nil); err != c.want {
			t.Errorf("node role %+v: %v, want %v", c.op, err, c.want)
		}
	}
	roleOp(s, RoleFull, mDelete("/q-0000000007/c", -1), 0, nil)
	_, err, evs = roleOp(s, RoleNode, mDelete("/q-0000000007", 0), 0, nil)
	if err != wire.ErrOK || !reflect.DeepEqual(eventList(evs), []string{"NodeDeleted /q-0000000007"}) {
		t.Fatalf("node delete: %v %q", err, eventList(evs))
	}
	if s.View(0).Len() != 0 {
		t.Fatal("node left behind")
	}
}

// TestNodeSizeClass: a node fits Go's 112-byte size class. The stub mark lives in the ACL pointer
// (stubACL) because a flag of its own would make node 113 bytes, which Go allocates in its 128-byte
// class: 16 bytes more for every znode (docs/benchmarks.md, "Memory per znode").
func TestNodeSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(node{}); size > 112 {
		t.Fatalf("node is %d bytes: above the 112-byte size class", size)
	}
}
