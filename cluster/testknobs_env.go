//go:build corraltesting

package cluster

import (
	"log/slog"
	"os"

	"github.com/corral/corral/internal/testknobs"
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
