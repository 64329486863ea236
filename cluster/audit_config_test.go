package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuditConfig: audit.enable (Boolean.getBoolean: "true" in any case), -Dzookeeper.audit.enable
// in SERVER_JVMFLAGS unless zoo.cfg says, corral.audit.file relative to zoo.cfg, and the default
// file in dataLogDir, else dataDir.
func TestAuditConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		cfg, flags string
		on         bool
		file       string
	}{
		0: {"", "", false, "data/zookeeper_audit.log"},
		1: {"audit.enable=TRUE\n", "", true, "data/zookeeper_audit.log"},
		2: {"audit.enable=yes\n", "", false, "data/zookeeper_audit.log"},
		3: {"", "-Xmx1g -Dzookeeper.audit.enable=true", true, "data/zookeeper_audit.log"},
		4: {"audit.enable=false\n", "-Dzookeeper.audit.enable=true", false, "data/zookeeper_audit.log"},
		5: {"zookeeper.audit.enable=true\ndataLogDir=txlog\n", "", true, "txlog/zookeeper_audit.log"},
		6: {"audit.enable=true\ncorral.audit.file=logs/a.log\n", "", true, "logs/a.log"},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(path, []byte("dataDir=data\n"+tt.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("SERVER_JVMFLAGS", tt.flags)
		cfg, err := LoadConfig(path, nil)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if cfg.Audit != tt.on || cfg.AuditPath() != filepath.Join(dir, tt.file) {
			t.Errorf("%d: audit %v at %s, want %v at %s", i, cfg.Audit, cfg.AuditPath(), tt.on, filepath.Join(dir, tt.file))
		}
		if len(cfg.Unknown) != 0 {
			t.Errorf("%d: unknown keys %v", i, cfg.Unknown)
		}
	}
}
