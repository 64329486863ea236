package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/corral/corral/replica"
)

// Early state syncs of data replicas (replica.Config.SyncDirty, docs/storage.md "The cost of a
// Sync").
//
// A data replica keeps its changes in memory and writes them to its store when dragonboat
// asks for a state sync, every corral.snapshotEntries entries; the shard applies nothing
// while that write runs. The entry count does not bound the changes: a bulk load of 200,000
// creates left about 50,000 changed znodes on each of four shards, written in one sync
// minutes later that stalled the shard for up to 1.65 s on a loaded 2-core machine (matrix
// run 9, docs/benchmarks.md). So a replica that holds corral.syncDirtyZnodes changed znodes
// asks for its sync at once: it calls the shard's RequestSync on its apply goroutine, which
// only queues the shard id, and runSyncRequester asks dragonboat (NodeHost.RequestSnapshot; for
// an on-disk state machine that is the same Sync and log compaction as the periodic one).

// syncRequests is the queue of shards whose replica asked for a sync.
type syncRequests struct {
	mu      sync.Mutex
	pending map[uint64]bool
	wake    chan struct{} // capacity 1
}

// syncDirty fills in a data replica's early-sync settings.
func (s *Node) syncDirty(scfg *replica.Config) {
	if s.cfg.SyncDirtyZnodes == 0 {
		return
	}
	id := scfg.ShardID
	scfg.SyncDirty = int(s.cfg.SyncDirtyZnodes)
	scfg.RequestSync = func() {
		q := &s.syncReqs
		q.mu.Lock()
		q.pending[id] = true
		q.mu.Unlock()
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// runSyncRequester asks dragonboat for the syncs the replicas asked for, one at a time, until
// the server stops (its owner: s.ctx, s.wg).
func (s *Node) runSyncRequester() {
	defer s.wg.Done()
	q := &s.syncReqs
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-q.wake:
		}
		q.mu.Lock()
		ids := make([]uint64, 0, len(q.pending))
		for id := range q.pending {
			ids = append(ids, id)
		}
		clear(q.pending)
		q.mu.Unlock()
		for _, id := range ids {
			s.requestSync(id)
		}
	}
}

// requestSync asks dragonboat for a snapshot of shard id's replica and waits for the outcome.
// A refusal (one is being taken, the replica is not open) is logged at debug level: the
// replica asks again after shard.syncRequestRetry if it still holds as many changes.
func (s *Node) requestSync(id uint64) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	rs, err := s.nh.RequestSnapshot(id, dragonboat.SnapshotOption{}, 30*time.Second)
	if err != nil {
		s.log.Debug("early state sync not requested", "shard", id, "err", err)
		return
	}
	defer rs.Release()
	select {
	case r := <-rs.ResultC():
		if !r.Completed() {
			s.log.Debug("early state sync not taken", "shard", id, "result", r)
		}
	case <-ctx.Done():
	}
}
