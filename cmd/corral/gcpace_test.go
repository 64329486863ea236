package main

import "testing"

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
