package difftest_test

import (
	"testing"

	"github.com/corral/corral/internal/difftest"
)

// TestRawScriptsZooKeeperAgainstItself runs the raw-wire scripts with Apache
// ZooKeeper on both sides: they must agree, which proves the scripts
// deterministic and their normalisation right.
func TestRawScriptsZooKeeperAgainstItself(t *testing.T) {
	oracle, candidate := servers(t)
	for _, s := range difftest.RawScripts() {
		t.Run(s.Name, func(t *testing.T) { difftest.Run(t, oracle, candidate, s) })
	}
}

// TestKnownDifferenceScriptsZooKeeperAgainstItself: the scripts that show
// Corral's known differences are deterministic on ZooKeeper.
func TestKnownDifferenceScriptsZooKeeperAgainstItself(t *testing.T) {
	oracle, candidate := servers(t)
	for _, s := range difftest.KnownDifferenceScripts() {
		t.Run(s.Name, func(t *testing.T) { difftest.Run(t, oracle, candidate, s) })
	}
}
