package cluster

import (
	"context"
	"time"

	"github.com/corral/corral/router"
)

// Leaders follow the writes (docs/design.md §15, "Leaders follow the writes").
//
// A write proposed on a data shard's leader takes one message to the followers and one back;
// proposed on a follower, two more: the proposal travels to the leader, and the commit back to
// the follower, which answers its client once its own replica applied the entry. When one
// server proposes nearly all of a shard's entries (one busy session: a Kafka controller, an
// Overseer, a bulk load), that server takes the shard's leadership over, and its writes pay
// the short round.
//
// The rule, checked every followInterval for each data shard of which this server is a voter:
// if this server proposed at least followMinEntries batches in the last interval, its replica
// applied at least as many entries, and this server's batches were at least followShare of
// them, it is the shard's writer; a server that was the writer in two intervals in a row and
// does not lead the shard pulls the leadership (pullLeadership); a server that began handing
// its leaderships over before it stops (HandOffLeadership) pulls nothing. The spread balancer
// (balance.go) never gives away a shard whose writer its leader was in the last
// balanceInterval, so the two do not undo each other. Leadership decides nothing about
// correctness: any voter may lead, and who does changes only where writes take their round.
const (
	followInterval   = time.Second
	followShare      = 0.8
	followMinEntries = 30
	// followDrain bounds how long a pull waits for this server's batches in flight on the shard.
	followDrain = 200 * time.Millisecond
	// followRetryMax caps the wait after pulls that did not move the leadership (doubling from
	// balanceInterval).
	followRetryMax = time.Minute
)

// followState is owned by the balancer's goroutine (balanceAndFollow), which runs followOnce
// and, every balanceInterval, balanceOnce (which reads writer).
type followState struct {
	rounds int
	prev   map[uint64]followSample
	writer map[uint64]bool // data shards this server was the writer of in the last interval
	// wrote is when this server was last the writer of each data shard (isWriter).
	wrote   map[uint64]time.Time
	retry   map[uint64]time.Time
	backoff map[uint64]time.Duration
}

type followSample struct{ applied, proposed uint64 }

// balanceAndFollow is one round of the balancer's goroutine, every followInterval: first the
// writers pull their shards' leadership, then, every balanceInterval, the spread balancer runs
// with the writers' shards excluded.
func (s *Node) balanceAndFollow() {
	s.followOnce()
	if s.follow.rounds++; s.follow.rounds%int(balanceInterval/followInterval) == 0 {
		s.balanceOnce()
	}
}

// isWriter reports whether this server was the writer of a data shard in any interval of the
// last balanceInterval (always false with corral.leadersFollowWrites=false): the spread
// balancer keeps such a shard, so a lull of a second in a writer's load does not hand the
// leadership away for the writer to pull back.
func (s *Node) isWriter(shardID uint64) bool {
	t, ok := s.follow.wrote[shardID]
	return s.cfg.LeadersFollowWrites && ok && time.Since(t) <= balanceInterval
}

func (s *Node) followOnce() {
	f := &s.follow
	if f.prev == nil {
		f.prev, f.retry, f.backoff = map[uint64]followSample{}, map[uint64]time.Time{}, map[uint64]time.Duration{}
		f.wrote = map[uint64]time.Time{}
	}
	writer := map[uint64]bool{}
	var pull []uint64
	voters := s.shardVoters()
	now := time.Now()
	for _, sh := range s.router.Shards() {
		m := s.replicas.get(sh.ID)
		if m == nil || sh.Proposer == nil {
			continue
		}
		cur := followSample{applied: m.Entries(), proposed: sh.Proposer.Proposed()}
		if sh.Control != nil {
			cur.proposed += sh.Control.Proposed()
		}
		prev, ok := f.prev[sh.ID]
		f.prev[sh.ID] = cur
		if !ok || cur.applied < prev.applied || cur.proposed < prev.proposed {
			continue // first sample, or the replica was replaced
		}
		applied, proposed := cur.applied-prev.applied, cur.proposed-prev.proposed
		// applied too: batches proposed but not applied here (a replica cut off from its
		// quorum) make no writer.
		if proposed < followMinEntries || applied < followMinEntries || float64(proposed) < followShare*float64(applied) {
			continue
		}
		writer[sh.ID] = true
		f.wrote[sh.ID] = now
		if _, voter := voters[sh.ID][s.cfg.MyID]; !s.cfg.LeadersFollowWrites || s.handingOff.Load() || !voter ||
			!f.writer[sh.ID] || s.leads(sh.ID) || now.Before(f.retry[sh.ID]) {
			continue
		}
		pull = append(pull, sh.ID)
	}
	f.writer = writer
	if len(pull) == 0 {
		return
	}
	moved := forShards(pull, func(id uint64) int { return s.pullLeadership(s.router.Shard(id)) })
	for i, id := range pull {
		s.followPulls[moved[i]].Add(1)
		if moved[i] == pullMoved {
			delete(f.backoff, id)
			delete(f.retry, id)
			continue
		}
		d := min(max(2*f.backoff[id], balanceInterval), followRetryMax)
		f.backoff[id], f.retry[id] = d, time.Now().Add(d)
	}
}

// Outcomes of pullLeadership (indexes of Node.followPulls, counted on /metrics as
// corral_leadership_pulls_total).
const (
	pullMoved = iota
	pullNotMoved
	pullNotDrained
)

// pullLeadership asks for the leadership of a shard this server writes to. It first holds the
// shard's proposers here until their batches in flight applied on this replica: dragonboat's
// transfer target does not campaign while it has committed entries it has not applied, and a
// leader drops the proposals forwarded to it while a transfer is pending, without an answer
// (a forwarded proposal lost that way waits out dataAttempt). Holding the writer's own
// proposals avoids both for nearly all of the shard's writes; the requests that arrive
// meanwhile queue and go to the new leader once the hold ends, at most followDrain plus
// transferWait later.
func (s *Node) pullLeadership(sh *router.Shard) int {
	if sh == nil {
		return pullNotMoved
	}
	ctx, cancel := context.WithTimeout(s.ctx, followDrain)
	defer cancel()
	drained := true
	for _, p := range []*router.Proposer{sh.Proposer, sh.Control} {
		if p == nil {
			continue
		}
		release, ok := p.Hold(ctx)
		defer release()
		drained = drained && ok
	}
	if !drained {
		s.log.Debug("not pulling shard leadership: batches still in flight", "shard", sh.ID)
		return pullNotDrained
	}
	start := time.Now()
	if err := s.nh.RequestLeaderTransfer(sh.ID, s.cfg.MyID); err != nil {
		s.log.Debug("leader transfer not started", "shard", sh.ID, "to", s.cfg.MyID, "err", err)
		return pullNotMoved
	}
	if !s.awaitLeadership(s.ctx, sh.ID, s.transferWait()) {
		s.log.Info("shard leadership not pulled to the server that writes to it", "shard", sh.ID, "waited", time.Since(start).Round(time.Millisecond))
		return pullNotMoved
	}
	s.log.Info("pulled shard leadership to the server that writes to it", "shard", sh.ID, "took", time.Since(start).Round(time.Microsecond))
	return pullMoved
}

// awaitLeadership waits up to wait (within ctx) until this server leads the shard.
func (s *Node) awaitLeadership(ctx context.Context, shardID uint64, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		changed := s.leaders.changed(shardID)
		if s.leads(shardID) {
			return true
		}
		select {
		case <-changed:
		case <-t.C:
			return s.leads(shardID)
		case <-ctx.Done():
			return false
		}
	}
}
