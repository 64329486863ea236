package cluster

import (
	"sync"
	"sync/atomic"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// stateFillingFactory wraps the Raft log store's factory (tan) so that no update costs an fsync
// for a Raft hard state it does not change.
//
// dragonboat sends an update whose hard state (term, vote, commit) did not change with an empty
// State. tan compares each update's State with the last one it wrote and fsyncs when the term or
// the vote differ; an empty State differs from any real one, so every update that only moves
// the commit or applied index (most updates of a follower and of a leader between proposals)
// cost an fsync and a write, and the next real State another one. Filling an empty State with
// the last State written for that replica is exact, because an empty State means "the same as
// the previous one" (dragonboat's Peer keeps the same previous State); tan then writes nothing
// for an update that carries no entries, snapshot or state change, and fsyncs only for entries,
// snapshots and term or vote changes, which is what Raft needs to persist.
// docs/storage.md ("What is fsynced") has the measurement.
type stateFillingFactory struct {
	inner config.LogDBFactory
	tail  *atomic.Pointer[tailCache] // set to the tail cache Create makes (for metrics); may be nil
	// tailBytes is the tail cache's budget, over all the server's replicas
	// (corral.raftTailBytes); 0 keeps only each replica's newest entry.
	tailBytes uint64
}

// Create creates the inner log store and wraps it: empty States filled (below), and the newest
// entries of every replica kept in memory for catch-up reads (tailCache, logcache.go).
func (f stateFillingFactory) Create(cfg config.NodeHostConfig, cb config.LogDBCallback,
	dirs []string, lldirs []string) (raftio.ILogDB, error) {
	db, err := f.inner.Create(cfg, cb, dirs, lldirs)
	if err != nil {
		return nil, err
	}
	c := newTailCache(newStateFillingLogDB(db), f.tailBytes)
	if f.tail != nil {
		f.tail.Store(c)
	}
	return c, nil
}

// Name is the inner store's name: dragonboat records it in the data directory and refuses a
// directory written by another kind of store, and the bytes on disk are the inner store's.
func (f stateFillingFactory) Name() string { return f.inner.Name() }

// stateFillingLogDB is a log store whose SaveRaftState fills empty States (see above).
type stateFillingLogDB struct {
	raftio.ILogDB
	mu   sync.Mutex
	last map[[2]uint64]pb.State // by (shard, replica): the last non-empty State saved
}

func newStateFillingLogDB(db raftio.ILogDB) *stateFillingLogDB {
	return &stateFillingLogDB{ILogDB: db, last: map[[2]uint64]pb.State{}}
}

// SaveRaftState fills each update's empty State with the last State saved for its replica, then
// saves. An empty State before any real one (just after a start) is saved as it is.
func (d *stateFillingLogDB) SaveRaftState(updates []pb.Update, shardID uint64) error {
	d.mu.Lock()
	for i := range updates {
		u := &updates[i]
		k := [2]uint64{u.ShardID, u.ReplicaID}
		if pb.IsEmptyState(u.State) {
			if st, ok := d.last[k]; ok {
				u.State = st
			}
		} else {
			d.last[k] = u.State
		}
	}
	d.mu.Unlock()
	return d.ILogDB.SaveRaftState(updates, shardID)
}

// RemoveNodeData forgets the replica's State along with its data.
func (d *stateFillingLogDB) RemoveNodeData(shardID, replicaID uint64) error {
	d.mu.Lock()
	delete(d.last, [2]uint64{shardID, replicaID})
	d.mu.Unlock()
	return d.ILogDB.RemoveNodeData(shardID, replicaID)
}

// tanWriteBuffer is the size of each of tan's encoding buffers (config.LogDBConfig's
// KVWriteBufferSize; tan allocates 16 of them, one per Raft shard id below 17, when the log store
// opens, and encodes one saved update into its shard's buffer, or into a new slice when the
// update is larger). dragonboat's small-memory configuration makes them 16 MiB: 256 MiB of heap
// that is never touched beyond the largest update (RSS stays small) but that the collector counts
// as live, so with GOGC=100 it let the heap grow 256 MiB further before each collection. A
// Raft round's update is far below 1 MiB (replication messages are bounded to
// corral.raftMessageBytes, 1 MiB by default); a larger one costs one allocation. See
// docs/benchmarks.md, "Memory per znode".
const tanWriteBuffer = 1 << 20

// logDBConfig is the log store configuration: dragonboat's small-memory one with tan's
// encoding buffers at tanWriteBuffer. tan reads no other field of it.
func logDBConfig() config.LogDBConfig {
	c := config.GetSmallMemLogDBConfig()
	c.KVWriteBufferSize = tanWriteBuffer
	return c
}
