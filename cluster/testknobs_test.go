package cluster

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral/corral/internal/testknobs"
)

// TestTestingKeysAreNotConfiguration: zoo.cfg's former test-only keys set nothing; LoadConfig
// ignores them with a warning that names the key, as it does other unknown keys. A production
// build ignores the test knobs' environment variables too.
func TestTestingKeysAreNotConfiguration(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "zoo.cfg")
	text := "dataDir=data\ncorral.testing.applyDelay=2ms\ncorral.testing.applyLag=2:1ms\nno.such.key=1\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(testknobs.ApplyDelayEnv, "3ms")
	t.Setenv(testknobs.ApplyLagEnv, "2:5ms")
	var logged bytes.Buffer
	cfg, err := LoadConfig(path, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Unknown, " "); got != "corral.testing.applyDelay corral.testing.applyLag no.such.key" {
		t.Errorf("unknown keys %q", got)
	}
	for _, k := range []string{"corral.testing.applyDelay", "corral.testing.applyLag"} {
		if !strings.Contains(logged.String(), "test-only configuration key ignored") || !strings.Contains(logged.String(), "key="+k) {
			t.Errorf("no warning naming %s:\n%s", k, logged.String())
		}
	}
	if !strings.Contains(logged.String(), `msg="unknown configuration key ignored" key=no.such.key`) {
		t.Errorf("no warning for no.such.key:\n%s", logged.String())
	}
	if testknobs.Enabled {
		if cfg.testing.ApplyDelay != 3e6 || cfg.testing.ApplyLag[2] != 5e6 {
			t.Errorf("corraltesting build: knobs %v, want the environment's", cfg.testing)
		}
	} else if !cfg.testing.IsZero() {
		t.Errorf("production build: knobs %v, want none", cfg.testing)
	}
}
