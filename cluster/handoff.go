package cluster

import (
	"context"
	"maps"
	"slices"
	"time"
)

// handOffTimeout bounds the leadership hand-off of a graceful stop: a transfer takes a round
// trip or two; a shard that did not move by then elects a new leader after the stop, as after
// a crash.
const handOffTimeout = 3 * time.Second

// HandOffLeadership moves the leadership of every shard this server leads to another reachable
// voter, all shards at once, and returns when each has moved or handOffTimeout passed. It is
// the first step of a graceful stop (`corral server` on SIGTERM or SIGINT, before Close): the
// shards' writes then wait for one leader transfer instead of an election timeout, which is
// what a rolling restart costs the clients. The server keeps serving meanwhile: its
// proposals go to the new leaders. It returns the number of shards it moved.
func (s *Node) HandOffLeadership(ctx context.Context) int {
	s.handingOff.Store(true) // no leadership pulls from now on (follow.go)
	ctx, cancel := context.WithTimeout(ctx, handOffTimeout)
	defer cancel()
	voters := s.shardVoters()
	moved := forShards(slices.Sorted(maps.Keys(voters)), func(shardID uint64) bool {
		if !s.leads(shardID) {
			return false
		}
		s.leadershipAway(ctx, shardID, s.cfg.MyID, voters[shardID], "handed shard leadership over before stopping")
		return !s.leads(shardID)
	})
	n := 0
	for _, m := range moved {
		if m {
			n++
		}
	}
	return n
}
