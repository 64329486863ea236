package shard

import (
	"testing"

	"github.com/corral/corral/wire"
)

// TestTapsAnswerInOrder drives Taps as Machine.Update does (BeginUpdate, Apply, PublishedView)
// and checks each way a tap is answered: between ops when asked before the apply, at the
// Update's publish when asked during it, with the last published view when asked after, nil
// when its batch settles unapplied, and false for a batch that is not registered.
func TestTapsAnswerInOrder(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true})
	taps := NewTaps()
	s.taps, s.tapShard = taps, 7
	data := func(v *View, path string) string {
		t.Helper()
		if v == nil {
			return "<nil>"
		}
		errc, resp := v.Read(wire.OpGetData, &wire.GetDataRequest{Path: path}, nil)
		if errc != wire.ErrOK {
			return errc.String()
		}
		return string(resp.(*wire.GetDataResponse).Data)
	}
	got := map[string]*View{}
	tap := func(name string, p, seq uint64, i int) bool {
		return taps.Tap(p, seq, i, func(v *View) { got[name] = v })
	}

	// Batch 1 of proposer 9: create /a=1, set /a=2, set /a=3. Taps after op 0 and op 1.
	taps.Register(9, 1)
	if !tap("op0", 9, 1, 0) || !tap("op1", 9, 1, 1) || !tap("op1b", 9, 1, 1) {
		t.Fatal("Tap on a registered batch returned false")
	}
	taps.BeginUpdate()
	s.Apply(batch(9, 1, 1000, opCreate("/a", []byte("1"), 0), opSet("/a", []byte("2"), -1), opSet("/a", []byte("3"), -1)))
	if d := data(got["op0"], "/a"); d != "1" {
		t.Fatalf("tap after op 0 saw /a=%s, want 1", d)
	}
	if d, d2 := data(got["op1"], "/a"), data(got["op1b"], "/a"); d != "2" || d2 != "2" {
		t.Fatalf("taps after op 1 saw /a=%s and %s, want 2", d, d2)
	}
	if got["op0"].shardID != 7 {
		t.Fatalf("tapped view of shard %d, want 7", got["op0"].shardID)
	}
	// Asked during the Update that applied the batch: answered at its publish.
	if !tap("during", 9, 1, 0) {
		t.Fatal("Tap during the Update returned false")
	}
	if got["during"] != nil {
		t.Fatal("a tap asked during the Update was answered before the publish")
	}
	// A later batch in the same Update, then the publish.
	taps.Register(9, 2)
	s.Apply(batch(9, 2, 1001, opSet("/a", []byte("4"), -1)))
	end := s.View(7)
	taps.PublishedView(end)
	if got["during"] != end {
		t.Fatal("a tap asked during the Update did not get the Update's published view")
	}
	// Asked after the publish: the last published view, at once.
	if !tap("after", 9, 1, 2) || got["after"] != end {
		t.Fatal("a tap asked after the publish did not get the last published view at once")
	}
	// A batch that settles without being applied here: its taps get nil.
	taps.Register(9, 3)
	if !tap("lost", 9, 3, 0) {
		t.Fatal("Tap on a registered batch returned false")
	}
	taps.Settled(9, 3)
	if v, ok := got["lost"]; !ok || v != nil {
		t.Fatalf("a tap of a batch settled unapplied got %v, want nil", v)
	}
	// Settled and unknown batches: false, fn never called.
	taps.Settled(9, 1)
	if tap("gone", 9, 1, 0) || tap("unknown", 5, 1, 0) {
		t.Fatal("Tap on a settled or unknown batch returned true")
	}
	if _, ok := got["gone"]; ok {
		t.Fatal("Tap called fn for a settled batch")
	}
	// A batch refused as out of order is not applied: its taps wait for the real apply.
	taps.Register(9, 5)
	if !tap("ooo", 9, 5, 0) {
		t.Fatal("Tap on a registered batch returned false")
	}
	taps.BeginUpdate()
	if res, _ := s.Apply(batch(9, 5, 1002, opSet("/a", []byte("5"), -1))); res.Status != BatchOutOfOrder {
		t.Fatalf("batch 5 after 2: status %v, want out of order", res.Status)
	}
	taps.PublishedView(s.View(7))
	if _, ok := got["ooo"]; ok {
		t.Fatal("a batch refused as out of order answered its tap")
	}
}
