package shard

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/corral/corral/wire"
)

// withSession sets the op's session, and both the session's zxid and the proposing server's
// view zxid to minZxid (withView sets the view's apart).
func withSession(op Op, session, minZxid int64) Op {
	op.Session, op.MinZxid, op.ViewZxid = session, minZxid, minZxid
	return op
}

func withView(op Op, viewZxid int64) Op {
	op.ViewZxid = viewZxid
	return op
}

// moveFixture builds a source A (the root shard, tag 1) holding /app with a child, a
// grandchild and an ephemeral of session 7, plus /other; and a destination B (tag 2).
func moveFixture(t *testing.T) (a, b *State) {
	t.Helper()
	a = NewState(StateConfig{Tag: 1, OwnsRoot: true})
	b = NewState(StateConfig{Tag: 2})
	a.track, b.track = true, true
	res, _ := a.Apply(batch(1, 1, 1000,
		opCreate("/app", []byte("root"), 0),
		opCreate("/app/x", []byte("1"), 0),
		opCreate("/app/x/y", nil, 0),
		withSession(opCreate("/app/e", []byte("eph"), wire.FlagEphemeral), 7, 0),
		opCreate("/other", nil, 0)))
	for _, r := range res.Results {
		if r.Err != wire.ErrOK {
			t.Fatalf("fixture: %+v", res)
		}
	}
	return a, b
}

// runMove prepares the move of path out of a and into b, and commits it on both; it returns
// the commit zxid.
func runMove(t *testing.T, a, b *State, path string, time int64) int64 {
	t.Helper()
	out := TxnPrepare{ID: 42, Anchor: 1, Deadline: time + 10_000, Move: &MoveSpec{Path: path, To: 3}}
	repA, _, _ := txnReply(t, a, ctl(1, time, prepareOp(out)))
	if repA.Outcome != TxnPrepared {
		t.Fatalf("prepare out: %+v", repA)
	}
	nodes := a.View(2).ExportSubtree(path)
	in := TxnPrepare{ID: 42, Anchor: 1, Deadline: time + 10_000, Move: &MoveSpec{Path: path, To: 3, In: true, Nodes: nodes}}
	repB, _, _ := txnReply(t, b, ctl(1, time, prepareOp(in)))
	if repB.Outcome != TxnPrepared {
		t.Fatalf("prepare in: %+v", repB)
	}
	z := max(repA.Floor, repB.Floor)<<8 | 1
	for _, s := range []*State{a, b} {
		rep, _, evs := txnReply(t, s, ctl(2, time, commitOp(42, z, time)))
		if rep.Outcome != TxnCommitted || rep.Zxid != z || s.lastZxid != z || len(evs) != 0 {
			t.Fatalf("commit: %+v %v", rep, evs)
		}
	}
	return z
}

