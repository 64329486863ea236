//go:build !race

package shard

// raceEnabled: the race detector instruments allocations, so allocation counts are not
// measured under it.
const raceEnabled = false
