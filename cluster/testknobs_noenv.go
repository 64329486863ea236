//go:build !corraltesting

package cluster

import "log/slog"

// loadTestingKnobs does nothing in a production build: only a corraltesting build reads test
// knobs from its environment (testknobs_env.go).
func (c *Config) loadTestingKnobs(*slog.Logger) error { return nil }