// TestMoveSubtree: a move takes every node of the subtree with its stats unchanged, leaves the
// source a stub (it holds the parent), records the routes on both sides, fires no events,
// blocks writes to the subtree while prepared, and afterwards sends writes back with ErrMoved
// (the subtree's, and for fenceMs every write issued before the move).
func TestMoveSubtree(t *testing.T) {
	a, b := moveFixture(t)
	before := map[string]wire.Stat{}
	a.View(2).Walk("/app", func(p string, n NodeInfo) bool {
		before[p] = n.Stat()
		return true
	})
	rootStat, _ := a.View(2).Get("/")

	// While prepared: a write to the subtree is blocked, one elsewhere applies.
	out := TxnPrepare{ID: 42, Anchor: 1, Deadline: 20_000, Move: &MoveSpec{Path: "/app", To: 3}}
	if rep, _, _ := txnReply(t, a, ctl(1, 2000, prepareOp(out))); rep.Outcome != TxnPrepared {
		t.Fatalf("prepare out: %+v", rep)
	}
	if r, _ := a.Apply(batch(1, 2, 2000, opSet("/app/x/y", []byte("z"), -1))); r.Status != BatchBlocked {
		t.Fatalf("write into the subtree while prepared: %+v", r)
	}
	if r, _ := a.Apply(batch(1, 2, 2000, opCreate("/app", nil, 0))); r.Status != BatchBlocked {
		t.Fatalf("create of the subtree root while prepared: %+v", r)
	}
	if r, _ := a.Apply(batch(1, 2, 2000, opSet("/other", []byte("o"), -1))); r.Status != BatchApplied || r.Results[0].Err != wire.ErrOK {
		t.Fatalf("write elsewhere while prepared: %+v", r)
	}
	nodes := a.View(2).ExportSubtree("/app")
	in := TxnPrepare{ID: 42, Anchor: 1, Deadline: 20_000, Move: &MoveSpec{Path: "/app", To: 3, In: true, Nodes: nodes}}
	repB, _, _ := txnReply(t, b, ctl(1, 2000, prepareOp(in)))
	if repB.Outcome != TxnPrepared {
		t.Fatalf("prepare in: %+v", repB)
	}
	z := repB.Floor<<8 | 1
	for _, s := range []*State{a, b} {
		rep, _, evs := txnReply(t, s, ctl(2, 2001, commitOp(42, z, 2001)))
		if rep.Outcome != TxnCommitted || s.lastZxid != z || len(evs) != 0 {
			t.Fatalf("commit: %+v %v", rep, evs)
		}
		checkInvariants(t, s)
	}

	va, vb := a.View(2), b.View(3)
	after := map[string]wire.Stat{}
	vb.Walk("/app", func(p string, n NodeInfo) bool {
		after[p] = n.Stat()
		return true
	})
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("stats changed by the move:\nbefore %v\nafter  %v", before, after)
	}
	if d, _ := vb.Get("/app/x"); string(d.Data()) != "1" {
		t.Fatalf("data: %q", d.Data())
	}
	if _, ok := va.Get("/app"); ok || va.Len() != 5 {
		t.Fatalf("source still holds the subtree: %d nodes", va.Len())
	}
	if got := va.Children("/"); !reflect.DeepEqual(got, []string{"app", "other", "zookeeper"}) {
		t.Fatalf("children of / on the source: %v", got)
	}
	if st, _ := va.Get("/"); st.Stat() != rootStat.Stat() {
		t.Fatalf("/ changed: %+v -> %+v", rootStat.Stat(), st.Stat())
	}
	if got := va.Routes(); !reflect.DeepEqual(got, []Route{{Path: "/app", To: 3, Zxid: z}}) {
		t.Fatalf("source routes %+v", got)
	}
	if got := vb.Routes(); !reflect.DeepEqual(got, []Route{{Path: "/app", Zxid: z}}) {
		t.Fatalf("destination routes %+v", got)
	}
	if got := vb.Ephemerals(7, ""); !reflect.DeepEqual(got, []string{"/app/e"}) {
		t.Fatalf("ephemerals moved: %v", got)
	}

	// The source sends writes back: into the subtree always, elsewhere when issued before the
	// move within fenceMs — issued from a view of the shard older than the move (ViewZxid < z),
	// whatever the session's zxid (which another shard's faster clock may have put above z).
	r, _ := a.Apply(batch(1, 3, 2002,
		withSession(opSet("/app/x", []byte("2"), -1), 5, z),
		withSession(opSet("/other", []byte("3"), -1), 5, z-1),
		withSession(opSet("/other", []byte("4"), -1), 5, z),
		withSession(opCreate("/app/new", nil, 0), 6, z+1),
		withView(withSession(opSet("/other", []byte("5"), -1), 8, z+100), z-1)))
	want := []wire.Err{ErrMoved, ErrMoved, wire.ErrOK, ErrMoved, ErrMoved}
	for i, w := range want {
		if r.Results[i].Err != w || w == ErrMoved && r.Results[i].Zxid != z {
			t.Fatalf("op %d: %+v, want %v", i, r.Results[i], w)
		}
	}
	if r, _ := a.Apply(batch(1, 4, 2001+fenceMs, withSession(opSet("/other", nil, -1), 5, 0))); r.Results[0].Err != wire.ErrOK {
		t.Fatalf("after the fence window: %+v", r.Results[0])
	}
	// A transaction op on the moved subtree fails with ErrMoved; the parent side still works.
	p := TxnPrepare{ID: 43, Anchor: 1, Deadline: 9_999_999, Multi: multiOf(mCreate("/app/q", nil, 0)), Roles: []TxnRole{RoleFull}}
	if rep, _, _ := txnReply(t, a, ctl(3, 2001+fenceMs, prepareOp(p))); rep.Outcome != TxnFailed || rep.FailErr != ErrMoved {
		t.Fatalf("txn on the moved subtree: %+v", rep)
	}

	// The destination serves the subtree above z; closeSession removes the moved ephemeral.
	r, evs := b.Apply(batch(1, 1, 2002, withSession(opSet("/app/x", []byte("2"), -1), 5, z), Op{Code: wire.OpCloseSession, Session: 7}))
	if r.Results[0].Err != wire.ErrOK || r.Results[0].Zxid <= z || r.Results[1].Err != wire.ErrOK {
		t.Fatalf("destination writes: %+v", r)
	}
	if got := eventList(evs); !reflect.DeepEqual(got, []string{"NodeDataChanged /app/x", "NodeDeleted /app/e", "NodeChildrenChanged /app"}) {
		t.Fatalf("destination events %v", got)
	}
	checkInvariants(t, b)
}

