package shard

import (
	"bytes"
	"testing"

	"github.com/corral/corral/wire"
)

// TestCutBlocksEverything: a prepared cut (format level 6, LevelCut) blocks every data batch, even one
// far below the reserved floor on a znode nobody locked; other transactions meet it busy; a
// commit of it is refused and leaves it held; the view shows it; an abort releases the shard,
// and the blocked batch then applies. The prepare round-trips through its encoding (version 4),
// and survives a restart (the store's prepared record).
func TestCutBlocksEverything(t *testing.T) {
	cut := TxnPrepare{ID: 77, Anchor: 1, Deadline: 9_999, Cut: true}
	got, err := DecodeTxnPrepare(cut.AppendTo(nil))
	if err != nil || !got.Cut || got.Group || got.Move != nil || got.ID != 77 || len(got.Multi.Ops) != 0 {
		t.Fatalf("decode: %+v, %v", got, err)
	}
	if enc := cut.AppendTo(nil); enc[0] != txnPrepareCutV6 {
		t.Fatalf("version %d", enc[0])
	}
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	s.track = true
	s.Apply(batch(1, 1, 1000, opCreate("/a", nil, 0)))
	if rep, _, _ := txnReply(t, s, ctl(1, 1000, prepareOp(cut))); rep.Outcome != TxnPrepared {
		t.Fatalf("prepare: %+v", rep)
	}
	v := s.View(0)
	if !v.PreparedCut(77) || v.PreparedCut(78) {
		t.Fatal("the view does not show the cut")
	}
	before := s.AppendCanonical(nil)
	for _, b := range []*Batch{
		batch(1, 2, 1000, opSet("/a", []byte("x"), -1)),
		batch(2, 1, 1000, opCreate("/elsewhere", nil, 0)),
	} {
		if res, _ := s.Apply(b); res.Status != BatchBlocked {
			t.Fatalf("batch while the cut is held: %+v", res)
		}
	}
	if rep, _, _ := txnReply(t, s, ctl(2, 1000, prepareOp(topCreate(6, RoleParent, "/y")))); rep.Outcome != TxnBusy {
		t.Fatalf("another prepare: %+v", rep)
	}
	if rep, _, _ := txnReply(t, s, ctl(3, 1000, commitOp(77, 0x7fff_ffff_ff01, 1000))); rep.Outcome == TxnCommitted {
		t.Fatalf("a cut committed: %+v", rep)
	}
	if !s.View(0).PreparedCut(77) {
		t.Fatal("the refused commit let the cut go")
	}
	after := s.AppendCanonical(nil)
	// the busy prepare recorded nothing; the refused commit nothing: only seqs moved
	if len(after) < len(before) {
		t.Fatal("state shrank while the cut was held")
	}
	if rep, _, _ := txnReply(t, s, ctl(4, 1000, abortOp(77))); rep.Outcome != TxnAborted {
		t.Fatalf("abort: %+v", rep)
	}
	if res, _ := s.Apply(batch(1, 2, 1001, opSet("/a", []byte("x"), -1))); res.Status != BatchApplied || res.Results[0].Err != wire.ErrOK {
		t.Fatalf("after the abort: %+v", res)
	}
	// the prepared record keeps the cut flag across a reload
	p, err := decodePrepared(appendPrepared(nil, &preparedTxn{body: cut.AppendTo(nil), floor: 5}))
	if err != nil || !p.prep.Cut || !bytes.Equal(p.body, cut.AppendTo(nil)) {
		t.Fatalf("prepared record: %+v, %v", p, err)
	}
}
