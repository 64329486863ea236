//go:build corraltesting

package cluster

import (
	"log/slog"
	"os"

	"github.com/corral/corral/internal/testknobs"
	"github.com/corral/corral/replica"
)

// loadTestingKnobs reads the test knobs from the environment (a corraltesting build only; see
// package internal/testknobs) and logs them when there are any, so that a server log says
// when a run was not a production one.
func (c *Config) loadTestingKnobs(log *slog.Logger) error {
	k, err := testknobs.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	c.testing = k
	if !k.IsZero() && log != nil {
		log.Warn("test knobs set from the environment (corraltesting build)", "knobs", k.String())
	}
	return nil
}

// applyTestingKnobs gives the router's replicas their apply lags (before any replica starts).
func (s *Node) applyTestingKnobs() error {
	for id, d := range s.cfg.testing.ApplyLag {
		if sh := s.router.Shard(id); sh != nil {
			sh.SetApplyLag(d)
		}
	}
	return nil
}

// shardTestingKnobs gives a data shard's replica its apply delay.
func (s *Node) shardTestingKnobs(c *replica.Config) { c.SetApplyDelayPerOp(s.cfg.testing.ApplyDelay) }
