package shard

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"reflect"
	"testing"

	"github.com/corral/corral/wire"
)

// ctl returns a control batch of proposer 100.
func ctl(seq uint64, time int64, ops ...Op) *Batch {
	return &Batch{Proposer: 100, Seq: seq, Time: time, Control: true, Ops: ops}
}

func prepareOp(p TxnPrepare) Op { return Op{Code: OpTxnPrepare, Body: p.AppendTo(nil)} }

func commitOp(id uint64, zxid, time int64) Op {
	return Op{Code: OpTxnCommit, Body: (&TxnCommit{ID: id, Zxid: zxid, Time: time}).AppendTo(nil)}
}

func abortOp(id uint64) Op { return Op{Code: OpTxnAbort, Body: (&TxnAbort{ID: id}).AppendTo(nil)} }

func resolveOp(id uint64) Op {
	return Op{Code: OpTxnResolve, Body: (&TxnResolve{ID: id}).AppendTo(nil)}
}

// txnReply applies a control batch of one op and decodes its reply.
func txnReply(t *testing.T, s *State, b *Batch) (TxnReply, OpResult, []Event) {
	t.Helper()
	res, evs := s.Apply(b)
	if res.Status != BatchApplied || len(res.Results) != 1 || res.Results[0].Err != wire.ErrOK {
		t.Fatalf("control batch: %+v", res)
	}
	rep, err := DecodeTxnReply(res.Results[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	return rep, res.Results[0], evs
}

func topCreate(id uint64, role TxnRole, path string) TxnPrepare {
	return TxnPrepare{ID: id, Anchor: 1, Deadline: 9_999, Multi: multiOf(mCreate(path, []byte("v"), 0)), Roles: []TxnRole{role}}
}

// TestTxnBlocking: while prepared, a non-control batch that touches a locked key (here "/", the
// parent of the stub), is out of order, or would reach the reserved floor is BatchBlocked and
// changes nothing (no zxid, no seq, no cache, no new proposer, no expiry); control batches
// apply. After the commit the refused batch applies with its original seq, and duplicate and
// out-of-order handling are as before.
func TestTxnBlocking(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	s.track = true
	r1, _ := s.Apply(batch(1, 1, 1000, opCreate("/a", nil, 0)))
	s.Apply(batch(2, 1, 1000, Op{Code: wire.OpCloseSession, Session: 3}))
	rep, res, _ := txnReply(t, s, ctl(1, 1000, prepareOp(topCreate(5, RoleParent, "/x"))))
	if rep.Outcome != TxnPrepared || res.Zxid != 0 {
		t.Fatalf("prepare: %+v", rep)
	}
	floor := rep.Floor
	if ZxidCounter(s.lastZxid) >= floor || floor != (1000+reserveMs)<<timeShift {
		t.Fatalf("floor %d not reserved above the last zxid %x", rep.Floor, s.lastZxid)
	}
	if info, ok := s.View(0).Prepared(); !ok || !reflect.DeepEqual(info, PreparedInfo{ID: 5, Anchor: 1, PrepareTime: 1000, Deadline: 9_999}) {
		t.Fatalf("view: %+v %v", info, ok)
	}
	before := s.AppendCanonical(nil)
	s.dirty.reset()
	blockedBefore := s.View(0).BlockedBatches()
	blocked := []*Batch{
		batch(1, 2, 1000, opCreate("/b", nil, 0)),                    // next seq, locked parent
		batch(1, 1, 1000, opCreate("/a", nil, 0)),                    // duplicate, locked parent
		batch(1, 7, 1000),                                            // gap
		batch(9, 1, 1000, opCreate("/c", nil, 0)),                    // new proposer, locked parent
		batch(1, 2, 1000+2*tombstoneTTL, opSet("/a", nil, -1)),       // past the floor; would expire tombstone 3 and proposer 2
		batch(1, 2, 1000, Op{Code: wire.OpCloseSession, Session: 4}), // closeSession
		batch(1, 2, 1000, Op{Code: wire.OpSetData, MinZxid: floor<<8 | 2, Body: opSet("/a", nil, -1).Body}), // MinZxid at the floor
	}
	for _, b := range blocked {
		res, evs := s.Apply(b)
		if res.Status != BatchBlocked || res.Results != nil || evs != nil {
			t.Fatalf("batch %+v while prepared: %+v", b, res)
		}
	}
	if !bytes.Equal(s.AppendCanonical(nil), before) || !s.dirty.empty() {
		t.Fatal("a blocked batch changed the state")
	}
	// Only the advisory count of blocked batches grew, once per blocked batch.
	if got := s.View(0).BlockedBatches() - blockedBefore; got != uint64(len(blocked)) {
		t.Fatalf("BlockedBatches grew by %d for %d blocked batches", got, len(blocked))
	}
	// a control batch is applied: a busy prepare, an abort of another txn
	if rep, _, _ := txnReply(t, s, ctl(2, 1000, prepareOp(topCreate(6, RoleParent, "/y")))); rep.Outcome != TxnBusy {
		t.Fatalf("second prepare: %+v", rep)
	}
	// commit: one zxid Z for the whole txn, events under Z
	z := floor<<8 | 7 // another shard's tag: Z comes from the anchor
	rep, res, evs := txnReply(t, s, ctl(3, 1001, commitOp(5, z, 1234)))
	if rep.Outcome != TxnCommitted || rep.Zxid != z || res.Zxid != z || s.lastZxid != z || len(evs) != 1 || evs[0].Zxid != z {
		t.Fatalf("commit: %+v %+v %+v", rep, res, evs)
	}
	if _, ok := s.View(0).Prepared(); ok {
		t.Fatal("prepared after commit")
	}
	// the refused batch applies now with its seq, above Z
	res2, _ := s.Apply(batch(1, 2, 1002, opCreate("/b", nil, 0)))
	if res2.Status != BatchApplied || res2.Results[0].Err != wire.ErrOK || res2.Results[0].Zxid <= z || ZxidTag(res2.Results[0].Zxid) != 1 {
		t.Fatalf("after commit: %+v", res2)
	}
	if r, _ := s.Apply(batch(1, 1, 1002)); r.Status != BatchDuplicate || !reflect.DeepEqual(r.Results, r1.Results) {
		t.Fatalf("duplicate after commit: %+v", r)
	}
	if r, _ := s.Apply(batch(1, 9, 1002)); r.Status != BatchOutOfOrder {
		t.Fatalf("gap after commit: %+v", r)
	}
	if r, _ := s.Apply(batch(9, 1, 1002)); r.Status != BatchApplied {
		t.Fatalf("new proposer after commit: %+v", r)
	}
	// a retried control batch gets the cached reply
	if r, _ := s.Apply(ctl(3, 1003)); r.Status != BatchDuplicate || !reflect.DeepEqual(r.Results[0], res) {
		t.Fatalf("control retry: %+v", r)
	}
}

// TestTxnCommitZxidNotAbove: a commit zxid that is not above the shard's last zxid is refused
// (a coordinator bug) without changing anything; the transaction stays prepared and commits
// with a good zxid.
func TestTxnCommitZxidNotAbove(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	s.Apply(batch(1, 1, 5000, opCreate("/a", nil, 0)))
	rep, _, _ := txnReply(t, s, ctl(1, 5000, prepareOp(topCreate(5, RoleParent, "/x"))))
	if rep.Outcome != TxnPrepared {
		t.Fatal(rep)
	}
	before := txnState(s)
	for i, z := range []int64{s.lastZxid, s.lastZxid - 1, 0, -1 << 40} {
		rep, res, evs := txnReply(t, s, ctl(uint64(i+2), 5000, commitOp(5, z, 5000)))
		if rep.Outcome != TxnAborted || res.Zxid != 0 || evs != nil {
			t.Fatalf("commit at %x: %+v", z, rep)
		}
	}
	if !bytes.Equal(txnState(s), before) {
		t.Fatal("a refused commit changed the state")
	}
	rep, _, _ = txnReply(t, s, ctl(6, 5000, commitOp(5, s.lastZxid+1, 5000)))
	if rep.Outcome != TxnCommitted {
		t.Fatalf("commit just above: %+v", rep)
	}
	checkInvariants(t, s)
}

// txnState encodes the state but the proposer table (which every applied batch changes).
func txnState(s *State) []byte {
	dst := binary.AppendVarint(nil, s.lastZxid)
	s.tree.nodes.Ascend(func(n *node) bool {
		dst = appendNode(appendStr(dst, n.key), n)
		return true
	})
	return s.appendTxnCanonical(dst)
}

// TestTxnReadOpMulti: a multi holding a read op is MARSHALLINGERROR for the whole request.
func TestTxnReadOpMulti(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	// mixing reads and writes does not even decode
	mixed := TxnPrepare{ID: 1, Multi: multiOf(mCheck("/", -1), wire.MultiOp{Op: wire.OpGetData, GetData: &wire.GetDataRequest{Path: "/"}}),
		Roles: []TxnRole{RoleFull, RoleNone}}
	if res, _ := s.Apply(ctl(1, 0, prepareOp(mixed))); res.Results[0].Err != wire.ErrMarshallingError || res.Results[0].Body != nil {
		t.Fatalf("mixed multi: %+v", res)
	}
	p := TxnPrepare{ID: 1, Multi: multiOf(wire.MultiOp{Op: wire.OpGetData, GetData: &wire.GetDataRequest{Path: "/"}}),
		Roles: []TxnRole{RoleFull}}
	rep, _, _ := txnReply(t, s, ctl(2, 0, prepareOp(p)))
	if rep.Outcome != TxnFailed || rep.FailIndex != -1 || rep.FailErr != wire.ErrMarshallingError || rep.Results != nil {
		t.Fatalf("read op: %+v", rep)
	}
	if _, ok := s.View(0).Prepared(); ok {
		t.Fatal("a failed prepare locked the shard")
	}
}

// TestTxnDecisionExpiry: decisions are forgotten after 24 h of batch time.
func TestTxnDecisionExpiry(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	txnReply(t, s, ctl(1, 1000, abortOp(9)))
	if rep, _, _ := txnReply(t, s, ctl(2, 1000+decisionTTL, prepareOp(topCreate(9, RoleParent, "/x")))); rep.Outcome != TxnAborted {
		t.Fatalf("prepare of an aborted txn: %+v", rep)
	}
	s.Apply(ctl(3, 1001+decisionTTL))
	if len(s.decisions.byID) != 0 || s.decisions.byTime.Len() != 0 {
		t.Fatal("decision not expired")
	}
	if rep, _, _ := txnReply(t, s, ctl(4, 1002+decisionTTL, resolveOp(9))); rep.Outcome != TxnAborted {
		t.Fatalf("resolve: %+v", rep)
	}
}

// TestTxnCreate2Stat: the node side of a top-level create2 reports the stat (under the commit
// zxid and time) that the coordinator needs for the Create2Response.
func TestTxnCreate2Stat(t *testing.T) {
	s := NewState(StateConfig{Tag: 2})
	p := TxnPrepare{ID: 3, Multi: multiOf(wire.MultiOp{Op: wire.OpCreate2, Create: &wire.CreateRequest{Path: "/n", Data: []byte("abc"), ACL: wire.OpenACLUnsafe}}),
		Roles: []TxnRole{RoleNode}}
	txnReply(t, s, ctl(1, 0, prepareOp(p)))
	rep, _, _ := txnReply(t, s, ctl(2, 0, commitOp(3, 77<<8|1, 42)))
	want := wire.Stat{Czxid: 77<<8 | 1, Mzxid: 77<<8 | 1, Pzxid: 77<<8 | 1, Ctime: 42, Mtime: 42, DataLength: 3}
	if len(rep.Results) != 1 || rep.Results[0].Path != "/n" || rep.Results[0].Stat != want {
		t.Fatalf("results: %+v", rep.Results)
	}
	n, ok := s.View(0).Get("/n")
	if !ok || n.Stat() != want {
		t.Fatalf("node: %+v", n.Stat())
	}
}

// TestTxnPersistence: the prepared transaction and the decisions survive a reload from the
// state's records (what a replica's store and snapshots keep, records.go); the reloaded state
// stays blocked and commits exactly like the state that never reloaded.
func TestTxnPersistence(t *testing.T) {
	cfg := StateConfig{Tag: 5, OwnsRoot: true, Root: "/", ExtendedTypes: true}
	st := newStored(cfg)
	for _, b := range []*Batch{
		batch(9, 1, 1000, opCreate("/a", nil, 0)),
		ctl(1, 1000, abortOp(41)),
		ctl(2, 1000, prepareOp(topCreate(42, RoleParent, "/x")), prepareOp(topCreate(42, RoleParent, "/x"))),
	} {
		st.s.Apply(b)
	}
	want := st.s.AppendCanonical(nil)
	lastBefore := st.s.lastZxid
	if info, ok := st.s.View(3).Prepared(); !ok || info.ID != 42 {
		t.Fatal("view after prepare")
	}
	loaded := st.reload(t, 3)
	if !bytes.Equal(loaded.AppendCanonical(nil), want) {
		t.Fatal("reloaded: state differs")
	}
	if info, ok := loaded.View(3).Prepared(); !ok || !reflect.DeepEqual(info, PreparedInfo{ID: 42, Anchor: 1, PrepareTime: 1000, Deadline: 9_999}) {
		t.Fatalf("reloaded: prepared %+v %v", info, ok)
	}
	floor := st.s.prepared.floor
	if floor != (1000+reserveMs)<<timeShift {
		t.Fatalf("floor %d", floor)
	}
	wantLocks := map[string]struct{}{"": {}, "\x01x": {}}
	if p := loaded.prepared; p.floor != floor || !reflect.DeepEqual(p.locks, wantLocks) {
		t.Fatalf("reloaded: floor %d locks %q", p.floor, p.locks)
	}
	z := floor<<8 | 1
	next := []*Batch{
		batch(9, 2, 1001, opSet("/a", []byte("v"), -1)),   // not locked: applies below the floor
		batch(9, 3, 1001, opCreate("/b", nil, 0)),         // "/" is locked: blocked
		batch(9, 3, 1000+reserveMs, opSet("/a", nil, -1)), // reaches the floor: blocked
		ctl(3, 1001, prepareOp(topCreate(41, RoleParent, "/late")), commitOp(42, z, 1001)),
		batch(9, 3, 1002, opCreate("/b", nil, 0)),
	}
	for name, x := range map[string]*State{"reloaded": loaded, "never reloaded": st.s} {
		var res []BatchResult
		for _, b := range next {
			r, _ := x.Apply(b)
			res = append(res, r)
		}
		if res[0].Status != BatchApplied || res[1].Status != BatchBlocked || res[2].Status != BatchBlocked ||
			res[3].Status != BatchApplied || res[4].Status != BatchApplied {
			t.Fatalf("%s: statuses %+v", name, res)
		}
		if zx := res[0].Results[0].Zxid; zx <= lastBefore || ZxidCounter(zx) >= floor {
			t.Fatalf("%s: zxid %x while prepared", name, zx)
		}
		if zx := res[4].Results[0].Zxid; zx <= z {
			t.Fatalf("%s: zxid %x after the commit", name, zx)
		}
		late, _ := DecodeTxnReply(res[3].Results[0].Body)
		done, _ := DecodeTxnReply(res[3].Results[1].Body)
		if late.Outcome != TxnAborted || done.Outcome != TxnCommitted || done.Zxid != z {
			t.Fatalf("%s: %+v %+v", name, late, done)
		}
		if _, ok := x.View(3).Prepared(); ok {
			t.Fatalf("%s: still prepared", name)
		}
	}
	if !bytes.Equal(loaded.AppendCanonical(nil), st.s.AppendCanonical(nil)) {
		t.Fatal("the reloaded state and the original diverge")
	}
	// The cleared lock and the new decision persist too.
	st2 := &stored{s: loaded, cfg: cfg, mem: st.mem}
	want = loaded.AppendCanonical(nil)
	again := st2.reload(t, 8)
	if !bytes.Equal(again.AppendCanonical(nil), want) {
		t.Fatal("state differs after the second reload")
	}
	if _, ok := again.View(3).Prepared(); ok {
		t.Fatal("prepared after reload")
	}
	if _, ok := again.decisions.byID[42]; !ok {
		t.Fatal("commit decision lost")
	}
}

// TestTxnDeterminism applies random client batches and random transaction steps (prepare,
// commit with a random zxid, abort, resolve, repeats) to two states, and checks identical
// results, events and canonical states, strictly increasing zxids, zxids below the reserved
// floor while a transaction is prepared, the tree's invariants, and that a blocked batch changes
// nothing.
func TestTxnDeterminism(t *testing.T) {
	outcomes := map[TxnOutcome]int{}
	heldStatus := map[BatchStatus]int{} // client batches while a transaction is prepared
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		cfg := StateConfig{OwnsRoot: true, ExtendedTypes: true, Tag: 3}
		s1, s2 := NewState(cfg), NewState(cfg)
		s1.track = true
		var seq, ctlSeq uint64
		now := int64(1_000_000)
		last := int64(0)
		nextID := uint64(1)
		for i := 0; i < 400; i++ {
			now += int64(r.Intn(100))
			var b *Batch
			if r.Intn(2) == 0 {
				var ops []Op
				for j := r.Intn(3); j >= 0; j-- {
					ops = append(ops, randomOp(r))
				}
				b = &Batch{Proposer: 1, Seq: seq + 1, Time: now, Ops: ops}
			} else {
				b = &Batch{Proposer: 2, Seq: ctlSeq + 1, Time: now, Control: true, Ops: []Op{randomTxnOp(r, &nextID, s1)}}
			}
			before := s1.AppendCanonical(nil)
			var floor int64 = maxCounter + 1
			if s1.prepared != nil && !b.Control {
				floor = s1.prepared.floor
			}
			enc := b.AppendTo(nil)
			db, err := DecodeBatch(enc)
			if err != nil {
				t.Fatal(err)
			}
			res1, ev1 := s1.Apply(&db)
			res2, ev2 := s2.Apply(b)
			if !reflect.DeepEqual(res1, res2) || !reflect.DeepEqual(ev1, ev2) || !bytes.Equal(s1.AppendCanonical(nil), s2.AppendCanonical(nil)) {
				t.Fatalf("seed %d batch %d: states diverged", seed, i)
			}
			if floor <= maxCounter {
				heldStatus[res1.Status]++
			}
			switch res1.Status {
			case BatchApplied:
				if b.Control {
					ctlSeq++
				} else {
					seq++
				}
			case BatchBlocked:
				if b.Control || !bytes.Equal(s1.AppendCanonical(nil), before) {
					t.Fatalf("seed %d batch %d: blocked wrongly", seed, i)
				}
				continue
			default:
				t.Fatalf("seed %d batch %d: status %d", seed, i, res1.Status)
			}
			for _, o := range res1.Results {
				if o.Zxid != 0 {
					if ZxidCounter(o.Zxid) >= floor {
						t.Fatalf("seed %d batch %d: zxid %x at or above the reserved floor %d", seed, i, o.Zxid, floor)
					}
					if o.Zxid <= last {
						t.Fatalf("seed %d batch %d: zxid %x after %x", seed, i, o.Zxid, last)
					}
					last = o.Zxid
				}
				if b.Control && o.Err == wire.ErrOK {
					rep, err := DecodeTxnReply(o.Body)
					if err != nil {
						t.Fatal(err)
					}
					outcomes[rep.Outcome]++
				}
			}
			for _, e := range ev1 {
				if e.Zxid > last {
					t.Fatalf("event after the last zxid")
				}
			}
			if s1.LastZxid() != last {
				t.Fatalf("seed %d batch %d: LastZxid %x, want %x", seed, i, s1.LastZxid(), last)
			}
			checkInvariants(t, s1)
		}
	}
	t.Logf("outcomes: %v; client batches while prepared: %v", outcomes, heldStatus)
	if heldStatus[BatchApplied] == 0 || heldStatus[BatchBlocked] == 0 {
		t.Errorf("while prepared: %v, want both applied and blocked batches", heldStatus)
	}
	for o := TxnPrepared; o <= TxnAborted; o++ {
		if outcomes[o] == 0 {
			t.Errorf("no outcome %d", o)
		}
	}
}

// randomTxnOp returns a random transaction step against s: mostly the prepared transaction's
// commit or abort, or a new prepare over random ops with RoleFull, RoleParent (top-level create
// and delete) or RoleNone.
func randomTxnOp(r *rand.Rand, nextID *uint64, s *State) Op {
	var cur uint64
	if s.prepared != nil {
		cur = s.prepared.prep.ID
	}
	switch k := r.Intn(10); {
	case cur != 0 && k < 4:
		z := s.lastZxid + int64(r.Intn(1000))<<8 - 1<<8 // sometimes not above: refused
		if r.Intn(2) == 0 {
			z = (s.prepared.floor + int64(r.Intn(3))) << 8 // the floor, as a coordinator commits
		}
		return commitOp(cur, z|int64(r.Intn(4)), int64(r.Intn(1000)))
	case cur != 0 && k < 5:
		return abortOp(cur)
	case k < 6:
		return resolveOp(uint64(r.Intn(int(*nextID))) + 1)
	case k < 7:
		return Op{Code: OpTxnPrepare, Body: []byte{1, 2, 3}} // malformed
	}
	id := *nextID
	if r.Intn(5) == 0 && id > 1 {
		id = uint64(r.Intn(int(id-1))) + 1 // a repeat or a late prepare
	} else {
		*nextID++
	}
	p := TxnPrepare{ID: id, Anchor: 1, Deadline: 1, Internal: r.Intn(4) == 0}
	for j := r.Intn(4); j >= 0; j-- {
		switch r.Intn(4) {
		case 0:
			paths := []string{"/t1", "/t2", "/a"}
			path := paths[r.Intn(len(paths))]
			flags := int32(r.Intn(4))
			var op wire.MultiOp
			if r.Intn(2) == 0 {
				op = mCreate(path, nil, flags)
			} else {
				op = mDelete(path, int32(r.Intn(2))-1)
			}
			p.Multi.Ops = append(p.Multi.Ops, op)
			p.Roles = append(p.Roles, RoleParent)
			continue
		case 1:
			p.Multi.Ops = append(p.Multi.Ops, mSet("/elsewhere", nil, -1))
			p.Roles = append(p.Roles, RoleNone)
			continue
		}
		sub := randomOp(r)
		d := wire.NewDecoder(sub.Body)
		var mo wire.MultiOp
		switch sub.Code {
		case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
			mo = wire.MultiOp{Op: sub.Code, Create: new(wire.CreateRequest)}
			mo.Create.Decode(d)
		case wire.OpDelete:
			mo = wire.MultiOp{Op: sub.Code, Delete: new(wire.DeleteRequest)}
			mo.Delete.Decode(d)
		case wire.OpSetData:
			mo = wire.MultiOp{Op: sub.Code, SetData: new(wire.SetDataRequest)}
			mo.SetData.Decode(d)
		case wire.OpCheck:
			mo = wire.MultiOp{Op: sub.Code, Check: new(wire.CheckVersionRequest)}
			mo.Check.Decode(d)
		default:
			continue
		}
		p.Multi.Ops = append(p.Multi.Ops, mo)
		p.Roles = append(p.Roles, RoleFull)
	}
	return Op{Code: OpTxnPrepare, Body: p.AppendTo(nil), Session: int64(r.Intn(3)), MinZxid: int64(r.Intn(3)) << 20}
}

// TestTxnLocksOnlyItsKeys: a transaction over the root shard (set, create, check, and the parent
// side of a top-level create) and data shard x (the node side) locks only the keys it touches.
// Other batches apply while it is prepared, with zxids above the earlier ones and below the
// reserved floor; conflicting ones (the same node, the parent of a create, a create under a
// locked parent, a multi or batch with one conflicting op, closeSession, deleteContainer) and
// ones that reach the floor (batch time or MinZxid) are blocked and change nothing. Both commit
// orders work; Z is above every zxid applied in between; the blocked batches apply afterwards,
// above Z.
func TestTxnLocksOnlyItsKeys(t *testing.T) {
	for _, rootFirst := range []bool{true, false} {
		root := NewState(StateConfig{Tag: 1, OwnsRoot: true})
		x := NewState(StateConfig{Tag: 2})
		if r, _ := root.Apply(batch(1, 1, 1000, opCreate("/a", nil, 0), opCreate("/a/b", nil, 0),
			opCreate("/c", nil, 0), opCreate("/d", nil, 0))); r.Status != BatchApplied {
			t.Fatal(r)
		}
		multi := multiOf(mSet("/a/b", []byte("t"), -1), mCreate("/c/n", nil, 0), mCheck("/d", -1), mCreate("/x", nil, 0))
		prep := func(roles ...TxnRole) Op {
			return prepareOp(TxnPrepare{ID: 5, Anchor: 1, Deadline: 2000, Multi: multi, Roles: roles})
		}
		rr, _, _ := txnReply(t, root, ctl(1, 1000, prep(RoleFull, RoleFull, RoleFull, RoleParent)))
		xr, _, _ := txnReply(t, x, ctl(1, 1010, prep(RoleNone, RoleNone, RoleNone, RoleNode)))
		if rr.Outcome != TxnPrepared || xr.Outcome != TxnPrepared ||
			rr.Floor != (1000+reserveMs)<<timeShift || xr.Floor != (1010+reserveMs)<<timeShift {
			t.Fatalf("prepare: %+v %+v", rr, xr)
		}
		// applied: every zxid above the previous one and below the floor
		last := map[*State]int64{root: root.lastZxid, x: x.lastZxid}
		floor := map[*State]int64{root: rr.Floor, x: xr.Floor}
		apply := func(s *State, b *Batch) []OpResult {
			t.Helper()
			res, _ := s.Apply(b)
			if res.Status != BatchApplied {
				t.Fatalf("batch %+v: %+v", b, res)
			}
			for _, o := range res.Results {
				if o.Zxid <= last[s] || ZxidCounter(o.Zxid) >= floor[s] {
					t.Fatalf("zxid %x after %x, floor %d", o.Zxid, last[s], floor[s])
				}
				last[s] = o.Zxid
			}
			return res.Results
		}
		blocked := func(s *State, b *Batch) {
			t.Helper()
			before := s.AppendCanonical(nil)
			if res, evs := s.Apply(b); res.Status != BatchBlocked || evs != nil {
				t.Fatalf("batch %+v: %+v", b, res)
			}
			if !bytes.Equal(s.AppendCanonical(nil), before) {
				t.Fatalf("blocked batch %+v changed the state", b)
			}
		}
		res := apply(root, batch(1, 2, 1100,
			opCreate("/a/x", nil, 0), opSet("/a", []byte("1"), -1), opDelete("/a/x", -1), opCreate2("/a/b2/deep", nil, 0),
			Op{Code: wire.OpSetData, Body: []byte{1}}, // undecodable: MARSHALLINGERROR, touches nothing
			Op{Code: wire.OpMulti, Body: encode(&wire.MultiRequest{Ops: []wire.MultiOp{mCreate("/a/m", nil, 0), mCheck("/a", 1)}})}))
		if res[0].Err != wire.ErrOK || res[1].Err != wire.ErrOK || res[2].Err != wire.ErrOK || res[3].Err != wire.ErrNoNode ||
			res[4].Err != wire.ErrMarshallingError || res[5].Err != wire.ErrOK {
			t.Fatalf("non-conflicting batch: %+v", res)
		}
		apply(x, batch(1, 1, 1100, opSet("/y", nil, -1)))
		for _, op := range []Op{
			opSet("/a/b", nil, -1),      // the same node
			opDelete("/a/b", -1),        // the same node
			opSet("/c", nil, -1),        // the parent of a create
			opCreate("/c/m", nil, 0),    // a create under a locked parent
			opCreate("/e", nil, 0),      // a create under "/" (the stub's parent)
			opDelete("/d", -1),          // a checked node
			opCreate("/x", nil, 0),      // the stub
			{Code: wire.OpCloseSession}, // unknown set of nodes
			{Code: wire.OpDeleteContainer, Body: encode(&wire.DeleteRequest{Path: "/c", Version: -1})},
			{Code: wire.OpMulti, Body: encode(&wire.MultiRequest{Ops: []wire.MultiOp{mCheck("/a", 1), mSet("/a/b", nil, -1)}})},
		} {
			blocked(root, batch(1, 3, 1200, op))
		}
		blocked(root, batch(1, 3, 1200, opSet("/a", nil, -1), opSet("/d", nil, -1))) // one conflicting op
		blocked(root, batch(1, 3, 1000+reserveMs, opSet("/a", nil, -1)))             // time reaches the floor
		blocked(root, batch(1, 3, 1200, Op{Code: wire.OpSetData, MinZxid: rr.Floor<<8 - 1, Body: opSet("/a", nil, -1).Body}))
		blocked(x, batch(1, 2, 1200, opSet("/x", nil, -1)))
		blocked(x, batch(1, 2, 1200, opCreate("/x/c", nil, 0)))
		// just below the floor still applies
		apply(root, batch(1, 3, 1000+reserveMs-1, opSet("/a", nil, -1)))

		z := max(rr.Floor, xr.Floor)<<8 | 1
		order := []*State{root, x}
		if !rootFirst {
			order = []*State{x, root}
		}
		for _, s := range order {
			if s.lastZxid >= z {
				t.Fatalf("Z %x not above %x", z, s.lastZxid)
			}
			rep, _, _ := txnReply(t, s, ctl(2, 1300, commitOp(5, z, 1300)))
			if rep.Outcome != TxnCommitted || s.lastZxid != z {
				t.Fatalf("commit: %+v", rep)
			}
			last[s], floor[s] = z, maxCounter+1
		}
		if n, ok := root.View(0).Get("/a/b"); !ok || string(n.Data()) != "t" || n.Stat().Mzxid != z {
			t.Fatal("/a/b not committed")
		}
		if n, ok := root.View(0).Get("/c/n"); !ok || n.Stat().Czxid != z {
			t.Fatal("/c/n not committed")
		}
		if _, ok := x.View(0).Get("/x"); !ok {
			t.Fatal("/x not committed")
		}
		// the blocked batches apply now, above Z
		if res := apply(root, batch(1, 4, 2500, opSet("/a/b", nil, -1), opCreate("/c/m", nil, 0))); res[0].Err != wire.ErrOK || res[1].Err != wire.ErrOK {
			t.Fatalf("after commit: %+v", res)
		}
		if res := apply(x, batch(1, 2, 1200, opSet("/x", nil, -1))); res[0].Err != wire.ErrOK {
			t.Fatalf("after commit: %+v", res)
		}
		// time follows the zxid: above Z, an op's time is at least the millisecond of Z
		if n, ok := root.View(0).Get("/c/m"); !ok || n.Stat().Czxid <= z || n.Stat().Ctime != ZxidCounter(n.Stat().Czxid)>>timeShift ||
			n.Stat().Ctime < ZxidCounter(z)>>timeShift {
			t.Fatalf("/c/m after commit: %+v", n.Stat())
		}
		if n, _ := x.View(0).Get("/x"); n.Stat().Mtime < ZxidCounter(z)>>timeShift {
			t.Fatalf("/x after commit: %+v", n.Stat())
		}
		checkInvariants(t, root)
	}
}

// TestTxnLegacyPrepared: a prepared record written before reservations (version 1, no floor)
// blocks every batch, as it did, and a repeated prepare answers the floor it answered then.
func TestTxnLegacyPrepared(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	s.Apply(batch(1, 1, 1000, opCreate("/a", nil, 0)))
	body := topCreate(5, RoleParent, "/x")
	p := &preparedTxn{body: body.AppendTo(nil), time: 1000}
	rec := appendPrepared(nil, p)
	// version 1: no floor field
	old := append([]byte{preparedVersionNoFloor}, rec[1:]...)
	i := len(appendBytes([]byte{0}, p.body)) + 3 // version, body, session, minZxid, time (one byte each here)
	old = append(old[:i:i], old[i+1:]...)
	q, err := decodePrepared(old)
	if err != nil || q.floor != 0 || len(q.locks) != 2 {
		t.Fatalf("decode: %+v %v", q, err)
	}
	s.prepared = q
	if r, _ := s.Apply(batch(1, 2, 1000, opSet("/a", nil, -1))); r.Status != BatchBlocked {
		t.Fatalf("legacy prepared: %+v", r)
	}
	rep, _, _ := txnReply(t, s, ctl(1, 1000, prepareOp(body)))
	if rep.Outcome != TxnPrepared || rep.Floor != ZxidCounter(s.lastZxid)+1 {
		t.Fatalf("repeat: %+v", rep)
	}
}
