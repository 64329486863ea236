package shard

// Exactly-once, FIFO batches. dragonboat's client sessions are not available to on-disk state
// machines, so the shard keeps its own table: per proposer (a server incarnation with a random
// id) the highest applied Seq, the batch time of its last batch and the results of its last
// resultCache batches.
const (
	// resultCache is the number of recent batch results kept per proposer for retries.
	resultCache = 32
	// proposerIdle is how long (in batch time, ms) a proposer may stay silent before the shard
	// forgets it. A forgotten proposer that comes back is unknown: only Seq 1 is accepted.
	proposerIdle = 24 * 60 * 60 * 1000
)

type proposer struct {
	lastSeq  uint64
	lastTime int64
	ring     [resultCache]cachedResult
}

type cachedResult struct {
	seq     uint64 // 0: empty slot
	results []OpResult
}

// cached returns the results of batch seq if they are still cached.
func (p *proposer) cached(seq uint64) ([]OpResult, bool) {
	c := &p.ring[seq%resultCache]
	if c.seq != seq || seq == 0 {
		return nil, false
	}
	return c.results, true
}

// record stores the results of batch seq and returns the seq of the evicted entry (0 if none).
func (p *proposer) record(seq uint64, results []OpResult) (evicted uint64) {
	c := &p.ring[seq%resultCache]
	evicted = c.seq
	*c = cachedResult{seq: seq, results: results}
	return evicted
}

// admit decides what to do with a batch from proposer id with sequence seq.
func (s *State) admit(id, seq uint64) (BatchStatus, *proposer) {
	p, known := s.proposers[id]
	switch {
	case !known:
		if seq != 1 {
			return BatchOutOfOrder, nil
		}
		p = &proposer{}
		s.proposers[id] = p
		return BatchApplied, p
	case seq == 0:
		return BatchOutOfOrder, p
	case seq <= p.lastSeq:
		if _, ok := p.cached(seq); ok {
			return BatchDuplicate, p
		}
		return BatchDuplicateUnknown, p
	case seq != p.lastSeq+1:
		return BatchOutOfOrder, p
	}
	return BatchApplied, p
}

// finish records an applied batch in the proposer table.
func (s *State) finish(id uint64, p *proposer, b *Batch, results []OpResult) {
	p.lastSeq = b.Seq
	p.lastTime = b.Time
	evicted := p.record(b.Seq, results)
	if s.track {
		s.dirty.proposers[id] = struct{}{}
		s.dirty.results = append(s.dirty.results, resultKey{id, b.Seq})
		if evicted != 0 {
			s.dirty.dropped = append(s.dirty.dropped, resultKey{id, evicted})
		}
	}
}

// forgetIdle drops every proposer other than current whose last batch is more than proposerIdle
// older than now. The set dropped depends only on (table, now), never on map order.
func (s *State) forgetIdle(current uint64, now int64) {
	for id, p := range s.proposers {
		if id == current || p.lastTime >= now-proposerIdle {
			continue
		}
		delete(s.proposers, id)
		if s.track {
			s.dirty.proposers[id] = struct{}{}
			for _, c := range p.ring {
				if c.seq != 0 {
					s.dirty.dropped = append(s.dirty.dropped, resultKey{id, c.seq})
				}
			}
		}
	}
}
