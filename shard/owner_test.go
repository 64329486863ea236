package shard

import (
	"bytes"
	"testing"

	"github.com/corral/corral/wire"
)

func ownerOp(session int64, epoch uint64) Op {
	return Op{Code: OpSessionOwner, Session: session, Body: SessionOwnerBody(epoch)}
}

func epochOp(op Op, session int64, epoch uint64) Op {
	op.Session, op.Epoch = session, epoch
	return op
}

// TestSessionOwnerRefusesOlderEpochs is the invariant of owner.go: after OpSessionOwner(S, e)
// no write of S with an epoch below e applies (SESSIONMOVED, an error txn that consumes a zxid
// and changes nothing), writes with epoch e or above do, other sessions are not affected, the
// recorded epoch never goes down, and it goes with the session's close.
func TestSessionOwnerRefusesOlderEpochs(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	s.track = true
	// Server A (proposer 1) created session 7: epoch 1.
	res, _ := s.Apply(batch(1, 1, 1000, epochOp(opCreate("/a", []byte("0"), 0), 7, 1)))
	if res.Results[0].Err != wire.ErrOK {
		t.Fatalf("create: %v", res.Results[0].Err)
	}
	// Server B (proposer 2) took the session over with epoch 50 and recorded it.
	if res, _ := s.Apply(batch(2, 1, 1001, ownerOp(7, 50))); res.Results[0].Err != wire.ErrOK {
		t.Fatalf("owner: %v", res.Results[0].Err)
	}
	if _, ok := s.dirty.owners[7]; !ok || s.owners[7] != 50 {
		t.Fatalf("owner not recorded (or not marked for the store): %v", s.owners)
	}
	// B's write applies.
	if res, _ := s.Apply(batch(2, 2, 1002, epochOp(opSet("/a", []byte("b"), -1), 7, 50))); res.Results[0].Err != wire.ErrOK {
		t.Fatalf("new owner's write: %v", res.Results[0].Err)
	}
	// A's batch, proposed before the move and again now, is refused; so is an op without an
	// epoch (a connection from before format level 2).
	for i, op := range []Op{epochOp(opSet("/a", []byte("a"), -1), 7, 1), epochOp(opCreate("/late", nil, 0), 7, 0)} {
		before := s.lastZxid
		res, _ := s.Apply(batch(1, uint64(2+i), 1003, op))
		if r := res.Results[0]; r.Err != wire.ErrSessionMoved || r.Zxid <= before {
			t.Fatalf("stale write %d: %v zxid %x (last %x)", i, r.Err, r.Zxid, before)
		}
	}
	if n, _ := s.View(1).Get("/a"); string(n.Data()) != "b" {
		t.Fatalf("a refused write changed /a: %q", n.Data())
	}
	if _, ok := s.View(1).Get("/late"); ok {
		t.Fatal("a refused create made /late")
	}
	// Another session is not affected.
	if res, _ := s.Apply(batch(1, 4, 1004, epochOp(opSet("/a", []byte("c"), -1), 8, 1))); res.Results[0].Err != wire.ErrOK {
		t.Fatalf("other session: %v", res.Results[0].Err)
	}
	// A lower record (a slower take-over's round arriving late) does not lower the epoch.
	s.Apply(batch(3, 1, 1005, ownerOp(7, 40)))
	if s.owners[7] != 50 {
		t.Fatalf("epoch went down to %d", s.owners[7])
	}
	// A prepare from the old owner fails; from the new owner it prepares.
	stale := prepareOp(topCreate(5, RoleFull, "/x"))
	stale.Session, stale.Epoch = 7, 1
	if rep, _, _ := txnReply(t, s, ctl(1, 1006, stale)); rep.Outcome != TxnFailed || rep.FailErr != wire.ErrSessionMoved {
		t.Fatalf("stale prepare: %+v", rep)
	}
	fresh := prepareOp(topCreate(6, RoleFull, "/y"))
	fresh.Session, fresh.Epoch = 7, 50
	if rep, _, _ := txnReply(t, s, ctl(2, 1007, fresh)); rep.Outcome != TxnPrepared {
		t.Fatalf("new owner's prepare: %+v", rep)
	}
	// While it is prepared, a new owner record waits (as a close does).
	if res, _ := s.Apply(batch(4, 1, 1008, ownerOp(7, 60))); res.Status != BatchBlocked {
		t.Fatalf("owner record while prepared: %v", res.Status)
	}
	txnReply(t, s, ctl(3, 1009, abortOp(6)))
	// The close drops the record; a record arriving after the close is refused and not kept.
	s.Apply(batch(2, 3, 1010, Op{Code: wire.OpCloseSession, Session: 7}))
	if _, ok := s.owners[7]; ok {
		t.Fatal("the close kept the owner record")
	}
	if res, _ := s.Apply(batch(4, 1, 1011, ownerOp(7, 70))); res.Results[0].Err != wire.ErrSessionExpired {
		t.Fatalf("owner record of a closed session: %v", res.Results[0].Err)
	}
	if len(s.owners) != 0 {
		t.Fatalf("owners after close: %v", s.owners)
	}
	// A malformed record.
	if res, _ := s.Apply(batch(4, 2, 1012, Op{Code: OpSessionOwner, Session: 9, Body: []byte{0}})); res.Results[0].Err != wire.ErrMarshallingError {
		t.Fatalf("epoch 0: %v", res.Results[0].Err)
	}
}

