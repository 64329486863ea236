package router

import (
	"context"

	"github.com/corral/corral/shard"
)

// OnEveryShard submits op to every data shard's proposer and returns once every shard applied
// it: nil when all succeeded, else the first error (a proposal error, or the op's own error
// code as a wire.Err). The rounds that end a closed session and record a new session owner
// (docs/design.md §4) use it.
func (r *Router) OnEveryShard(ctx context.Context, op shard.Op) error {
	return r.onShards(ctx, r.Shards(), op)
}

// OnShards is OnEveryShard on the listed data shards only (ids this router does not know are
// skipped).
func (r *Router) OnShards(ctx context.Context, ids []uint64, op shard.Op) error {
	shards := make([]*Shard, 0, len(ids))
	for _, id := range ids {
		if sh := r.Shard(id); sh != nil {
			shards = append(shards, sh)
		}
	}
	return r.onShards(ctx, shards, op)
}

func (r *Router) onShards(ctx context.Context, shards []*Shard, op shard.Op) error {
	errs := make(chan error, len(shards))
	for _, sh := range shards {
		sh.Proposer.Submit(&Request{Op: op, Done: func(res shard.OpResult, err error) {
			if err == nil && res.Err != 0 {
				err = res.Err
			}
			errs <- err
		}})
	}
	var first error
	for range shards {
		select {
		case err := <-errs:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}
