package router

import (
	"context"
	"sync"
	"testing"

	"github.com/corral/corral/shard"
)

// replicaSet is one server's replicas of a router's shards, in process, without Raft: each
// shard's data and control proposers apply their batches to a shard.State in proposal order
// and publish the view through Router.Applied, as a replica's apply loop does. Catch-up rounds
// have nothing to wait for: every batch is applied when it is proposed.
type replicaSet struct {
	r  *Router
	mu sync.Mutex // one apply at a time, over all shards
	st map[uint64]*shard.State
}

// newReplicaSet starts a router over shards ids (the first is the root shard, serving "/" under
// PlaceSingle) with in-process replicas.
func newReplicaSet(t *testing.T, ids []uint64) *replicaSet {
	tags := make([]uint8, len(ids))
	for i := range ids {
		tags[i] = uint8(i + 1)
	}
	rs := &replicaSet{r: New(ids, tags, PlaceSingle, nil), st: map[uint64]*shard.State{}}
	rs.r.SetMounts([]Mount{{Path: "/", ShardID: ids[0]}})
	rs.r.SetSync(func(context.Context, uint64) error { return nil })
	for i, id := range ids {
		rs.st[id] = shard.NewState(shard.StateConfig{Tag: tags[i], OwnsRoot: i == 0, Root: "/"})
		sh := rs.r.Shard(id)
		sh.Proposer = NewProposer(id, rs.propose(id), ProposerOptions{})
		sh.Control = NewProposer(id, rs.propose(id), ProposerOptions{Control: true})
		t.Cleanup(sh.Proposer.Stop)
		t.Cleanup(sh.Control.Stop)
		rs.r.Applied(id, rs.st[id].View(id), nil)
	}
	return rs
}

func (rs *replicaSet) propose(id uint64) ProposeFunc {
	return func(_ context.Context, cmd []byte) (func() ([]byte, error), error) {
		b, err := shard.DecodeBatch(cmd)
		if err != nil {
			return nil, err
		}
		rs.mu.Lock()
		res, events := rs.st[id].Apply(&b)
		rs.r.Applied(id, rs.st[id].View(id), events)
		rs.mu.Unlock()
		out := res.AppendTo(nil)
		return func() ([]byte, error) { return out, nil }, nil
	}
}

// submit proposes op to shard id and waits for its result.
func (rs *replicaSet) submit(t *testing.T, id uint64, op shard.Op) shard.OpResult {
	t.Helper()
	type result struct {
		res shard.OpResult
		err error
	}
	got := make(chan result, 1)
	rs.r.Shard(id).Proposer.Submit(&Request{Op: op, Done: func(res shard.OpResult, err error) { got <- result{res, err} }})
	r := <-got
	if r.err != nil {
		t.Fatalf("shard %d: %v", id, r.err)
	}
	return r.res
}
