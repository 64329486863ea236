package router

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// applyControl applies one control op to st and returns its result.
func applyControl(t *testing.T, st *shard.State, seq uint64, op shard.Op) shard.OpResult {
	t.Helper()
	res, _ := st.Apply(&shard.Batch{Proposer: 7, Seq: seq, Time: 1_000 + int64(seq), Control: true, Ops: []shard.Op{op}})
	if res.Status != shard.BatchApplied || res.Results[0].Err != wire.ErrOK {
		t.Fatalf("control op %d: %+v", op.Code, res)
	}
	return res.Results[0]
}

func addShardOp(prev int, id uint64, tag uint8) shard.Op {
	a := shard.AddShard{Prev: prev, Shard: shard.AddedShard{ID: id, Tag: tag, Voters: map[uint64]string{1: "h:1"}}}
	return shard.Op{Code: shard.OpAddShard, Body: a.AppendTo(nil)}
}

// TestAddedShards: the router learns added shards from the root shard's views — proposers
// created before the handle is visible, the start asked for once per record, in order — keeps
// hashing top-level names over the first start's shards, and a route to a shard it has not
// learned of yet (the move's source applied before the root shard) gives a handle at once,
// whose tag the record fills in later.
func TestAddedShards(t *testing.T) {
	ids := []uint64{2, 3}
	r := New(ids, []uint8{1, 2}, PlaceHash, nil)
	var started []uint64
	var proposers atomic.Int32
	r.SetShardHooks(ShardHooks{
		Proposers: func(sh *Shard) {
			if r.Shard(sh.ID) != nil {
				t.Errorf("shard %d visible before its proposers exist", sh.ID)
			}
			proposers.Add(1)
		},
		Start: func(rec shard.AddedShard) { started = append(started, rec.ID) },
	})
	before := map[string]uint64{}
	for i := 0; i < 50; i++ {
		p := fmt.Sprintf("/n%d", i)
		before[p] = r.Lookup(p).ID
	}

	root := shard.NewState(shard.StateConfig{Tag: 1, OwnsRoot: true, Root: "/"})
	r.Applied(2, root.View(2), nil)
	applyControl(t, root, 1, addShardOp(0, 4, 3))
	r.Applied(2, root.View(2), nil)
	r.Applied(2, root.View(2), nil) // the same list again: nothing new
	if sh := r.Shard(4); sh == nil || sh.Tag() != 3 || len(r.Shards()) != 3 || r.Shards()[2] != sh {
		t.Fatalf("shard 4 not added: %v", r.Shards())
	}
	if fmt.Sprint(started) != "[4]" || proposers.Load() != 1 {
		t.Fatalf("started %v, proposers %d", started, proposers.Load())
	}
	for p, id := range before {
		if got := r.Lookup(p).ID; got != id {
			t.Fatalf("%s moved from shard %d to %d by adding a shard", p, id, got)
		}
	}
	if r.Shard(4).mounted.Load() {
		t.Fatal("an added shard serves nothing until a subtree moves onto it")
	}

	// Shard 3 moves /n1 to shard 5, which the root shard has not recorded here yet.
	src := shard.NewState(shard.StateConfig{Tag: 2})
	prep := shard.TxnPrepare{ID: 11, Anchor: 3, Deadline: 1 << 40, Move: &shard.MoveSpec{Path: "/n1", To: 5}}
	rep, err := shard.DecodeTxnReply(applyControl(t, src, 1, shard.Op{Code: shard.OpTxnPrepare, Body: prep.AppendTo(nil)}).Body)
	if err != nil || rep.Outcome != shard.TxnPrepared {
		t.Fatalf("prepare: %+v %v", rep, err)
	}
	commit := shard.TxnCommit{ID: 11, Zxid: rep.Floor<<8 | 2, Time: 2_000}
	applyControl(t, src, 2, shard.Op{Code: shard.OpTxnCommit, Body: commit.AppendTo(nil)})
	r.Applied(3, src.View(3), nil)
	sh, z := r.Route("/n1/x")
	if sh == nil || sh.ID != 5 || sh.Tag() != 0 || z != commit.Zxid || !sh.mounted.Load() {
		t.Fatalf("route to a shard not learned yet: %+v %x", sh, z)
	}
	if r.Shard(4).mounted.Load() {
		t.Fatal("shard 4 counted as serving after the mount table changed")
	}
	if proposers.Load() != 2 || fmt.Sprint(started) != "[4]" {
		t.Fatalf("the handle needs proposers and no start: proposers %d, started %v", proposers.Load(), started)
	}
	applyControl(t, root, 2, addShardOp(1, 5, 4))
	r.Applied(2, root.View(2), nil)
	if r.Shard(5) != sh || sh.Tag() != 4 || fmt.Sprint(started) != "[4 5]" || proposers.Load() != 2 {
		t.Fatalf("record after the route: tag %d, started %v, proposers %d", sh.Tag(), started, proposers.Load())
	}
}

// TestShardSetConcurrentReads: readers (Lookup, Shards, Shard, LockAll) run while shards are
// added; run with -race. LockAll locks in id order and unlocks what it locked.
func TestShardSetConcurrentReads(t *testing.T) {
	r := New([]uint64{2, 3}, []uint8{1, 2}, PlaceHash, nil)
	root := shard.NewState(shard.StateConfig{Tag: 1, OwnsRoot: true, Root: "/"})
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if sh := r.Lookup(fmt.Sprintf("/p%d/x", i%100)); sh == nil || sh.ID > 3 {
					t.Errorf("lookup landed on %v", sh)
					return
				}
				all := r.Shards()
				for j := 1; j < len(all); j++ {
					if all[j-1].ID >= all[j].ID {
						t.Errorf("Shards not in id order")
						return
					}
				}
				_ = r.Shard(uint64(2 + i%8))
				unlock := r.LockAll()
				unlock()
			}
		}()
	}
	for i := 0; i < 20; i++ {
		applyControl(t, root, uint64(i+1), addShardOp(i, uint64(4+i), uint8(3+i)))
		r.Applied(2, root.View(2), nil)
	}
	stop.Store(true)
	wg.Wait()
	if n := len(r.Shards()); n != 22 {
		t.Fatalf("%d shards, want 22", n)
	}
	// Every registration lock was released: a writer can take each one.
	for _, sh := range r.Shards() {
		sh.regMu.Lock()
		sh.regMu.Unlock()
	}
}
