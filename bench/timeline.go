package bench

import "time"

// Timeline counts completed operations per fixed-width time bucket since a start instant (the
// paper samples completed ops every 300 ms; Corral's failover plot uses 100 ms). Each load
// worker owns one; the runner adds them up. Not safe for concurrent use.
type Timeline struct {
	Width  time.Duration
	Counts []int64
}

// NewTimeline returns a timeline of n buckets of the given width.
func NewTimeline(width time.Duration, n int) *Timeline {
	return &Timeline{Width: width, Counts: make([]int64, n)}
}

// Add counts one completion at offset since the start; offsets outside the timeline are dropped.
func (t *Timeline) Add(offset time.Duration) {
	if offset < 0 {
		return
	}
	if i := int(offset / t.Width); i < len(t.Counts) {
		t.Counts[i]++
	}
}

// Merge adds o's counts (which must have the same width) bucket by bucket.
func (t *Timeline) Merge(o *Timeline) {
	if len(o.Counts) > len(t.Counts) {
		t.Counts = append(t.Counts, make([]int64, len(o.Counts)-len(t.Counts))...)
	}
	for i, c := range o.Counts {
		t.Counts[i] += c
	}
}

// Rates returns each bucket's count as operations per second.
func (t *Timeline) Rates() []float64 {
	out := make([]float64, len(t.Counts))
	for i, c := range t.Counts {
		out[i] = float64(c) / t.Width.Seconds()
	}
	return out
}

// Sum returns the completions in buckets whose start lies in [from, to).
func (t *Timeline) Sum(from, to time.Duration) int64 {
	var s int64
	for i, c := range t.Counts {
		at := time.Duration(i) * t.Width
		if at >= from && at < to {
			s += c
		}
	}
	return s
}

// Mean returns the mean rate (ops/s) over the buckets that start in [from, to).
func (t *Timeline) Mean(from, to time.Duration) float64 {
	n := 0
	for i := range t.Counts {
		at := time.Duration(i) * t.Width
		if at >= from && at < to {
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(t.Sum(from, to)) / (float64(n) * t.Width.Seconds())
}

// Outage describes the dip after an event: how long the rate stayed under a fraction of the
// baseline, and how long it was exactly zero.
type Outage struct {
	Below    time.Duration // longest run of buckets under frac × baseline, starting within window after at
	Zero     time.Duration // total time with zero completions within the window
	MinRate  float64       // lowest bucket rate within the window
	Recovery time.Duration // from at until the first bucket back at or above frac × baseline after the dip; -1 if it dipped and did not come back within the window
}

// OutageAfter examines the buckets in [at, at+window) against baseline (ops/s).
func (t *Timeline) OutageAfter(at, window time.Duration, baseline, frac float64) Outage {
	var o Outage
	o.MinRate = -1
	run := time.Duration(0)
	dipped := false
	for i, c := range t.Counts {
		start := time.Duration(i) * t.Width
		if start < at || start >= at+window {
			continue
		}
		rate := float64(c) / t.Width.Seconds()
		if o.MinRate < 0 || rate < o.MinRate {
			o.MinRate = rate
		}
		if c == 0 {
			o.Zero += t.Width
		}
		if rate < frac*baseline {
			run += t.Width
			dipped = true
			if run > o.Below {
				o.Below = run
			}
		} else {
			run = 0
			if dipped && o.Recovery == 0 {
				o.Recovery = start - at
			}
		}
	}
	if o.MinRate < 0 {
		o.MinRate = 0
	}
	if dipped && o.Recovery == 0 {
		o.Recovery = -1
	}
	return o
}
