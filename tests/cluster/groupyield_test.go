package clustertest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/router"
	"github.com/corral/corral/wire"
)

// TestGroupsYieldToWaitingWriters: session A pipelines creates alternately under two parents
// on two shards, so its writes run as group transactions whose commits travel with the next
// group's prepares, and each shard holds one of A's groups prepared, with the parent locked,
// almost all the time. Session B creates one znode under one of those parents, synchronously,
// three times: each create must be answered within 1.5 s (ZooKeeper answers in milliseconds;
// the bound leaves room for a loaded test machine), and A must go on writing afterwards.
// Without the yield (docs/design.md §8, "Groups yield to waiting writers") B's first create
// took 1.6-2.1 s and the next did not complete within the client's read timeout.
func TestGroupsYieldToWaitingWriters(t *testing.T) {
	ids := []uint64{2, 3, 4, 5}
	byShard := topLevelNamesByShard("st", ids)
	a, b := "/"+byShard[ids[1]][0], "/"+byShard[ids[2]][0]
	cl := startAtSupportedLevel(t, 3, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca, err := client.Dial(ctx, []string{cl.Addrs()[0]}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := client.Dial(ctx, []string{cl.Addrs()[1]}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	for _, p := range []string{a, b} {
		if _, _, err := ca.Create(ctx, p, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var done atomic.Int64
	sem := make(chan struct{}, 32)
	go func() {
		for n := 0; !stop.Load(); n++ {
			sem <- struct{}{}
			p := fmt.Sprintf("%s/a%d", []string{a, b}[n%2], n)
			ca.CreateAsync(p, nil, wire.FlagPersistent, nil, func(string, wire.Stat, error) { <-sem; done.Add(1) })
		}
	}()
	defer stop.Store(true)
	time.Sleep(time.Second)
	for i := range 3 {
		start := time.Now()
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := cb.Create(cctx, fmt.Sprintf("%s/b%d", a, i), nil, 0, nil)
		ccancel()
		took := time.Since(start)
		t.Logf("B's create %d under %s: %v after %v (A's creates so far: %d)", i, a, err, took.Round(time.Millisecond), done.Load())
		if err != nil || took > 1500*time.Millisecond {
			t.Fatalf("B's create under a parent A keeps writing to took %v (%v): A's groups starve it", took.Round(time.Millisecond), err)
		}
	}
	// A goes on.
	before := done.Load()
	time.Sleep(2 * time.Second)
	if after := done.Load(); after-before < 20 {
		t.Fatalf("A completed %d creates in the 2 s after B's", after-before)
	}
}

// topLevelNamesByShard returns names prefix0 ... prefix399 grouped by the data shard (of ids)
// that hash placement puts each top-level name on.
func topLevelNamesByShard(prefix string, ids []uint64) map[uint64][]string {
	byShard := map[uint64][]string{}
	for i := 0; i < 400; i++ {
		n := fmt.Sprintf("%s%d", prefix, i)
		sh := router.TopLevelShard(n, ids)
		byShard[sh] = append(byShard[sh], n)
	}
	return byShard
}
