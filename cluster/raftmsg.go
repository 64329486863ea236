package cluster

import (
	"fmt"
	"sync"
	_ "unsafe" // go:linkname
)

// raftMaxMessageEntryBytes is dragonboat's bound on the entry bytes one replication message
// carries (internal/raft.maxEntrySize, 64 MiB, read at init from its "soft settings", which it
// only lets a JSON file in the process's working directory change).
//
// Why Corral changes it: a leader replicating to a follower that is behind (restarted, or
// slow) sends it one message per heartbeat response while the follower is in retry state, each
// read from the log up to this bound. With 64 MiB and a 20 ms heartbeat (the timing then), a
// restarted follower under write load made each leader read and decode gigabytes per second:
// servers grew to 4–11 GB and the ensemble stalled for 6–13 s (docs/benchmarks.md, "Overload").
// At 4 MiB the longest stall fell to 0.4-4.3 s, at 1 MiB to 0.2 s (two runs each of the A/B in
// docs/benchmarks.md); 1 MiB still moves 50 MiB/s per shard to a follower in retry state, more
// once it replicates normally (one message per acknowledgement).
//
// The link fails at build time if dragonboat renames the variable; TestRaftMessageBound checks
// that it still holds dragonboat's default before a server sets it.
//
//go:linkname raftMaxMessageEntryBytes github.com/lni/dragonboat/v4/internal/raft.maxEntrySize
var raftMaxMessageEntryBytes uint64

var raftMessage struct {
	sync.Mutex
	set bool
}

// setRaftMessageBytes sets dragonboat's per-message entry bound. It is process-wide and read by
// running Raft groups without a lock, so it is set once, before the first node host starts;
// another server of the same process (tests) must ask for the same value.
func setRaftMessageBytes(n uint64) error {
	raftMessage.Lock()
	defer raftMessage.Unlock()
	if raftMaxMessageEntryBytes == n {
		return nil
	}
	if raftMessage.set {
		return fmt.Errorf("cluster: corral.raftMessageBytes %d differs from %d, set by another server of this process", n, raftMaxMessageEntryBytes)
	}
	raftMaxMessageEntryBytes, raftMessage.set = n, true
	return nil
}
