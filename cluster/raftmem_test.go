package cluster

import "testing"

// TestRaftEntrySliceLinked: the two variables Corral sets are dragonboat's (they held its
// defaults when the process started, 512 and 96 in the version in go.mod), and hold Corral's
// sizes now. A dragonboat that renamed or removed them fails here rather than silently
// keeping its 40 KiB slice per applied round.
func TestRaftEntrySliceLinked(t *testing.T) {
	if d := raftEntrySliceDefaults; d[0] <= raftEntrySlice || d[1] <= raftEntrySliceFree || d[1] >= d[0] {
		t.Fatalf("dragonboat's in-memory entry slice sizes at start: %d and %d; want dragonboat's defaults (above %d and %d)",
			d[0], d[1], raftEntrySlice, raftEntrySliceFree)
	}
	if dragonboatEntrySliceSize != raftEntrySlice || dragonboatMinEntrySliceSize != raftEntrySliceFree {
		t.Fatalf("entry slice sizes now %d and %d, want %d and %d",
			dragonboatEntrySliceSize, dragonboatMinEntrySliceSize, raftEntrySlice, raftEntrySliceFree)
	}
}