// TestMoveBack: a subtree moved A→B→A lives on A again: A's route says so with the later zxid,
// B keeps the stub-free remainder and a route to A.
func TestMoveBack(t *testing.T) {
	a, b := moveFixture(t)
	z1 := runMove(t, a, b, "/app", 2000)
	// back: b is the source now (it does not hold "/": no stub stays), a the destination (its
	// stub is replaced by the node)
	out := TxnPrepare{ID: 50, Anchor: 1, Deadline: 99_999, Move: &MoveSpec{Path: "/app", To: 2}}
	repB, _, _ := txnReply(t, b, ctl(3, 3000, prepareOp(out)))
	in := TxnPrepare{ID: 50, Anchor: 1, Deadline: 99_999, Move: &MoveSpec{Path: "/app", To: 2, In: true, Nodes: b.View(3).ExportSubtree("/app")}}
	repA, _, _ := txnReply(t, a, ctl(3, 3000, prepareOp(in)))
	if repA.Outcome != TxnPrepared || repB.Outcome != TxnPrepared {
		t.Fatalf("prepares: %+v %+v", repA, repB)
	}
	z2 := max(repA.Floor, repB.Floor)<<8 | 1
	txnReply(t, a, ctl(4, 3000, commitOp(50, z2, 3000)))
	txnReply(t, b, ctl(4, 3000, commitOp(50, z2, 3000)))
	if z2 <= z1 {
		t.Fatal("zxids")
	}
	if b.View(3).Len() != 0 || b.tree.nodes.Len() != 0 {
		t.Fatalf("source left nodes: %d", b.tree.nodes.Len())
	}
	if d, ok := a.View(2).Get("/app/x"); !ok || string(d.Data()) != "1" {
		t.Fatal("node not back")
	}
	if got := a.View(2).Routes(); !reflect.DeepEqual(got, []Route{{Path: "/app", Zxid: z2}}) {
		t.Fatalf("routes %+v", got)
	}
	if r, _ := a.Apply(batch(1, 2, 3001, withSession(opSet("/app/x", nil, -1), 5, z2))); r.Results[0].Err != wire.ErrOK {
		t.Fatalf("write after moving back: %+v", r.Results[0])
	}
	checkInvariants(t, a)
	checkInvariants(t, b)
}

