package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},        // not measured yet: Go's default
		{8 << 20, 400},  // a small heap: at most 4 times it
		{32 << 20, 200}, // 64 MiB of headroom
		{64 << 20, 100}, // 64 MiB of headroom, the live heap
		{96 << 20, 66},  // 64 MiB of headroom
		{128 << 20, 50}, // half the live heap
		{1 << 30, 50},   // never below half
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestPaceGCSetsTheTarget runs the pacer on this test process (a small live heap, so a target
// above Go's default) and reads back the target it set; it stops when its context ends.
func TestPaceGCSetsTheTarget(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC() // the live-heap metric is measured by a collection
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); paceGC(ctx, 10*time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	got := 100
	for got == 100 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		got = debug.SetGCPercent(100) // reads the target back (and resets it)
	}
	cancel()
	<-done
	if got <= 100 || got > gcMaxPercent {
		t.Fatalf("target %d with a live heap this small; want above 100, at most %d", got, gcMaxPercent)
	}
}

func TestRestRelease(t *testing.T) {
	const mib = 1 << 20
	sec := time.Second
	base := heapSample{live: 100 * mib, allocs: 1000 * mib, held: 100 * mib}
	at := func(allocs, held uint64) heapSample {
		return heapSample{live: 100 * mib, allocs: base.allocs + allocs, held: held}
	}
	for _, c := range []struct {
		name        string
		cur         heapSample
		every       time.Duration
		lastRelease uint64
		want        bool
	}{
		{"busy: the interval allocated 50 MiB", at(50*mib, 180*mib), sec, 0, false},
		{"at rest with 60 MiB beyond the live heap", at(mib/2, 160*mib), sec, 0, true},
		{"at rest, a quarter-second interval scaled to a rate", at(mib/8, 160*mib), sec / 4, 0, true},
		{"a quarter-second interval at 2 MiB/s is not at rest", at(mib/2, 160*mib), sec / 4, 0, false},
		{"at rest but little held beyond the live heap", at(0, 120*mib), sec, 0, false},
		{"released already, nothing allocated since", at(0, 160*mib), sec, base.allocs, false},
		{"released, then 40 MiB allocated: less than half the live heap", at(0, 160*mib), sec, base.allocs - 40*mib, false},
		{"released, then a burst of 60 MiB", at(0, 160*mib), sec, base.allocs - 60*mib, true},
		{"counters went back (not a real sample)", heapSample{live: 100 * mib, allocs: 1, held: 160 * mib}, sec, 0, false},
		// A large heap: a release (a collection of all of it) waits for half of it allocated,
		// as the paced collector would.
		{"4 GiB live, 1 GiB allocated since the last release", heapSample{live: 4096 * mib, allocs: base.allocs, held: 4200 * mib}, sec, base.allocs - 1024*mib, false},
		{"4 GiB live, 2 GiB allocated since the last release", heapSample{live: 4096 * mib, allocs: base.allocs, held: 4200 * mib}, sec, base.allocs - 2048*mib, true},
	} {
		if got := restRelease(base, c.cur, c.every, c.lastRelease); got != c.want {
			t.Errorf("%s: restRelease = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPaceReleasesOncePerBurst drives the pacer's loop with made-up samples: a burst, then
// rest (one release), more rest (none: nothing allocated since), a second burst and rest (one
// more), and checks the target it sets.
func TestPaceReleasesOncePerBurst(t *testing.T) {
	const mib = 1 << 20
	var samples []heapSample
	allocs := uint64(0)
	add := func(n int, perTick, held uint64) {
		for range n {
			allocs += perTick
			samples = append(samples, heapSample{live: 128 * mib, allocs: allocs, held: held})
		}
	}
	add(1, 0, 128*mib)       // the first reading
	add(5, 40*mib, 200*mib)  // a burst: 40 MiB a tick
	add(4, 0, 200*mib)       // at rest: a release at the first of these
	add(3, 0, 200*mib)       // still at rest, nothing allocated since the release
	add(5, 40*mib, 200*mib)  // a second burst
	add(2, mib/100, 200*mib) // at rest again
	var reads, percent int
	var releases []int // the reads after which the pacer released
	read := func() (heapSample, bool) {
		if reads >= len(samples) {
			return heapSample{}, false // ends the loop
		}
		reads++
		return samples[reads-1], true
	}
	tick := make(chan time.Time, len(samples))
	for range samples {
		tick <- time.Time{}
	}
	pace(context.Background(), tick, time.Second, read, func(p int) { percent = p },
		func() { releases = append(releases, reads) })
	// Reads 1-6 are the first reading and the burst; read 7 is the first at rest. The read
	// right after a release is the release's own (sample 8); samples 9-13 are at rest with
	// nothing allocated since, 14-18 the second burst, 19 the first at rest after it.
	if want := []int{7, 19}; !slices.Equal(releases, want) {
		t.Errorf("released after reads %v, want %v (once after each burst)", releases, want)
	}
	if percent != gcMinPercent {
		t.Errorf("target %d with a live heap of 128 MiB, want %d", percent, gcMinPercent)
	}
}
