package shard

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"

	"github.com/corral/corral/wire"
)

// TestTxnGroupOpsFailAlone: in a group prepare (TxnPrepare.Group) an op that fails gets its
// error result and changes nothing, the others commit, op i at the commit's zxid plus i
// (GroupZxid), a later op sees an earlier one's effect, and the shard's next write comes after
// the group's last zxid; the same ops without Group fail as a whole at prepare.
func TestTxnGroupOpsFailAlone(t *testing.T) {
	ops := multiOf(
		mCreate("/a", []byte("1"), 0),
		mCreate("/a", []byte("2"), 0), // NODEEXISTS: /a created by op 0
		mCreate("/a/b", nil, 0),       // sees op 0's /a
		mSet("/nope", nil, -1),        // NONODE
		mSet("/a", []byte("3"), 0),    // version 0 of op 0's /a
		mDelete("/a/b", 5),            // BADVERSION
	)
	roles := []TxnRole{RoleFull, RoleFull, RoleFull, RoleFull, RoleFull, RoleFull}

	plain := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	rep, _, _ := txnReply(t, plain, ctl(1, 1000, prepareOp(TxnPrepare{ID: 3, Anchor: 1, Deadline: 9_999, Multi: ops, Roles: roles})))
	if rep.Outcome != TxnFailed || rep.FailIndex != 1 || rep.FailErr != wire.ErrNodeExists {
		t.Fatalf("plain prepare: %+v", rep)
	}

	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	p := TxnPrepare{ID: 5, Anchor: 1, Deadline: 9_999, Multi: ops, Roles: roles, Group: true}
	rep, _, _ = txnReply(t, s, ctl(1, 1000, prepareOp(p)))
	if rep.Outcome != TxnPrepared {
		t.Fatalf("group prepare: %+v", rep)
	}
	if _, ok := s.View(0).Get("/a"); ok {
		t.Fatal("a prepared group changed the tree")
	}
	z := rep.Floor<<8 | 1
	rep, _, _ = txnReply(t, s, ctl(2, 1000, commitOp(5, z, 1000)))
	if rep.Outcome != TxnCommitted || len(rep.Results) != len(ops.Ops) {
		t.Fatalf("group commit: %+v", rep)
	}
	wantErr := []wire.Err{wire.ErrOK, wire.ErrNodeExists, wire.ErrOK, wire.ErrNoNode, wire.ErrOK, wire.ErrBadVersion}
	for i, r := range rep.Results {
		if r.Err != wantErr[i] || (wantErr[i] != wire.ErrOK) != (r.Op == wire.OpError) {
			t.Fatalf("result %d: %+v, want error %d", i, r, wantErr[i])
		}
	}
	if rep.Results[2].Path != "/a/b" || rep.Results[2].Stat.Czxid != GroupZxid(z, 2) ||
		rep.Results[4].Stat.Version != 1 || rep.Results[4].Stat.Mzxid != GroupZxid(z, 4) {
		t.Fatalf("results: %+v", rep.Results)
	}
	v := s.View(0)
	if n, ok := v.Get("/a"); !ok || string(n.Data()) != "3" || n.Stat().Czxid != z || n.Stat().Version != 1 {
		t.Fatalf("/a: %+v %v", n, ok)
	}
	if _, ok := v.Get("/a/b"); !ok {
		t.Fatal("/a/b missing: the failed delete removed it or the create did not apply")
	}
	if v.Zxid() != GroupZxid(z, 5) {
		t.Fatalf("view zxid %x, want the last op's %x", v.Zxid(), GroupZxid(z, 5))
	}
	if n, _ := v.Get("/"); n.Stat().Pzxid != z {
		t.Fatalf("/ pzxid %x, want op 0's %x", n.Stat().Pzxid, z)
	}
	// The next write's zxid is above the group's last.
	res, _ := s.Apply(batch(1, 1, 1000, opCreate("/c", nil, 0)))
	if res.Results[0].Err != wire.ErrOK || res.Results[0].Zxid <= GroupZxid(z, 5) {
		t.Fatalf("next write: %+v", res.Results[0])
	}
}

