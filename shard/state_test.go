package shard

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"

	"github.com/corral/corral/wire"
)

// randomOp returns a random write op over a small namespace, so that ops collide often.
func randomOp(r *rand.Rand) Op {
	paths := []string{"/a", "/a/b", "/a/b/c", "/b", "/b/x", "/c", "/a/", "/zookeeper", "/a/b/c/d", "bad"}
	p := paths[r.Intn(len(paths))]
	data := []byte(nil)
	if r.Intn(3) > 0 {
		data = []byte(fmt.Sprint(r.Intn(100)))
	}
	acls := [][]wire.ACL{wire.OpenACLUnsafe, wire.ReadACLUnsafe, wire.CreatorAllACL, nil,
		{{Perms: wire.PermAll, ID: wire.ID{Scheme: "digest", ID: "u:h"}}}}
	acl := acls[r.Intn(len(acls))]
	if r.Intn(4) > 0 {
		acl = wire.OpenACLUnsafe
	}
	session := int64(r.Intn(4))
	version := int32(r.Intn(3)) - 1
	var auth []wire.ID
	if r.Intn(4) == 0 {
		auth = []wire.ID{{Scheme: "digest", ID: "u:h"}}
	}
	op := Op{Session: session, Auth: auth, MinZxid: int64(r.Intn(3)) << 20}
	switch k := r.Intn(14); k {
	case 0, 1, 2:
		codes := []wire.OpCode{wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer}
		op.Code = codes[r.Intn(len(codes))]
		op.Body = encode(&wire.CreateRequest{Path: p, Data: data, ACL: acl, Flags: int32(r.Intn(8))})
	case 3:
		op.Code = wire.OpCreateTTL
		op.Body = encode(&wire.CreateTTLRequest{Path: p, Data: data, ACL: acl, Flags: int32(r.Intn(8)), TTL: int64(r.Intn(2000)) - 1})
	case 4, 5:
		op.Code = wire.OpDelete
		op.Body = encode(&wire.DeleteRequest{Path: p, Version: version})
	case 6:
		op.Code = wire.OpSetData
		op.Body = encode(&wire.SetDataRequest{Path: p, Data: data, Version: version})
	case 7:
		op.Code = wire.OpSetACL
		op.Body = encode(&wire.SetACLRequest{Path: p, ACL: acl, Version: version})
	case 8:
		op.Code = wire.OpCheck
		op.Body = encode(&wire.CheckVersionRequest{Path: p, Version: version})
	case 9, 10:
		var m wire.MultiRequest
		for i := r.Intn(4); i >= 0; i-- {
			sub := randomOp(r)
			mo := wire.MultiOp{Op: sub.Code}
			d := wire.NewDecoder(sub.Body)
			switch sub.Code {
			case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
				mo.Create = new(wire.CreateRequest)
				mo.Create.Decode(d)
			case wire.OpCreateTTL:
				mo.CreateTTL = new(wire.CreateTTLRequest)
				mo.CreateTTL.Decode(d)
			case wire.OpDelete:
				mo.Delete = new(wire.DeleteRequest)
				mo.Delete.Decode(d)
			case wire.OpSetData:
				mo.SetData = new(wire.SetDataRequest)
				mo.SetData.Decode(d)
			case wire.OpCheck:
				mo.Check = new(wire.CheckVersionRequest)
				mo.Check.Decode(d)
			default:
				continue
			}
			m.Ops = append(m.Ops, mo)
		}
		op.Code = wire.OpMulti
		op.Body = encode(&m)
	case 11:
		op.Code = wire.OpCloseSession
	case 12:
		op.Code = wire.OpDeleteContainer
		op.Body = encode(&wire.DeleteRequest{Path: p, Version: version})
	default:
		op.Code = wire.OpCode(r.Intn(30))
		op.Body = []byte{byte(r.Intn(256))}
	}
	return op
}

// model of the proposer table, to predict batch statuses.
type modelProposer struct {
	last    uint64
	time    int64
	results map[uint64][]OpResult
}

