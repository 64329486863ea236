//go:build !corraltesting

package cluster

import (
	"errors"
	"log/slog"

	"github.com/corral/corral/replica"
)

// loadTestingKnobs does nothing in a production build: only a corraltesting build reads test
// knobs from its environment (testknobs_env.go).
func (c *Config) loadTestingKnobs(*slog.Logger) error { return nil }

// applyTestingKnobs refuses knobs set in process (Config.SetTestingKnobs) in a production
// build, which has no code to apply them: a test that asks for them must be built with
// -tags corraltesting (`make test` is), or it would test nothing it claims.
func (s *Node) applyTestingKnobs() error {
	if !s.cfg.testing.IsZero() {
		return errors.New("cluster: test knobs need a build with -tags corraltesting (make test builds so)")
	}
	return nil
}

func (s *Node) shardTestingKnobs(*replica.Config) {}
