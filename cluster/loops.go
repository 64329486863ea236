package cluster

import "time"

// every runs fn every d until the server stops (s.ctx); the caller has added it to s.wg, which
// Close waits for. The background duties (leader balancing, container expiry, transaction
// recovery) run this way, one goroutine each.
func (s *Server) every(d time.Duration, fn func()) {
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
func (s *Server) leads(shardID uint64) bool {
	lid, _, ok, err := s.nh.GetLeaderID(shardID)
	return err == nil && ok && lid == s.cfg.MyID
}