// TestDeterminism applies the same random batches (several proposers, retries, gaps, clock
// jumps past the idle limit) to two states and checks that results, events and the canonical
// state are identical after every batch, and that batch statuses follow the exactly-once rules.
func TestDeterminism(t *testing.T) {
	statuses := map[BatchStatus]int{}
	errs := map[wire.Err]int{}
	for seed := int64(1); seed <= 8; seed++ {
		r := rand.New(rand.NewSource(seed))
		cfg := StateConfig{OwnsRoot: true, ExtendedTypes: seed%2 == 0, Tag: uint8(seed)}
		s1, s2 := NewState(cfg), NewState(cfg)
		s1.track, s2.track = true, true
		model := map[uint64]*modelProposer{}
		now := int64(1_000_000)
		lastZxid := int64(0)
		for i := 0; i < 600; i++ {
			id := uint64(r.Intn(3) + 1)
			mp := model[id]
			var seq uint64
			switch k := r.Intn(20); {
			case mp == nil && k < 18:
				seq = 1
			case mp == nil:
				seq = uint64(r.Intn(5) + 2)
			case k < 15:
				seq = mp.last + 1
			case k < 18 && mp.last > 0:
				seq = uint64(r.Int63n(int64(mp.last))) + 1 // retry
			default:
				seq = mp.last + 2 + uint64(r.Intn(3)) // gap
			}
			switch r.Intn(50) {
			case 0:
				now += proposerIdle + 1 // forget the others
			case 1:
				now -= 5000 // a proposer with a slower clock
			default:
				now += int64(r.Intn(300))
			}
			var ops []Op
			for j := r.Intn(4); j >= 0; j-- {
				ops = append(ops, randomOp(r))
			}
			b := &Batch{Proposer: id, Seq: seq, Time: now, Ops: ops}
			// round-trip through the codec, as through the Raft log
			enc := b.AppendTo(nil)
			db, err := DecodeBatch(enc)
			if err != nil {
				t.Fatal(err)
			}
			res1, ev1 := s1.Apply(&db)
			res2, ev2 := s2.Apply(b)
			statuses[res1.Status]++
			if !reflect.DeepEqual(res1, res2) || !reflect.DeepEqual(ev1, ev2) {
				t.Fatalf("seed %d batch %d: states diverged:\n%+v\n%+v", seed, i, res1, res2)
			}
			if !bytes.Equal(s1.AppendCanonical(nil), s2.AppendCanonical(nil)) {
				t.Fatalf("seed %d batch %d: canonical states differ", seed, i)
			}
			// predicted status
			want := BatchOutOfOrder
			switch {
			case mp == nil && seq == 1:
				want = BatchApplied
			case mp == nil:
			case seq == mp.last+1:
				want = BatchApplied
			case seq <= mp.last && mp.last-seq < resultCache:
				want = BatchDuplicate
			case seq <= mp.last:
				want = BatchDuplicateUnknown
			}
			if res1.Status != want {
				t.Fatalf("seed %d batch %d: proposer %d seq %d: status %d, want %d", seed, i, id, seq, res1.Status, want)
			}
			switch want {
			case BatchApplied:
				if mp == nil {
					mp = &modelProposer{results: map[uint64][]OpResult{}}
					model[id] = mp
				}
				mp.last, mp.time = seq, now
				mp.results[seq] = res1.Results
				if len(res1.Results) != len(ops) {
					t.Fatalf("results: %d for %d ops", len(res1.Results), len(ops))
				}
				for _, o := range res1.Results {
					errs[o.Err]++
					if o.Zxid <= lastZxid || ZxidTag(o.Zxid) != cfg.Tag {
						t.Fatalf("zxid %x after %x (tag %d)", o.Zxid, lastZxid, cfg.Tag)
					}
					lastZxid = o.Zxid
				}
				if len(ops) > 0 && ZxidCounter(res1.Results[0].Zxid) < now<<timeShift {
					t.Fatalf("zxid below batch time")
				}
			case BatchDuplicate:
				if !reflect.DeepEqual(res1.Results, mp.results[seq]) {
					t.Fatalf("duplicate results differ from the original ones")
				}
			}
			if res1.Status != BatchApplied && len(ev1) != 0 {
				t.Fatalf("events from a batch that was not applied")
			}
			if s1.LastZxid() != lastZxid {
				t.Fatalf("LastZxid %x, want %x", s1.LastZxid(), lastZxid)
			}
			// forgetting, as the state does it
			for pid, p := range model {
				if pid != id && p.time < now-proposerIdle {
					delete(model, pid)
				}
			}
			checkInvariants(t, s1)
		}
	}
	for _, st := range []BatchStatus{BatchApplied, BatchDuplicate, BatchDuplicateUnknown, BatchOutOfOrder} {
		if statuses[st] == 0 {
			t.Errorf("no batch with status %d", st)
		}
	}
	t.Logf("statuses: %v", statuses)
	t.Logf("op results: %v", errs)
	if errs[wire.ErrOK] < 200 {
		t.Errorf("too few successful ops: %v", errs)
	}
}

