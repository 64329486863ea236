package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The server's garbage-collection target (GOGC) follows its live heap: Go's default 100 lets
// the heap grow to twice the live heap before the next collection. A server's live heap is
// mostly long-lived (the shards' trees, the Raft log tail) and its garbage short-lived
// (requests, entries), so with a large tree that headroom, not the tree, is most of its memory
// (docs/benchmarks.md, "Memory per znode"). The target therefore gives the heap gcMinHeadroom
// of room, and half the live heap once the live heap passes twice that: a large server keeps
// half of Go's default headroom, and a small one (whose heap has little to give back) does not
// collect more often under a heavy load than a large one, which measured costlier in write
// throughput. GOGC in the environment overrides it (the server then leaves the target alone).
const (
	gcMinHeadroom = 64 << 20
	gcMinPercent  = 50
	gcMaxPercent  = 400 // a live heap of 16 MiB or less: at most 4 times it of headroom
	gcPaceEvery   = time.Second
)

// gcPercentFor returns the target for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 100
	}
	p := int(uint64(gcMinHeadroom) * 100 / live)
	return min(max(p, gcMinPercent), gcMaxPercent)
}

// paceGC sets the target from the live heap every interval until ctx ends.
func paceGC(ctx context.Context, every time.Duration) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	cur := 100 // Go's default, which the process started with
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return // not measured by this runtime: keep Go's default
		}
		if p := gcPercentFor(sample[0].Value.Uint64()); p != cur {
			debug.SetGCPercent(p)
			cur = p
		}
	}
}
