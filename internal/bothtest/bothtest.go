package bothtest

import (
	"context"
	"sync"
	"testing"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
)

// Start starts Apache ZooKeeper with zo and Corral with co concurrently, registers their Close
// with t.Cleanup, and fails t if either does not start.
func Start(ctx context.Context, t *testing.T, zo apachezk.Options, co corralproc.Options) (*apachezk.Ensemble, *corralproc.Ensemble) {
	t.Helper()
	var zk *apachezk.Ensemble
	var zkErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		zk, zkErr = apachezk.Start(ctx, zo)
	}()
	c, err := corralproc.Start(ctx, co)
	wg.Wait()
	if zkErr == nil {
		t.Cleanup(func() { zk.Close() })
	}
	if err == nil {
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("close Corral: %v", err)
			}
		})
	}
	if zkErr != nil {
		t.Fatalf("start Apache ZooKeeper: %v", zkErr)
	}
	if err != nil {
		t.Fatalf("start Corral: %v", err)
	}
	return zk, c
}
