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
//
// Memory at rest. The headroom pays for itself only while the server allocates: it spaces the
// collections of a busy server. Once a burst of writes ends, the heap stays at its last target
// (Go's scavenger returns only what lies beyond it, slowly), so a coordination service, idle
// most of the time, would keep the headroom of its busiest moment. So the pacer also watches
// the allocation rate: when an interval allocated less than gcRestAlloc per second while at
// least gcRestMin of the heap is not live (garbage and free pages the process still holds),
// it collects and returns every free page to the operating system (debug.FreeOSMemory), once:
// the next release waits until gcRestMin, or half the live heap if that is more, has been
// allocated since, so that releases never collect more often than the paced collector itself
// would (at least half the live heap of headroom above 128 MiB). The cost is one collection
// per burst, at a moment the server has CPU to spare.
const (
	gcMinHeadroom = 64 << 20
	gcMinPercent  = 50
	gcMaxPercent  = 400 // a live heap of 16 MiB or less: at most 4 times it of headroom
	gcPaceEvery   = 250 * time.Millisecond
	gcRestAlloc   = 1 << 20  // bytes per second: below it an interval counts as at rest
	gcRestMin     = 32 << 20 // bytes held beyond the live heap worth a release
)

// gcPercentFor returns the target for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 100
	}
	p := int(uint64(gcMinHeadroom) * 100 / live)
	return min(max(p, gcMinPercent), gcMaxPercent)
}

// heapSample is what the pacer reads from the runtime at each interval.
type heapSample struct {
	live   uint64 // live heap at the last collection
	allocs uint64 // bytes allocated since the process started
	held   uint64 // heap memory the process holds: objects (live or not yet swept) and free pages not returned
}

// restRelease decides, from the sample before and the one now over an interval of every, and
// the allocation count at the last release, whether to release memory now (see above).
func restRelease(prev, cur heapSample, every time.Duration, lastRelease uint64) bool {
	if every <= 0 || cur.allocs < prev.allocs || cur.held < cur.live {
		return false
	}
	rate := float64(cur.allocs-prev.allocs) / every.Seconds()
	return rate < gcRestAlloc && cur.held-cur.live >= gcRestMin && cur.allocs-lastRelease >= max(gcRestMin, cur.live/2)
}

var heapMetrics = []string{
	"/gc/heap/live:bytes",
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
}

// readHeap samples the runtime; ok is false when this runtime does not measure one of them.
func readHeap(s []metrics.Sample) (heapSample, bool) {
	metrics.Read(s)
	var v [4]uint64
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return heapSample{}, false
		}
		v[i] = s[i].Value.Uint64()
	}
	return heapSample{live: v[0], allocs: v[1], held: v[2] + v[3]}, true
}

// paceGC sets the target from the live heap every interval, and releases memory at rest,
// until ctx ends.
func paceGC(ctx context.Context, every time.Duration) {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	t := time.NewTicker(every)
	defer t.Stop()
	pace(ctx, t.C, every, func() (heapSample, bool) { return readHeap(s) },
		func(p int) { debug.SetGCPercent(p) }, debug.FreeOSMemory)
}

// pace is paceGC's loop: at each tick it reads the heap, sets the target when it changes and
// releases memory at rest (restRelease). It returns when ctx ends or read fails.
func pace(ctx context.Context, tick <-chan time.Time, every time.Duration, read func() (heapSample, bool),
	setPercent func(int), release func()) {
	prev, ok := read()
	if !ok {
		return // not measured by this runtime: keep Go's default
	}
	cur := 100 // Go's default, which the process started with
	lastRelease := prev.allocs
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		h, ok := read()
		if !ok {
			return
		}
		if p := gcPercentFor(h.live); p != cur {
			setPercent(p)
			cur = p
		}
		if restRelease(prev, h, every, lastRelease) {
			release()
			if h, ok = read(); !ok {
				return
			}
			lastRelease = h.allocs
		}
		prev = h
	}
}