// TestStaleWriteNotSentBack: a stale write to a subtree that moved away is refused on the
// shard it reached, not sent back to the destination (which may hold no record of the epoch).
func TestStaleWriteNotSentBack(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	s.Apply(batch(1, 1, 1000, opCreate("/m", nil, 0)))
	s.setRoute("/m", route{to: 9, zxid: s.lastZxid, time: 1000})
	s.Apply(batch(2, 1, 1001, ownerOp(7, 50)))
	res, _ := s.Apply(batch(1, 2, 1002, epochOp(opSet("/m", []byte("x"), -1), 7, 1)))
	if res.Results[0].Err != wire.ErrSessionMoved {
		t.Fatalf("stale write to a moved subtree: %v", res.Results[0].Err)
	}
	res, _ = s.Apply(batch(2, 2, 1003, epochOp(opSet("/m", []byte("x"), -1), 7, 50)))
	if res.Results[0].Err != ErrMoved {
		t.Fatalf("current write to a moved subtree: %v", res.Results[0].Err)
	}
}

// TestBatchEpochEncoding: ops keep their epochs through the codec, and a batch with none
// encodes exactly as before the Epochs flag (what a server below format level 2 reads).
func TestBatchEpochEncoding(t *testing.T) {
	b := batch(3, 4, 5, epochOp(opSet("/a", nil, -1), 7, 1<<40), opCreate("/b", nil, 0))
	got, err := DecodeBatch(b.AppendTo(nil))
	if err != nil || got.Ops[0].Epoch != 1<<40 || got.Ops[1].Epoch != 0 {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	plain := batch(3, 4, 5, epochOp(opSet("/a", nil, -1), 7, 0))
	enc := plain.AppendTo(nil)
	if flags := enc[4]; flags != 0 {
		t.Fatalf("flags byte %#x of a batch without epochs", flags)
	}
	withEpoch := batch(3, 4, 5, epochOp(opSet("/a", nil, -1), 7, 3)).AppendTo(nil)
	if withEpoch[4] != batchFlagEpochs || bytes.Equal(enc, withEpoch) {
		t.Fatalf("flags byte %#x of a batch with epochs", withEpoch[4])
	}
}

// TestCloseIfOwner: a close carrying an ownership epoch closes the session (ephemerals gone,
// tombstone, record dropped) when the shard records no newer epoch, and changes nothing but
// fails with SESSIONMOVED where a newer owner's record is; a newer owner's record after the
// close is refused with SESSIONEXPIRED (docs/design.md §4, "The close in one round").
func TestCloseIfOwner(t *testing.T) {
	s := NewState(StateConfig{OwnsRoot: true})
	eph := epochOp(opCreate("/lock", nil, wire.FlagEphemeral), 7, 1)
	eph2 := epochOp(opCreate("/lock2", nil, wire.FlagEphemeral), 9, 1)
	s.Apply(batch(1, 1, 1000, eph, eph2))

	// Session 9 was taken over (epoch 50) and its record reached this shard before the older
	// connection's close: the close is refused and the ephemeral stays.
	s.Apply(batch(2, 1, 1001, ownerOp(9, 50)))
	before := s.lastZxid
	res, _ := s.Apply(batch(1, 2, 1002, Op{Code: wire.OpCloseSession, Session: 9, Body: CloseSessionIfOwner(1)}))
	if r := res.Results[0]; r.Err != wire.ErrSessionMoved || r.Zxid <= before {
		t.Fatalf("close by an older owner: %v zxid %x (last %x)", r.Err, r.Zxid, before)
	}
	if _, ok := s.View(1).Get("/lock2"); !ok {
		t.Fatal("a refused close deleted the ephemeral")
	}
	if s.tombstones.has(9) || s.owners[9] != 50 {
		t.Fatalf("a refused close changed the session's records: tombstone %v, epoch %d", s.tombstones.has(9), s.owners[9])
	}
	// The newer owner's own close applies.
	if res, _ := s.Apply(batch(2, 2, 1003, Op{Code: wire.OpCloseSession, Session: 9, Body: CloseSessionIfOwner(50)})); res.Results[0].Err != wire.ErrOK {
		t.Fatalf("close by the latest owner: %v", res.Results[0].Err)
	}
	if _, ok := s.View(1).Get("/lock2"); ok {
		t.Fatal("the latest owner's close left the ephemeral")
	}

	// Session 7, created with epoch 1 and never taken over: the close applies; a take-over's
	// record that arrives after it is refused, so that owner can write nowhere.
	if res, _ := s.Apply(batch(1, 3, 1004, Op{Code: wire.OpCloseSession, Session: 7, Body: CloseSessionIfOwner(1)})); res.Results[0].Err != wire.ErrOK {
		t.Fatalf("close: %v", res.Results[0].Err)
	}
	if _, ok := s.View(1).Get("/lock"); ok || !s.tombstones.has(7) {
		t.Fatalf("close: ephemeral left %v, tombstone %v", ok, s.tombstones.has(7))
	}
	if res, _ := s.Apply(batch(2, 3, 1005, ownerOp(7, 60))); res.Results[0].Err != wire.ErrSessionExpired {
		t.Fatalf("record after the close: %v", res.Results[0].Err)
	}
	if !bytes.Equal(CloseSessionIfOwner(60)[:1], []byte{closeIfOwnerMarker}) || isCloseFence(CloseSessionIfOwner(1)) {
		t.Fatal("a close-if-owner body is taken for a fence")
	}
}
