package router

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

type fakeSession struct {
	seen    int64
	writing []uint64
}

func (s *fakeSession) Seen() int64            { return s.seen }
func (s *fakeSession) Writing(shardID uint64) { s.writing = append(s.writing, shardID) }

// TestReroute: a write issued against a view from before a move of its subtree is sent back by
// the source (shard.ErrMoved with the move's zxid); rerouted, it is applied once, on the
// destination, with a zxid above the move's and above everything the session has seen, and the
// session is told the shard it wrote to. A write whose path became a mount point comes back as
// a transaction to run instead.
func TestReroute(t *testing.T) {
	rs := newReplicaSet(t, []uint64{2, 3})
	r := rs.r
	if res := rs.submit(t, 2, createOp("/app")); res.Err != wire.ErrOK {
		t.Fatal(res.Err)
	}
	if res := rs.submit(t, 2, createOp("/app/x")); res.Err != wire.ErrOK {
		t.Fatal(res.Err)
	}
	before := r.Shard(2).View().Zxid()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mv, err := r.Move(ctx, "/app", 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lookup("/app/x").ID != 3 {
		t.Fatalf("after the move /app/x routes to shard %d", r.Lookup("/app/x").ID)
	}

	set := &wire.SetDataRequest{Path: "/app/x", Data: []byte("new"), Version: -1}
	e := wire.NewEncoder(nil)
	set.Encode(e)
	op := shard.Op{Session: 1, Code: wire.OpSetData, Body: e.Bytes(), ViewZxid: before}
	back := rs.submit(t, 2, op)
	if back.Err != shard.ErrMoved || back.Zxid != mv.Zxid {
		t.Fatalf("the source answered %v (zxid %x), want ErrMoved with the move's zxid %x", back.Err, back.Zxid, mv.Zxid)
	}

	for _, seen := range []int64{0, mv.Zxid + 1<<30} {
		s := &fakeSession{seen: seen}
		out, err := r.Reroute(ctx, wire.OpSetData, set, op, 2, back.Zxid, s)
		if err != nil || out.Txn != nil || out.Result.Err != wire.ErrOK || out.Attempts != 1 {
			t.Fatalf("seen %x: rerouted %+v, %v: want one attempt that applies", seen, out, err)
		}
		if z := out.Result.Zxid; z <= mv.Zxid || z <= seen || shard.ZxidTag(z) != r.Shard(3).Tag() {
			t.Fatalf("seen %x: applied at %x, want a zxid of shard 3 above the move's %x and the session's", seen, z, mv.Zxid)
		}
		if len(s.writing) != 1 || s.writing[0] != 3 {
			t.Fatalf("the session was told it wrote to %v, want [3]", s.writing)
		}
	}
	n, ok := r.Shard(3).View().Get("/app/x")
	if !ok || !bytes.Equal(n.Data(), []byte("new")) || n.Stat().Version != 2 {
		t.Fatalf("on the destination /app/x is %v (found %v), want the data set twice", n, ok)
	}

	// The subtree moves back to shard 2 before a write shard 2 sent back is rerouted: the
	// write goes to shard 2 again, issued against a view that holds the move it was sent back
	// for, so shard 2 applies it instead of sending it back once more.
	mv2, err := r.Move(ctx, "/app", 2)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Reroute(ctx, wire.OpSetData, set, op, 2, back.Zxid, &fakeSession{})
	if err != nil || out.Result.Err != wire.ErrOK || out.Attempts != 1 || out.Result.Zxid <= mv2.Zxid || shard.ZxidTag(out.Result.Zxid) != r.Shard(2).Tag() {
		t.Fatalf("rerouted to the shard it came from: %+v, %v: want one attempt applied on shard 2 after the move back", out, err)
	}

	// Deleting the moved subtree's root is now a transaction between shards 2 and 3.
	del := &wire.DeleteRequest{Path: "/app", Version: -1}
	if _, err := r.Move(ctx, "/app", 3); err != nil {
		t.Fatal(err)
	}
	out, err = r.Reroute(ctx, wire.OpDelete, del, shard.Op{Session: 1, Code: wire.OpDelete}, 2, mv.Zxid, &fakeSession{})
	if err != nil || out.Txn == nil || out.Attempts != 0 || !out.Txn.Single || len(out.Txn.Roles) != 2 || out.MinZxid < mv.Zxid {
		t.Fatalf("rerouted delete of the mount point: %+v, %v: want a two-shard transaction, not proposed", out, err)
	}
}

// TestIssueFence: a write issued to a shard carries its view's zxid, and the shard counts as
// fenced for shard.FenceMs after it moved a subtree away (the destination does not).
func TestIssueFence(t *testing.T) {
	rs := newReplicaSet(t, []uint64{2, 3})
	r := rs.r
	rs.submit(t, 2, createOp("/app"))
	now := time.Now().UnixMilli()
	if z, fenced := r.Shard(2).Issue(now); fenced || z != r.Shard(2).View().Zxid() {
		t.Fatalf("before any move: view zxid %x, fenced %v", z, fenced)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mv, err := r.Move(ctx, "/app", 3)
	if err != nil {
		t.Fatal(err)
	}
	moved := shard.ZxidCounter(mv.Zxid) >> 12 // the move's clock time, ms
	if _, fenced := r.Shard(2).Issue(moved); !fenced {
		t.Fatal("the source is not fenced right after the move")
	}
	if _, fenced := r.Shard(2).Issue(moved + shard.FenceMs + 1); fenced {
		t.Fatalf("the source is still fenced %d ms after the move", shard.FenceMs+1)
	}
	if _, fenced := r.Shard(3).Issue(moved); fenced {
		t.Fatal("the destination is fenced")
	}
}
