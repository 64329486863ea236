package cluster

import (
	"context"
	"sync"
	"time"
)

// every runs fn every d until the server stops (s.ctx); the caller has added it to s.wg, which
// Close waits for. The background duties (leader balancing, container expiry, transaction
// recovery) run this way, one goroutine each.
func (s *Node) every(d time.Duration, fn func()) {
	defer s.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}

// leads reports whether this server currently leads the shard.
func (s *Node) leads(shardID uint64) bool {
	lid, _, ok, err := s.nh.GetLeaderID(shardID)
	return err == nil && ok && lid == s.cfg.MyID
}

// maxReadAge is the staleness bound of reads (server.Options.MaxReadAge): ZooKeeper's
// syncLimit × tickTime, the time after which a follower that has not heard from its leader
// drops its clients.
func (s *Node) maxReadAge() time.Duration {
	if s.cfg.SyncLimit <= 0 {
		return 5 * s.cfg.TickTime
	}
	return time.Duration(s.cfg.SyncLimit) * s.cfg.TickTime
}

// refreshReplicasOnce confirms with a catch-up round (a ReadIndex) that each local replica
// holds what its shard committed, for every replica not confirmed in half the read bound, so
// that reads find their replica fresh and take no round themselves. A replica cut off from
// its shard's quorum stays unconfirmed, and reads of it catch up or close (server/route.go).
func (s *Node) refreshReplicasOnce() {
	half := s.maxReadAge() / 2
	var wg sync.WaitGroup
	if time.Since(time.Unix(0, s.metaConfirmed.Load())) > half {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, half/2)
			defer cancel()
			s.confirmMeta(ctx)
		}()
	}
	for _, sh := range s.router.Shards() {
		if sh.Age() <= half {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, half/2)
			defer cancel()
			s.router.EnsureFresh(ctx, sh, half)
		}()
	}
	wg.Wait()
}

// confirmMeta runs a catch-up round (ReadIndex) on the meta shard and, if it completes, records
// when it began.
func (s *Node) confirmMeta(ctx context.Context) {
	began := time.Now()
	if s.Sync(ctx, MetaShardID) == nil {
		s.metaConfirmed.Store(began.UnixNano())
	}
}

// readOnly reports whether the server is in read-only mode (readonlymode.enabled,
// server/readonly.go): it has not heard the session table's quorum (a completed catch-up round
// on the meta shard) for the read bound, syncLimit × tickTime — ZooKeeper's follower gives up
// on its leader after the same time. Without the key it is never read-only.
func (s *Node) readOnly() bool { return s.cfg.ReadOnlyMode && s.metaUnconfirmed() }

// metaUnconfirmed reports whether the local replica of the meta shard (the session table) has
// not completed a catch-up round for the read bound.
func (s *Node) metaUnconfirmed() bool {
	return time.Since(time.Unix(0, s.metaConfirmed.Load())) > s.maxReadAge()
}

// metaCutOff reports whether the local replica of the meta shard is cut off from its quorum:
// unconfirmed for the read bound and without a leader it knows of (server/stuck.go).
func (s *Node) metaCutOff() bool { return s.metaUnconfirmed() && s.leaderless(MetaShardID) }

// cutOffShards lists the shards whose replica here is cut off from its quorum, the meta shard
// (the session table) first: unconfirmed for the read bound and without a leader it knows of,
// the rule the client port applies (server/stuck.go). /health reports them.
func (s *Node) cutOffShards() []uint64 {
	var out []uint64
	if s.metaCutOff() {
		out = append(out, MetaShardID)
	}
	bound := s.maxReadAge()
	for _, sh := range s.router.Shards() {
		if bound > 0 && sh.QuorumAgeAt(time.Now()) > bound && s.leaderless(sh.ID) {
			out = append(out, sh.ID)
		}
	}
	return out
}

// leaderless reports whether this server's replica of a shard knows of no leader.
func (s *Node) leaderless(shardID uint64) bool {
	_, _, ok, err := s.nh.GetLeaderID(shardID)
	return err == nil && !ok
}
