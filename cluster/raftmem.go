package cluster

import (
	_ "unsafe" // go:linkname
)

// The in-memory tail of each replica's Raft log (dragonboat's internal/raft inMemory) keeps the
// entries not yet applied in a slice. Whenever applying leaves that slice with at most one
// entry, or with less than minEntrySliceSize free places, dragonboat replaces it by a new one of
// entrySliceSize places (dragonboat's soft settings InMemEntrySliceSize and
// MinEntrySliceFreeSize, 512 and 96 by default). A replica that keeps up applies everything it
// appended, so every applied round drops one such slice: 512 entries of 80 bytes, 40 KiB of
// garbage per round and replica, however small the round. Under a bulk load through groups that
// was 37 % of every byte a follower allocated, and collection time follows allocated bytes
// (docs/design.md §13, "Garbage per Raft round").
//
// dragonboat reads those two settings only from a JSON file in the process's working directory
// (dragonboat-soft-settings.json), which a server must not depend on, so Corral sets the two
// variables dragonboat copied them into when the Node's package is initialised, before any
// NodeHost exists. A slice that needs more places than entrySliceSize grows as any Go slice
// does (append), so the smaller size bounds the garbage of a round without limiting a round.
const (
	raftEntrySlice     = 16
	raftEntrySliceFree = 4 // below raftEntrySlice, as dragonboat requires
)

//go:linkname dragonboatEntrySliceSize github.com/lni/dragonboat/v4/internal/raft.entrySliceSize
var dragonboatEntrySliceSize uint64

//go:linkname dragonboatMinEntrySliceSize github.com/lni/dragonboat/v4/internal/raft.minEntrySliceSize
var dragonboatMinEntrySliceSize uint64

// raftEntrySliceDefaults are dragonboat's values as the process started (before init below):
// zero if the variables are not dragonboat's any more (a version that renamed them), which
// TestRaftEntrySliceLinked reports.
var raftEntrySliceDefaults = [2]uint64{dragonboatEntrySliceSize, dragonboatMinEntrySliceSize}

func init() {
	// Set only where the variables hold dragonboat's own values, so that a dragonboat
	// version that moved them leaves whatever took their place alone.
	if dragonboatEntrySliceSize > raftEntrySlice && dragonboatMinEntrySliceSize > raftEntrySliceFree {
		dragonboatEntrySliceSize = raftEntrySlice
		dragonboatMinEntrySliceSize = raftEntrySliceFree
	}
}