// TestMoveRefused: a destination that holds a node in the subtree refuses (NODEEXISTS) and
// locks nothing; a source whose subtree moved away refuses with ErrMoved; a closed session's
// ephemerals are removed, with events (NodeDeleted naming the session), when the copy arrives at a destination that already
// applied the session's closeSession.
func TestMoveRefused(t *testing.T) {
	a, b := moveFixture(t)
	if _, err, _ := roleOp(b, RoleNode, mCreate("/app", nil, 0), 0, nil); err != wire.ErrOK {
		t.Fatal(err)
	}
	in := TxnPrepare{ID: 1, Anchor: 1, Deadline: 9_999, Move: &MoveSpec{Path: "/app", To: 3, In: true, Nodes: a.View(2).ExportSubtree("/app")}}
	if rep, _, _ := txnReply(t, b, ctl(1, 1000, prepareOp(in))); rep.Outcome != TxnFailed || rep.FailErr != wire.ErrNodeExists || b.prepared != nil {
		t.Fatalf("clash: %+v", rep)
	}

	a, b = moveFixture(t)
	b.Apply(batch(1, 1, 1500, Op{Code: wire.OpCloseSession, Session: 7}))
	out := TxnPrepare{ID: 42, Anchor: 1, Deadline: 20_000, Move: &MoveSpec{Path: "/app", To: 3}}
	txnReply(t, a, ctl(1, 2000, prepareOp(out)))
	in = TxnPrepare{ID: 42, Anchor: 1, Deadline: 20_000, Move: &MoveSpec{Path: "/app", To: 3, In: true, Nodes: a.View(2).ExportSubtree("/app")}}
	repB, _, _ := txnReply(t, b, ctl(1, 2000, prepareOp(in)))
	z := repB.Floor<<8 | 1
	txnReply(t, a, ctl(2, 2000, commitOp(42, z, 2000)))
	_, _, evs := txnReply(t, b, ctl(2, 2000, commitOp(42, z, 2000)))
	if got := eventList(evs); !reflect.DeepEqual(got, []string{"NodeDeleted /app/e", "NodeChildrenChanged /app"}) || evs[0].Zxid != z ||
		evs[0].Session != 7 || evs[1].Session != 0 {
		t.Fatalf("events %v", got)
	}
	if _, ok := b.View(3).Get("/app/e"); ok {
		t.Fatal("ephemeral of a closed session installed")
	}
	checkInvariants(t, b)
	// the source refuses to move what it no longer holds
	again := TxnPrepare{ID: 43, Anchor: 1, Deadline: 20_000, Move: &MoveSpec{Path: "/app/x", To: 3}}
	if rep, _, _ := txnReply(t, a, ctl(3, 2000, prepareOp(again))); rep.Outcome != TxnFailed || rep.FailErr != ErrMoved {
		t.Fatalf("move of a moved subtree: %+v", rep)
	}
}

// TestMoveCodecs: a move prepare and the routes round-trip; truncations fail cleanly.
func TestMoveCodecs(t *testing.T) {
	p := TxnPrepare{ID: 7, Anchor: 2, Deadline: 99, Multi: wire.MultiRequest{}, Roles: nil,
		Move: &MoveSpec{Path: "/a/b", To: 4, In: true, Nodes: []byte{1, 2, 3}}}
	enc := p.AppendTo(nil)
	got, err := DecodeTxnPrepare(enc)
	if err != nil || !reflect.DeepEqual(*got.Move, *p.Move) || got.ID != 7 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for i := range enc {
		if _, err := DecodeTxnPrepare(enc[:i]); err == nil {
			t.Fatalf("truncated at %d decoded", i)
		}
	}
	rs := &routes{byPath: map[string]route{"/a": {to: 3, zxid: 9, time: 1}, "/b/c": {zxid: 11, time: 2}}}
	back, err := decodeRoutes(appendRoutes(nil, rs))
	if err != nil || !reflect.DeepEqual(back, rs) {
		t.Fatalf("routes: %+v %v", back, err)
	}
	if !bytes.Equal(appendRoutes(nil, nil), []byte{0}) {
		t.Fatal("empty routes")
	}
}

// TestBatchViewZxidCodec: version 3 carries ViewZxid; an op of a version 2 batch (written
// before it existed) decodes with ViewZxid = MinZxid, what the move fence compared then.
func TestBatchViewZxidCodec(t *testing.T) {
	b := Batch{Proposer: 9, Seq: 4, Time: 1234, Ops: []Op{{Session: 5, Code: wire.OpSetData, MinZxid: 700, ViewZxid: 650, Body: []byte{1}}}}
	got, err := DecodeBatch(b.AppendTo(nil))
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	v2 := []byte{2}
	v2 = binary.AppendUvarint(v2, 9)
	v2 = binary.AppendUvarint(v2, 4)
	v2 = binary.AppendVarint(v2, 1234)
	v2 = append(v2, 0, 1) // flags, one op
	v2 = binary.AppendVarint(v2, 5)
	v2 = binary.AppendVarint(v2, int64(wire.OpSetData))
	v2 = binary.AppendVarint(v2, 700)
	v2 = append(v2, 0, 2, 1) // no auth, body [1]
	got, err = DecodeBatch(v2)
	if err != nil || len(got.Ops) != 1 || got.Ops[0].MinZxid != 700 || got.Ops[0].ViewZxid != 700 {
		t.Fatalf("version 2: %+v, %v", got, err)
	}
}