// checkInvariants verifies the derived fields of the tree against the nodes themselves.
func checkInvariants(t *testing.T, s *State) {
	t.Helper()
	counts := map[string]int32{}
	ephem := 0
	expiring := 0
	s.tree.nodes.Ascend(func(n *node) bool {
		if n.key != "" {
			p, _ := splitParent(pathOf(n.key))
			pk, _ := parentKey(p)
			// A subtree's root may live apart from its parent: a top-level node on a shard
			// without "/", or the root of a subtree that moved here.
			_, r, routed := s.routes.covering(pathOf(n.key))
			mountRoot := pk == "" && !s.cfg.OwnsRoot || routed && r.to == 0 && s.routes.byPath[pathOf(n.key)] == r
			if s.tree.get(pk) == nil && !mountRoot {
				t.Fatalf("orphan %q", pathOf(n.key))
			}
			counts[pk]++
			if !validatePath(pathOf(n.key)) {
				t.Fatalf("invalid path stored: %q", pathOf(n.key))
			}
		}
		switch kindOf(n.owner) {
		case kindEphemeral:
			ephem++
		case kindContainer, kindTTL:
			expiring++
		}
		return true
	})
	s.tree.nodes.Ascend(func(n *node) bool {
		if counts[n.key] != n.numChildren {
			t.Fatalf("%q: numChildren %d, has %d", pathOf(n.key), n.numChildren, counts[n.key])
		}
		if kindOf(n.owner) == kindEphemeral && n.numChildren != 0 {
			t.Fatalf("ephemeral %q has children", pathOf(n.key))
		}
		return true
	})
	if s.tree.ephem.Len() != ephem || s.tree.expiring.Len() != expiring {
		t.Fatalf("indexes: %d/%d ephemerals, %d/%d expiring", s.tree.ephem.Len(), ephem, s.tree.expiring.Len(), expiring)
	}
}

func TestBatchStatuses(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	apply := func(b *Batch) BatchResult { r, _ := s.Apply(b); return r }

	if r := apply(batch(7, 2, 0, opCreate("/x", nil, 0))); r.Status != BatchOutOfOrder {
		t.Fatalf("unknown proposer with seq 2: %d", r.Status)
	}
	if s.LastZxid() != 0 {
		t.Fatalf("an out-of-order batch consumed a zxid")
	}
	r1 := apply(batch(7, 1, 0, opCreate("/x", nil, 0), opCreate("/x", nil, 0)))
	if r1.Status != BatchApplied || r1.Results[0].Err != wire.ErrOK || r1.Results[1].Err != wire.ErrNodeExists {
		t.Fatalf("first batch: %+v", r1)
	}
	if r := apply(batch(7, 3, 0, opCreate("/y", nil, 0))); r.Status != BatchOutOfOrder {
		t.Fatalf("gap: %d", r.Status)
	}
	if _, ok := s.View(0).Get("/y"); ok {
		t.Fatal("an out-of-order batch was applied")
	}
	if r := apply(batch(7, 1, 0, opCreate("/z", nil, 0))); r.Status != BatchDuplicate || !reflect.DeepEqual(r.Results, r1.Results) {
		t.Fatalf("duplicate: %+v", r)
	}
	if r := apply(batch(7, 0, 0)); r.Status != BatchOutOfOrder {
		t.Fatalf("seq 0: %d", r.Status)
	}
	for seq := uint64(2); seq <= 40; seq++ {
		if r := apply(batch(7, seq, 0, opSet("/x", []byte{byte(seq)}, -1))); r.Status != BatchApplied {
			t.Fatalf("seq %d: %d", seq, r.Status)
		}
	}
	// the last 32 batches (9..40) are cached
	if r := apply(batch(7, 9, 0)); r.Status != BatchDuplicate || r.Results[0].Err != wire.ErrOK {
		t.Fatalf("seq 9 (cached): %+v", r)
	}
	if r := apply(batch(7, 8, 0)); r.Status != BatchDuplicateUnknown || r.Results != nil {
		t.Fatalf("seq 8 (evicted): %+v", r)
	}
	// another proposer is independent
	if r := apply(batch(8, 1, 0, opCreate("/w", nil, 0))); r.Status != BatchApplied {
		t.Fatalf("proposer 8: %d", r.Status)
	}
}

