package kazoo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/internal/apachezk"
	"github.com/corral/corral/internal/corralproc"
	"github.com/corral/corral/internal/difftext"
)

// startCorral starts a 3-process Corral ensemble from zoo.cfg files.
func startCorral(t *testing.T, ctx context.Context) *corralproc.Ensemble {
	t.Helper()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: 2})
	if err != nil {
		t.Fatalf("start Corral: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close Corral: %v", err)
		}
	})
	return e
}

// TestRecipesCorralMatchesApacheZooKeeper runs recipes.py against Apache
// ZooKeeper (standalone) and, at the same time, twice against a 3-process
// Corral ensemble: once with the two clients pinned to different servers
// (a on server 1, b on server 2), once with the whole connect string for
// both (kazoo picks servers at random). All three transcripts must be
// identical.
func TestRecipesCorralMatchesApacheZooKeeper(t *testing.T) {
	t.Parallel()
	if err := KazooAvailable(); err != nil {
		t.Fatal(err)
	}
	if err := apachezk.Available(); err != nil {
		t.Fatalf("Apache ZooKeeper is required: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var zk *apachezk.Ensemble
	var zkErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the JVM starts while Corral is built and started
		defer wg.Done()
		zk, zkErr = apachezk.Start(ctx, apachezk.Options{Config: map[string]string{"forceSync": "no"}})
	}()
	began := time.Now()
	corral := startCorral(t, ctx)
	t.Logf("Corral serving after %v at %s", time.Since(began).Round(time.Millisecond), corral.ConnectString())
	wg.Wait()
	if zkErr != nil {
		t.Fatalf("start Apache ZooKeeper: %v", zkErr)
	}
	t.Cleanup(func() { zk.Close() })

	runs := []struct {
		name, connect, connectB string
		out                     string
		err                     error
		took                    time.Duration
	}{
		{name: "zookeeper", connect: zk.ConnectString()},
		{name: "corral-pinned", connect: corral.Addr(0), connectB: corral.Addr(1)},
		{name: "corral-any", connect: corral.ConnectString()},
	}
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &runs[i]
			began := time.Now()
			r.out, r.err = runRecipes(r.connect, r.connectB)
			r.took = time.Since(began)
		}()
	}
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			t.Errorf("%s: %v", r.name, r.err)
		} else {
			t.Logf("%s: recipes.py took %v", r.name, r.took.Round(time.Millisecond))
		}
	}
	if t.Failed() {
		return
	}
	want := runs[0]
	for _, r := range runs[1:] {
		if r.out != want.out {
			t.Errorf("%s transcript differs from Apache ZooKeeper's (- %s, + %s):\n%s",
				r.name, want.name, r.name, difftext.Unified(t, want.name, want.out, r.name, r.out))
		}
	}
}
