package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEnforceQuotaConfig: enforceQuota in zoo.cfg (ZooKeeper makes it the system property
// zookeeper.enforceQuota; Boolean.parseBoolean), -Dzookeeper.enforceQuota in SERVER_JVMFLAGS
// unless zoo.cfg says.
func TestEnforceQuotaConfig(t *testing.T) {
	dir := t.TempDir()
	for i, tt := range []struct {
		cfg, flags string
		on         bool
	}{
		{"", "", false},
		{"enforceQuota=True\n", "", true},
		{"zookeeper.enforceQuota=true\n", "", true},
		{"enforceQuota=1\n", "", false},
		{"", "-Xmx1g -Dzookeeper.enforceQuota=true -Dfoo=bar", true},
		{"", `-Dzookeeper.enforceQuota="true"`, true},
		{"enforceQuota=false\n", "-Dzookeeper.enforceQuota=true", false},
	} {
		path := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(path, []byte("dataDir=data\n"+tt.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("SERVER_JVMFLAGS", tt.flags)
		cfg, err := LoadConfig(path, nil)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if cfg.EnforceQuota != tt.on || len(cfg.Unknown) != 0 {
			t.Errorf("%d: enforceQuota %v (unknown keys %v), want %v", i, cfg.EnforceQuota, cfg.Unknown, tt.on)
		}
	}
}
