package shard

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/corral/corral/wire"
)

func opAddShard(prev int, rec AddedShard) Op {
	a := AddShard{Prev: prev, Shard: rec}
	return Op{Code: OpAddShard, Body: a.AppendTo(nil)}
}

func control(proposer, seq uint64, time int64, ops ...Op) *Batch {
	b := batch(proposer, seq, time, ops...)
	b.Control = true
	return b
}

func addReply(t *testing.T, r OpResult) AddShardReply {
	t.Helper()
	if r.Err != wire.ErrOK {
		t.Fatalf("add-shard op failed: %v", r.Err)
	}
	rep, err := DecodeAddShardReply(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

var (
	rec6 = AddedShard{ID: 6, Tag: 5, Voters: map[uint64]string{1: "h1:1", 2: "h2:1", 3: "h3:1"}, NonVoting: map[uint64]string{5: "h5:1"}}
	rec7 = AddedShard{ID: 7, Tag: 6, Voters: map[uint64]string{1: "h1:1", 2: "h2:1"}}
)

// TestAddShardApply: the root shard records valid records in order, refuses conflicts and
// invalid ones without any change, consumes no zxid, and only in control batches.
func TestAddShardApply(t *testing.T) {
	s := NewState(StateConfig{Tag: 1, OwnsRoot: true, Root: "/"})
	res, _ := s.Apply(batch(1, 1, 1_000, opCreate("/a", nil, 0)))
	zxid := res.Results[0].Zxid
	v0 := s.View(2)

	steps := []struct {
		op   Op
		want AddShardReply
	}{
		0: {opAddShard(0, rec6), AddShardReply{AddShardAdded, 1}},
		1: {opAddShard(0, rec7), AddShardReply{AddShardConflict, 1}},                                          // another add came first
		2: {opAddShard(1, AddedShard{ID: 6, Tag: 9, Voters: rec7.Voters}), AddShardReply{AddShardRefused, 1}}, // id not above
		3: {opAddShard(1, AddedShard{ID: 8, Tag: 5, Voters: rec7.Voters}), AddShardReply{AddShardRefused, 1}}, // tag taken
		4: {opAddShard(1, AddedShard{ID: 8, Tag: 0, Voters: rec7.Voters}), AddShardReply{AddShardRefused, 1}}, // tag 0
		5: {opAddShard(1, AddedShard{ID: 8, Tag: 7}), AddShardReply{AddShardRefused, 1}},                      // no voters
		6: {opAddShard(1, rec7), AddShardReply{AddShardAdded, 2}},
	}
	for i, st := range steps {
		res, events := s.Apply(control(2, uint64(i+1), 1_000+int64(i), st.op))
		if res.Status != BatchApplied || len(events) != 0 {
			t.Fatalf("%d: status %v, events %v", i, res.Status, events)
		}
		if got := addReply(t, res.Results[0]); got != st.want {
			t.Fatalf("%d: reply %+v, want %+v", i, got, st.want)
		}
		if res.Results[0].Zxid != 0 || s.LastZxid() != zxid {
			t.Fatalf("%d: the op consumed a zxid", i)
		}
	}
	v := s.View(2)
	if got := v.AddedShards(); !reflect.DeepEqual(got, []AddedShard{rec6, rec7}) {
		t.Fatalf("added shards %+v", got)
	}
	if !v.AddedChanged(v0) || v.AddedChanged(v) || v0.AddedChanged(nil) || !v.AddedChanged(nil) {
		t.Fatal("AddedChanged")
	}
	if len(v0.AddedShards()) != 0 {
		t.Fatal("an earlier view changed: the list must be copied on write")
	}

	// Outside a control batch the op is UNIMPLEMENTED and changes nothing.
	res, _ = s.Apply(batch(1, 2, 2_000, opAddShard(2, AddedShard{ID: 9, Tag: 9, Voters: rec7.Voters})))
	if res.Results[0].Err != wire.ErrUnimplemented || len(s.View(2).AddedShards()) != 2 {
		t.Fatalf("add-shard in a client batch: %+v", res.Results[0])
	}
	// A shard that does not own the root refuses.
	o := NewState(StateConfig{Tag: 2})
	res, _ = o.Apply(control(2, 1, 1_000, opAddShard(0, rec6)))
	if got := addReply(t, res.Results[0]); got.Outcome != AddShardRefused || len(o.View(3).AddedShards()) != 0 {
		t.Fatalf("non-root shard: %+v", got)
	}
	// A malformed body is MARSHALLINGERROR.
	res, _ = s.Apply(control(2, 8, 3_000, Op{Code: OpAddShard, Body: []byte{1, 2}}))
	if res.Results[0].Err != wire.ErrMarshallingError {
		t.Fatalf("malformed: %+v", res.Results[0])
	}
}

// TestAddShardDeterministic: two replicas applying the same batches reach byte-identical
// states (the voter maps are encoded in id order, whatever the map order).
func TestAddShardDeterministic(t *testing.T) {
	var enc [][]byte
	for range 2 {
		s := NewState(StateConfig{Tag: 1, OwnsRoot: true, Root: "/"})
		s.Apply(control(2, 1, 1_000, opAddShard(0, rec6)))
		s.Apply(control(2, 2, 1_001, opAddShard(1, rec7)))
		enc = append(enc, s.AppendCanonical(nil))
	}
	if !bytes.Equal(enc[0], enc[1]) {
		t.Fatal("replicas diverge")
	}
	empty := NewState(StateConfig{Tag: 1, OwnsRoot: true, Root: "/"}).AppendCanonical(nil)
	if bytes.Equal(enc[0], empty) {
		t.Fatal("the canonical encoding ignores the added shards")
	}
}

func TestAddShardCodec(t *testing.T) {
	for i, a := range []AddShard{{Prev: 0, Shard: rec6}, {Prev: 3, Shard: rec7}} {
		got, err := DecodeAddShard(a.AppendTo(nil))
		if err != nil {
			t.Fatal(i, err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("%d: %+v != %+v", i, got, a)
		}
		// Every truncation fails cleanly.
		b := a.AppendTo(nil)
		for n := 0; n < len(b); n++ {
			if _, err := DecodeAddShard(b[:n]); err == nil {
				t.Fatalf("%d: truncated at %d decodes", i, n)
			}
		}
	}
	if _, err := DecodeAddShard(append((&AddShard{Shard: rec7}).AppendTo(nil), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	list := []AddedShard{rec6, rec7}
	got, err := decodeAddedList(appendAddedList(nil, list))
	if err != nil || len(got) != 2 || got[0].ID != 6 || got[1].Voters[2] != "h2:1" || got[0].NonVoting[5] != "h5:1" {
		t.Fatalf("list: %+v %v", got, err)
	}
	rep := AddShardReply{AddShardConflict, 4}
	if r, err := DecodeAddShardReply(rep.AppendTo(nil)); err != nil || r != rep {
		t.Fatalf("reply: %+v %v", r, err)
	}
}

// TestAddShardPersisted: the list survives a reload from the state's records (what a
// replica's store and snapshots keep, records.go), and the views carry it.
func TestAddShardPersisted(t *testing.T) {
	cfg := StateConfig{Tag: 5, OwnsRoot: true, Root: "/"}
	st := newStored(cfg)
	res, _ := st.s.Apply(control(2, 1, 1_000, opAddShard(0, rec6)))
	st.s.Apply(batch(9, 1, 1_001, opCreate("/x", nil, 0)))
	if got := addReply(t, res.Results[0]); got.Outcome != AddShardAdded {
		t.Fatalf("reply %+v", got)
	}
	if got := st.s.View(3).AddedShards(); len(got) != 1 || got[0].ID != 6 {
		t.Fatalf("view: %+v", got)
	}
	want := st.s.AppendCanonical(nil)
	r := st.reload(t, 2)
	if !bytes.Equal(r.AppendCanonical(nil), want) || !reflect.DeepEqual(r.View(3).AddedShards(), st.s.View(3).AddedShards()) {
		t.Fatalf("reload: added %+v", r.View(3).AddedShards())
	}
	// The next add on the reloaded state sees the persisted list.
	res, _ = r.Apply(control(2, 2, 2_000, opAddShard(1, rec7)))
	if got := addReply(t, res.Results[0]); got != (AddShardReply{AddShardAdded, 2}) {
		t.Fatalf("after reload: %+v", got)
	}
}

// FuzzDecodeAddShard: any input either fails with ErrMalformedTxn or round-trips.
func FuzzDecodeAddShard(f *testing.F) {
	f.Add((&AddShard{Prev: 0, Shard: rec6}).AppendTo(nil))
	f.Add((&AddShard{Prev: 2, Shard: rec7}).AppendTo(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAddShard(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedTxn) {
				t.Fatalf("error does not wrap ErrMalformedTxn: %v", err)
			}
			return
		}
		again, err := DecodeAddShard(a.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(again, a) {
			t.Fatalf("round trip: %+v -> %+v (%v)", a, again, err)
		}
	})
}