// TestTxnGroupPrepareEncoding: Group survives the encoding (version 3), and a move or plain
// prepare keeps its own version.
func TestTxnGroupPrepareEncoding(t *testing.T) {
	for _, p := range []TxnPrepare{
		{ID: 1, Anchor: 2, Deadline: 3, Multi: multiOf(mCreate("/x", nil, 0)), Roles: []TxnRole{RoleFull}, Group: true},
		{ID: 1, Anchor: 2, Deadline: 3, Multi: multiOf(mCreate("/x", nil, 0)), Roles: []TxnRole{RoleFull}},
	} {
		b := p.AppendTo(nil)
		want := byte(txnCodecVersion)
		if p.Group {
			want = txnPrepareGroupV3
		}
		if b[0] != want {
			t.Fatalf("version byte %d, want %d", b[0], want)
		}
		got, err := DecodeTxnPrepare(b)
		if err != nil || got.Group != p.Group || got.ID != p.ID || len(got.Multi.Ops) != 1 {
			t.Fatalf("decoded %+v, %v", got, err)
		}
	}
}

// TestTxnGroupProbe: a probe (TxnResolve.Probe) reports a prepared group with its floor and
// leaves it prepared, reports a decision as it is, and fences a transaction the shard never saw:
// recorded aborted, so that its prepare, arriving later, fails.
func TestTxnGroupProbe(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	p := TxnPrepare{ID: 5, Anchor: 1, Deadline: 9_999, Multi: multiOf(mCreate("/a", nil, 0)), Roles: []TxnRole{RoleFull},
		Group: true, Parts: []uint64{1, 2}}
	rep, _, _ := txnReply(t, s, ctl(1, 1000, prepareOp(p)))
	if rep.Outcome != TxnPrepared {
		t.Fatalf("prepare: %+v", rep)
	}
	floor := rep.Floor
	probe := func(seq uint64, id uint64) TxnReply {
		r, _, _ := txnReply(t, s, ctl(seq, 1000, Op{Code: OpTxnResolve, Body: (&TxnResolve{ID: id, Probe: true}).AppendTo(nil)}))
		return r
	}
	if r := probe(2, 5); r.Outcome != TxnPrepared || r.Floor != floor {
		t.Fatalf("probe of the prepared group: %+v, want prepared at floor %d", r, floor)
	}
	if info, ok := s.View(0).Prepared(); !ok || info.ID != 5 || !info.Group || len(info.Parts) != 2 {
		t.Fatalf("after the probe: %+v %v", info, ok)
	}
	// A transaction this shard never saw is fenced.
	if r := probe(3, 9); r.Outcome != TxnAborted {
		t.Fatalf("probe of an unknown transaction: %+v", r)
	}
	z := floor<<8 | 1
	if r, _, _ := txnReply(t, s, ctl(4, 1000, commitOp(5, z, 1000))); r.Outcome != TxnCommitted {
		t.Fatalf("commit: %+v", r)
	}
	if r := probe(5, 5); r.Outcome != TxnCommitted || r.Zxid != z {
		t.Fatalf("probe of the committed group: %+v", r)
	}
	late := TxnPrepare{ID: 9, Anchor: 1, Deadline: 9_999, Multi: multiOf(mCreate("/b", nil, 0)), Roles: []TxnRole{RoleFull},
		Group: true, Parts: []uint64{1, 2}}
	if r, _, _ := txnReply(t, s, ctl(6, 1000, prepareOp(late))); r.Outcome != TxnAborted {
		t.Fatalf("late prepare of a fenced transaction: %+v, want aborted", r)
	}
	if _, ok := s.View(0).Get("/b"); ok {
		t.Fatal("the fenced transaction's create applied")
	}
	// The encoding keeps the participants and the probe flag.
	got, err := DecodeTxnPrepare(late.AppendTo(nil))
	if err != nil || !got.Group || len(got.Parts) != 2 || got.Parts[1] != 2 {
		t.Fatalf("decoded prepare %+v, %v", got, err)
	}
	r, err := DecodeTxnResolve((&TxnResolve{ID: 7, Probe: true}).AppendTo(nil))
	if err != nil || !r.Probe || r.ID != 7 {
		t.Fatalf("decoded probe %+v, %v", r, err)
	}
	if r, err := DecodeTxnResolve((&TxnResolve{ID: 7}).AppendTo(nil)); err != nil || r.Probe {
		t.Fatalf("decoded resolve %+v, %v", r, err)
	}
}