func TestForgetIdleProposer(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	s.Apply(batch(1, 1, 1000))
	s.Apply(batch(2, 1, 1000))
	s.Apply(batch(1, 2, 1000+proposerIdle)) // exactly 24 h: kept
	if _, ok := s.proposers[2]; !ok {
		t.Fatal("proposer 2 forgotten too early")
	}
	s.Apply(batch(1, 3, 1001+proposerIdle))
	if _, ok := s.proposers[2]; ok {
		t.Fatal("idle proposer 2 not forgotten")
	}
	// it comes back with its next seq: unknown now, so out of order
	if r, _ := s.Apply(batch(2, 2, 1002+proposerIdle)); r.Status != BatchOutOfOrder {
		t.Fatalf("forgotten proposer: %d", r.Status)
	}
	// the current proposer is never forgotten by its own batch
	if r, _ := s.Apply(batch(1, 4, 10*proposerIdle)); r.Status != BatchApplied {
		t.Fatalf("proposer 1 after a long pause: %d", r.Status)
	}
}

func TestTombstoneExpiry(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	s.Apply(batch(1, 1, 1000, Op{Code: wire.OpCloseSession, Session: 5}))
	create := opCreate("/e", nil, wire.FlagEphemeral)
	create.Session = 5
	if r, _ := s.Apply(batch(1, 2, 2000, create)); r.Results[0].Err != wire.ErrSessionExpired {
		t.Fatalf("create after close: %v", r.Results[0].Err)
	}
	// after 24 h the tombstone is gone (sessions never come back; the session layer rejects
	// them long before)
	s.Apply(batch(1, 3, 1001+tombstoneTTL))
	if s.tombstones.has(5) {
		t.Fatal("tombstone not expired")
	}
}

func TestEventACLs(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	c := Op{Code: wire.OpCreate, Body: encode(&wire.CreateRequest{Path: "/r", ACL: wire.ReadACLUnsafe})}
	_, ev := s.Apply(batch(1, 1, 0, c))
	if len(ev) != 2 || !reflect.DeepEqual(ev[0].ACL, wire.ReadACLUnsafe) || !reflect.DeepEqual(ev[1].ACL, wire.OpenACLUnsafe) {
		t.Fatalf("events: %+v", ev)
	}
	if ev[0].Zxid != s.LastZxid() || ev[1].Path != "/" {
		t.Fatalf("events: %+v", ev)
	}
}

func TestACLInterning(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	s.Apply(batch(1, 1, 0, opCreate("/a", nil, 0), opCreate("/b", nil, 0)))
	a, _ := s.View(0).Get("/a")
	b, _ := s.View(0).Get("/b")
	if &a.ACL()[0] != &b.ACL()[0] {
		t.Fatal("identical ACLs are not shared")
	}
}

// TestViewIsolation checks that a view does not change while the state goes on applying, and
// that concurrent readers are safe (run with -race).
func TestViewIsolation(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	s.Apply(batch(1, 1, 0, opCreate("/a", []byte("1"), 0)))
	v := s.View(0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n, ok := v.Get("/a")
				if !ok || string(n.Data()) != "1" || len(v.Children("/")) != 2 || v.Zxid() != 1<<8 {
					t.Error("view changed under a reader")
					return
				}
			}
		}()
	}
	for seq := uint64(2); seq < 300; seq++ {
		s.Apply(batch(1, seq, 0, opSet("/a", []byte(fmt.Sprint(seq)), -1), opCreate(fmt.Sprintf("/n%d", seq), nil, 0)))
		if seq%50 == 0 {
			s.View(0) // new clones while old views are read
		}
	}
	close(stop)
	wg.Wait()
	if n, _ := s.View(0).Get("/a"); string(n.Data()) != "299" {
		t.Fatalf("live state: %q", n.Data())
	}
}

