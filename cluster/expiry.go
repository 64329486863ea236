package cluster

import (
	"time"

	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// maxContainerDeletesPerRun bounds the deletes one scan proposes (znode.container.maxPerMinute
// defaults to 10000 in ZooKeeper).
const maxContainerDeletesPerRun = 10000

// runContainerExpiry proposes, on the shards this server leads, the deletion of empty
// containers and expired TTL nodes every ContainerCheck interval. The shard re-checks each
// candidate in apply (with the batch's stamped time), so a stale candidate is refused there.
func (s *Server) runContainerExpiry() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ContainerCheck)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		for _, sh := range s.router.Shards() {
			lid, _, ok, err := s.nh.GetLeaderID(sh.ID)
			if err != nil || !ok || lid != s.cfg.MyID {
				continue
			}
			v := sh.View()
			if v == nil {
				continue
			}
			for _, p := range v.ExpiryCandidates(time.Now().UnixMilli(), maxContainerDeletesPerRun) {
				e := wire.NewEncoder(nil)
				(&wire.DeleteRequest{Path: p, Version: -1}).Encode(e)
				sh.Proposer.Submit(&router.Request{Op: shard.Op{Code: wire.OpDeleteContainer, Body: e.Bytes()},
					Done: func(shard.OpResult, error) {}})
			}
		}
	}
}