// TestParticipantMultiEvaluatesAlike: a participant's prepare and commit of the multi
// ParticipantMulti returns (its own ops, placeholders for the others) reply and change the
// state exactly as the whole multi does, for random multis over a few paths with random roles,
// plain and group, including the ops the whole-request checks look at on every participant (a
// read op, a plain create with a TTL mode); and a participant holding one op of four carries
// that op's data only.
func TestParticipantMultiEvaluatesAlike(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	paths := []string{"/a", "/a/b", "/c", "/c/d", "/e"}
	randomOp := func() wire.MultiOp {
		p := paths[r.Intn(len(paths))]
		v := int32(r.Intn(3)) - 1
		switch r.Intn(12) {
		case 0, 1, 2:
			return mCreate(p, []byte("data"), int32(r.Intn(2)))
		case 3:
			return mCreate(p, nil, wire.FlagPersistentWithTTL) // MARSHALLINGERROR once reached
		case 4:
			return wire.MultiOp{Op: wire.OpCreateTTL, CreateTTL: &wire.CreateTTLRequest{Path: p, ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL, TTL: 100}}
		case 5, 6:
			return mSet(p, []byte("new"), v)
		case 7, 8:
			return mDelete(p, v)
		case 9, 10:
			return mCheck(p, v)
		default:
			return wire.MultiOp{Op: wire.OpGetData, GetData: &wire.GetDataRequest{Path: p}} // a read: the whole multi is malformed
		}
	}
	seed := func() *State {
		s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
		if res, _ := s.Apply(batch(1, 1, 1000, opCreate("/a", []byte("x"), 0), opCreate("/c", nil, 0), opCreate("/c/d", nil, 0))); res.Status != BatchApplied {
			t.Fatalf("seed: %+v", res)
		}
		return s
	}
	const undecoded = TxnOutcome(255) // the prepare itself failed (a mixed multi)
	outcomes := map[TxnOutcome]int{}
	for i := 0; i < 3000; i++ {
		n := 1 + r.Intn(6)
		ops := make([]wire.MultiOp, n)
		roles := make([]TxnRole, n)
		for j := range ops {
			ops[j] = randomOp()
			if r.Intn(2) == 0 {
				roles[j] = RoleFull
			}
		}
		whole := wire.MultiRequest{Ops: ops}
		part := ParticipantMulti(&whole, roles)
		group := r.Intn(2) == 0
		a, b := seed(), seed()
		id := uint64(10 + i)
		// apply runs one control op on both states and compares the raw results (a mixed
		// read and write multi does not decode: the op itself fails).
		apply := func(seq uint64, opA, opB Op) (TxnReply, bool) {
			resA, _ := a.Apply(ctl(seq, 2000, opA))
			resB, _ := b.Apply(ctl(seq, 2000, opB))
			if !reflect.DeepEqual(resA, resB) {
				t.Fatalf("case %d (group %v, roles %v, ops %+v): whole multi %+v, participant's %+v", i, group, roles, ops, resA, resB)
			}
			if resA.Status != BatchApplied || resA.Results[0].Err != wire.ErrOK {
				return TxnReply{}, false
			}
			rep, err := DecodeTxnReply(resA.Results[0].Body)
			if err != nil {
				t.Fatal(err)
			}
			return rep, true
		}
		rep, ok := apply(1, prepareOp(TxnPrepare{ID: id, Anchor: 1, Deadline: 9_999, Multi: whole, Roles: roles, Group: group}),
			prepareOp(TxnPrepare{ID: id, Anchor: 1, Deadline: 9_999, Multi: part, Roles: roles, Group: group}))
		if !ok {
			outcomes[undecoded]++
		} else {
			outcomes[rep.Outcome]++
		}
		if ok && rep.Outcome == TxnPrepared {
			c := commitOp(id, rep.Floor<<8|1, 2000)
			apply(2, c, c)
		}
		if !bytes.Equal(txnState(a), txnState(b)) {
			t.Fatalf("case %d (group %v, roles %v): states differ", i, group, roles)
		}
	}
	if outcomes[TxnPrepared] < 300 || outcomes[TxnFailed] < 300 || outcomes[undecoded] < 100 {
		t.Fatalf("outcomes %v: too few of a kind to compare", outcomes)
	}

	big := make([]byte, 1024)
	four := multiOf(mCreate("/w", big, 0), mCreate("/x", big, 0), mCreate("/y", big, 0), mCreate("/z", big, 0))
	mine := ParticipantMulti(&four, []TxnRole{RoleNone, RoleFull, RoleNone, RoleNone})
	if mine.Ops[1].Create != four.Ops[1].Create || mine.Ops[0].Op != wire.OpCheck {
		t.Fatalf("participant multi: %+v", mine.Ops)
	}
	p := TxnPrepare{ID: 1, Anchor: 1, Deadline: 9_999, Multi: mine, Roles: []TxnRole{RoleNone, RoleFull, RoleNone, RoleNone}, Group: true}
	if n := len(p.AppendTo(nil)); n > 1024+200 {
		t.Fatalf("a prepare holding one 1 KiB op of four is %d bytes", n)
	}
}