func TestKeys(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/zookeeper/quota"} {
		k, ok := keyOf(p)
		if !ok || pathOf(k) != p {
			t.Errorf("keyOf(%q) = %q, %v", p, k, ok)
		}
	}
	for _, p := range []string{"", "a", "/a\x01b"} {
		if _, ok := keyOf(p); ok {
			t.Errorf("keyOf(%q) accepted", p)
		}
	}
	s := NewState(StateConfig{OwnsRoot: true})
	s.Apply(batch(1, 1, 0, opCreate("/a", nil, 0), opCreate("/a/b", nil, 0), opCreate("/a/b/c", nil, 0),
		opCreate("/a/b!", nil, 0), opCreate("/a/ba", nil, 0), opCreate("/a!", nil, 0), opCreate("/a/ ", nil, 0)))
	v := s.View(0)
	if got := v.Children("/a"); !reflect.DeepEqual(got, []string{" ", "b", "b!", "ba"}) {
		t.Errorf("children: %q", got)
	}
	if got := v.CountDescendants("/a"); got != 5 {
		t.Errorf("descendants: %d", got)
	}
	if got := v.Children("/nothere"); got != nil {
		t.Errorf("children of a missing node: %q", got)
	}
}

func TestNextZxid(t *testing.T) {
	tests := []struct {
		last, time, min int64
		tag             uint8
		want            int64
	}{
		0: {0, 0, 0, 0, 1 << 8},
		1: {5<<8 | 3, 0, 0, 3, 6<<8 | 3},
		2: {5<<8 | 3, 1, 0, 3, 4096<<8 | 3},
		3: {5<<8 | 3, 0, 100<<8 | 9, 3, 101<<8 | 3},
		4: {5<<8 | 3, -7, -9, 3, 6<<8 | 3},
		5: {0, 1 << 50, 0, 1, 1<<8 | 1},       // time that would overflow: ignored
		6: {0, 0, maxCounter << 8, 0, 1 << 8}, // min at the top: +1 would leave the counter range
		7: {0, 0, (maxCounter - 1) << 8, 0, maxCounter << 8},
	}
	for i, tt := range tests {
		if got := nextZxid(tt.last, tt.tag, tt.time, tt.min); got != tt.want {
			t.Errorf("%d: nextZxid = %x, want %x", i, got, tt.want)
		}
	}
}

// TestSessionFence: in a SessionFence batch every write of a session the shard holds a
// tombstone of fails with SESSIONEXPIRED (and consumes its zxid, as an error txn); a batch
// without the flag (an older server's log) refuses only ephemeral creates, as before. The fence
// round of a close records the tombstone and deletes nothing; the second round deletes.
func TestSessionFence(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	eph := opCreate("/lock", nil, wire.FlagEphemeral)
	eph.Session = 7
	s.Apply(batch(1, 1, 1000, eph, opCreate("/data", nil, 0)))
	fence := Op{Code: wire.OpCloseSession, Session: 7, Body: CloseSessionFence()}
	fenceBatch := batch(1, 2, 1001, fence)
	fenceBatch.SessionFence = true
	if r, _ := s.Apply(fenceBatch); r.Results[0].Err != wire.ErrOK {
		t.Fatalf("fence: %v", r.Results[0].Err)
	}
	if _, ok := s.View(1).Get("/lock"); !ok {
		t.Fatal("the fence round deleted the ephemeral")
	}
	set := opSet("/data", []byte("late"), -1)
	set.Session = 7
	b := batch(1, 3, 1002, set)
	b.SessionFence = true
	before := s.lastZxid
	r, _ := s.Apply(b)
	if r.Results[0].Err != wire.ErrSessionExpired || r.Results[0].Zxid <= before {
		t.Fatalf("write of a closed session: %v zxid %d (before %d)", r.Results[0].Err, r.Results[0].Zxid, before)
	}
	if n, ok := s.View(1).Get("/data"); !ok || len(n.Data()) != 0 {
		t.Fatal("the refused write changed the node")
	}
	// The same write in a batch from before the flag applies, as it did then.
	old := batch(1, 4, 1003, set)
	if r, _ := s.Apply(old); r.Results[0].Err != wire.ErrOK {
		t.Fatalf("unfenced batch: %v", r.Results[0].Err)
	}
	// Other sessions are not affected.
	other := opSet("/data", []byte("x"), -1)
	other.Session = 8
	b = batch(1, 5, 1004, other)
	b.SessionFence = true
	if r, _ := s.Apply(b); r.Results[0].Err != wire.ErrOK {
		t.Fatalf("another session's write: %v", r.Results[0].Err)
	}
	b = batch(1, 6, 1005, Op{Code: wire.OpCloseSession, Session: 7})
	b.SessionFence = true
	s.Apply(b)
	if _, ok := s.View(1).Get("/lock"); ok {
		t.Fatal("the close round left the ephemeral")
	}
}
