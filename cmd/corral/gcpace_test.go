package main

import (
	"context"
	"runtime"
	"runtime/debug"
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
