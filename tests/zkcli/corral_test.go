package zkcli_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/bothtest"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/difftext"
	"github.com/corral/corral/tests/zkcli"
)

// corralConfig matches what the Apache ZooKeeper side gets through JVM
// flags: TTL nodes on, no container reaper during the run.
var corralConfig = map[string]string{
	"zookeeper.extendedTypesEnabled":  "true",
	"znode.container.checkIntervalMs": "3600000",
}

// startBoth starts Apache ZooKeeper (standalone) and a 3-process Corral
// ensemble concurrently.
func startBoth(t *testing.T, ctx context.Context) (*apachezk.Ensemble, *corralproc.Ensemble) {
	t.Helper()
	if err := zkcli.Available(); err != nil {
		t.Fatalf("zkCli is required: %v", err)
	}
	began := time.Now()
	zk, corral := bothtest.Start(ctx, t, apachezk.Options{
		JVMFlags: []string{apachezk.FlagExtendedTypes, apachezk.FlagNoContainerGC},
		Config:   map[string]string{"forceSync": "no"},
	}, corralproc.Options{Servers: 3, Shards: 2, Config: corralConfig})
	t.Logf("both serving after %v; Corral at %s", time.Since(began).Round(time.Millisecond), corral.ConnectString())
	return zk, corral
}

// TestTranscriptCorralMatchesApacheZooKeeper runs the zkCli command sequence
// against Apache ZooKeeper and against server 2 of a 3-process Corral
// ensemble, concurrently, and requires identical normalised transcripts.
func TestTranscriptCorralMatchesApacheZooKeeper(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zk, corral := startBoth(t, ctx)

	began := time.Now()
	want, got, err := zkcli.Both(ctx, zk.Addr(0), corral.Addr(1), zkcli.Commands())
	t.Logf("zkCli against both took %v", time.Since(began).Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Corral's transcript differs from Apache ZooKeeper's (- zookeeper, + corral):\n%s", difftext.Unified(t, "zookeeper", want, "corral", got))
	}
}
