package cluster

import (
	"context"
	"time"

	"github.com/corral/corral/router"
	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// maxContainerDeletesPerRun bounds the deletes one scan proposes (znode.container.maxPerMinute
// defaults to 10000 in ZooKeeper).
const maxContainerDeletesPerRun = 10000

// expireContainersOnce proposes, on the shards this server leads, the deletion of empty
// containers and expired TTL nodes every ContainerCheck interval. The shard re-checks each
// candidate in apply (with the batch's stamped time), so a stale candidate is refused there.
func (s *Node) expireContainersOnce() {
	for _, sh := range s.router.Shards() {
		if !s.leads(sh.ID) {
			continue
		}
		v := sh.View()
		if v == nil {
			continue
		}
		for _, p := range v.ExpiryCandidates(time.Now().UnixMilli(), maxContainerDeletesPerRun) {
			if s.router.MountPoint(p, false) {
				s.expireMountPoint(v, p)
				continue
			}
			e := wire.NewEncoder(nil)
			(&wire.DeleteRequest{Path: p, Version: -1}).Encode(e)
			sh.Proposer.Submit(&router.Request{Op: shard.Op{Code: wire.OpDeleteContainer, Body: e.Bytes()},
				Done: func(shard.OpResult, error) {}})
		}
	}
}

// expireMountPoint deletes an expired top-level container or TTL node that lives on another
// shard than "/": a cross-shard transaction (the node and the root shard's child entry) with no
// ACL check, conditional on the version the candidate had, so a node changed since the scan
// stays.
func (s *Node) expireMountPoint(v *shard.View, path string) {
	n, ok := v.Get(path)
	if !ok {
		return
	}
	m := wire.MultiRequest{Ops: []wire.MultiOp{{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: path, Version: n.Stat().Version}}}}
	_, roles := s.router.PlanMulti(&m)
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	if _, err := s.router.RunTxn(ctx, &router.TxnRequest{Internal: true, Multi: m}, roles); err != nil {
		s.log.Warn("expiring a top-level container or TTL node failed; the next scan retries", "path", path, "err", err)
	}
}
