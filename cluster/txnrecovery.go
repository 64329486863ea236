package cluster

import (
	"context"
	"time"
)

// txnRecoveryEvery is how often a server looks for transactions stuck in the prepared state on
// the shards it leads.
const txnRecoveryEvery = 200 * time.Millisecond

// recoverTxnsOnce resolves cross-shard transactions whose coordinator vanished: on every shard
// this server leads, a transaction still prepared after its deadline is resolved at its anchor
// (the recorded decision wins; an undecided anchor aborts) and the outcome applied here, so no
// shard stays blocked by a dead coordinator (docs/design.md, "Cross-shard transactions").
func (s *Node) recoverTxnsOnce() {
	now := time.Now().UnixMilli()
	for _, sh := range s.router.Shards() {
		v := sh.View()
		if v == nil {
			continue
		}
		info, ok := v.Prepared()
		if !ok || now < info.Deadline {
			continue
		}
		if !s.leads(sh.ID) {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		err := s.router.RecoverTxn(ctx, sh, info)
		cancel()
		if err != nil {
			s.log.Warn("resolving a stuck cross-shard transaction failed; will retry", "shard", sh.ID, "txn", info.ID, "err", err)
		} else {
			s.log.Info("resolved a cross-shard transaction left prepared past its deadline", "shard", sh.ID, "txn", info.ID, "anchor", info.Anchor)
		}
	}
}
