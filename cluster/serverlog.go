package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	_ "unsafe" // go:linkname

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// The server log: one Raft log for every replica of a server, saved with group commit.
//
// Why: tan, dragonboat's log store, gives each replica a log file of its own, and dragonboat
// saves each shard's Raft round on that shard's step worker, so a server with five replicas
// (the meta shard and four data shards) fsyncs up to five files for what is, under load, one
// wave of rounds; concurrent fsyncs of several files queue on the device's flushes and cost
// several times one (docs/storage.md). Instead every replica of the server appends to one log
// (tan's multiplexed mode, which keeps one index per replica inside a shared file), and saves
// that arrive while another is being written and synced wait and go together in the next one:
// one write and one fsync for all of them.
//
// Invariants:
//   - Mapping: tan's multiplexed mode picks the file by shard id modulo 16 and refuses one save
//     that spans two files, so the store sees every shard id s as s<<4 (all in file "shard-0");
//     every call maps the ids it passes and unmaps the ids it returns (ListNodeInfo, a
//     snapshot's ShardID), so to dragonboat the store is tan with its own ids. The map is
//     injective below 1<<60, far above any shard id Corral assigns.
//   - Group commit: SaveRaftState returns only after an inner save that started after the call
//     and held the call's updates returned, that is, wrote and synced them (or failed; every
//     caller of that save gets its error, and dragonboat stops on it). One inner save runs at a
//     time. A replica's updates are saved in the order its step worker submitted them: the
//     worker submits the next only after the previous call returned.
//
// Existing data directories: a NodeHost directory written with a log per replica (recorded
// by dragonboat as the store "Tan") keeps that layout; only a new directory gets the server
// log, recorded under the name serverLogName, which a binary without it refuses to open
// (dragonboat checks the recorded name), so a downgrade stops instead of starting from an empty
// log. Tests: TestServerLogMapsShardIDs, TestServerLogGroupsConcurrentSaves,
// TestLogStoreForExistingDirectory.

// serverLogName is the log store's name dragonboat records in a NodeHost directory.
const serverLogName = "corral-serverlog"

// serverLogShift maps a shard id into the store: s<<serverLogShift is 0 modulo 16.
const serverLogShift = 4

// logStoreFor returns the log store factory for a NodeHost directory: tan with a log per
// replica when the directory already holds one (dragonboat's flag file names tan), the server
// log otherwise.
func logStoreFor(nodeHostDir string) (config.LogDBFactory, error) {
	name, err := recordedLogStore(nodeHostDir)
	if err != nil {
		return nil, err
	}
	if name == tan.Factory.Name() {
		return tan.Factory, nil
	}
	return serverLogFactory{}, nil
}

// dragonboatFlagFile is the file in which dragonboat records a NodeHost directory's settings
// (internal/server/environment.go: an 8-byte hash, then a marshalled pb.RaftDataStatus).
const dragonboatFlagFile = "dragonboat.ds"

// recordedLogStore returns the log store name recorded in nodeHostDir, "" for a directory
// without one.
func recordedLogStore(nodeHostDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(nodeHostDir, dragonboatFlagFile))
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cluster: reading the Raft log store's settings: %w", err)
	}
	var st pb.RaftDataStatus
	if len(b) < 8 || st.Unmarshal(b[8:]) != nil {
		return "", fmt.Errorf("cluster: %s: not a dragonboat settings file", filepath.Join(nodeHostDir, dragonboatFlagFile))
	}
	return st.LogdbType, nil
}

// serverLogFactory creates the server log over tan's multiplexed mode.
type serverLogFactory struct{}

// Create opens the store. It needs logFileFS as the NodeHost's file system: tan would leave an
// update unsynced in a log file it closes in the middle of a save of several updates
// (logfile.go), which every group commit is.
func (serverLogFactory) Create(cfg config.NodeHostConfig, cb config.LogDBCallback,
	dirs []string, wals []string) (raftio.ILogDB, error) {
	if _, ok := cfg.Expert.FS.(*logFileFS); !ok {
		return nil, fmt.Errorf("cluster: the server log needs logFileFS as the NodeHost's file system, not %T", cfg.Expert.FS)
	}
	db, err := createMultiplexedTan(cfg, cb, dirs, wals)
	if err != nil {
		return nil, err
	}
	return newServerLog(db), nil
}

func (serverLogFactory) Name() string { return serverLogName }

// createMultiplexedTan is tan's multiplexed-mode factory, which dragonboat does not export
// (plugin/tan exports the per-replica one). Its signature is checked by the tests that open a
// store with it.
//
//go:linkname createMultiplexedTan github.com/lni/dragonboat/v4/internal/tan.multiplexLogFactory.Create
func createMultiplexedTan(cfg config.NodeHostConfig, cb config.LogDBCallback, dirs []string, wals []string) (raftio.ILogDB, error)

// serverLog is the store all replicas of a server save to (see above).
type serverLog struct {
	raftio.ILogDB
	mu      sync.Mutex
	saving  bool        // an inner save is running
	waiting []*saveCall // calls that arrived meanwhile, in order
	batch   []pb.Update // the leader's buffer of mapped updates, reused
}

// saveCall is one SaveRaftState call waiting for its save.
type saveCall struct {
	updates []pb.Update
	err     error
	// done receives true once the call's updates are saved (err set), or false when the call
	// is to run the next save itself.
	done chan bool
}

func newServerLog(db raftio.ILogDB) *serverLog { return &serverLog{ILogDB: db} }

func mapShard(s uint64) uint64   { return s << serverLogShift }
func unmapShard(s uint64) uint64 { return s >> serverLogShift }

// SaveRaftState saves updates with group commit: the caller that finds no save running runs
// one for its own updates and every call that queued before it started; a caller that finds
// one running queues and waits until a later save has its updates, or until it is handed the
// next save to run.
func (l *serverLog) SaveRaftState(updates []pb.Update, worker uint64) error {
	c := &saveCall{updates: updates, done: make(chan bool, 1)}
	l.mu.Lock()
	l.waiting = append(l.waiting, c)
	if l.saving {
		l.mu.Unlock()
		if <-c.done {
			return c.err
		}
		l.mu.Lock() // handed the next save
	}
	l.saving = true
	calls := l.waiting
	l.waiting = nil
	l.mu.Unlock()

	batch := l.batch[:0]
	for _, call := range calls {
		for _, u := range call.updates {
			u.ShardID = mapShard(u.ShardID)
			batch = append(batch, u)
		}
	}
	err := l.ILogDB.SaveRaftState(batch, worker)
	clear(batch) // drop references to the callers' entries
	l.batch = batch[:0]
	for _, call := range calls {
		if call != c {
			call.err = err
			call.done <- true
		}
	}

	l.mu.Lock()
	if len(l.waiting) > 0 {
		l.waiting[0].done <- false
	} else {
		l.saving = false
	}
	l.mu.Unlock()
	return err
}

func (l *serverLog) ListNodeInfo() ([]raftio.NodeInfo, error) {
	ns, err := l.ILogDB.ListNodeInfo()
	for i := range ns {
		ns[i].ShardID = unmapShard(ns[i].ShardID)
	}
	return ns, err
}

func (l *serverLog) SaveBootstrapInfo(shardID, replicaID uint64, b pb.Bootstrap) error {
	return l.ILogDB.SaveBootstrapInfo(mapShard(shardID), replicaID, b)
}

func (l *serverLog) GetBootstrapInfo(shardID, replicaID uint64) (pb.Bootstrap, error) {
	return l.ILogDB.GetBootstrapInfo(mapShard(shardID), replicaID)
}

func (l *serverLog) IterateEntries(ents []pb.Entry, size, shardID, replicaID, low, high,
	maxSize uint64) ([]pb.Entry, uint64, error) {
	return l.ILogDB.IterateEntries(ents, size, mapShard(shardID), replicaID, low, high, maxSize)
}

func (l *serverLog) ReadRaftState(shardID, replicaID, lastIndex uint64) (raftio.RaftState, error) {
	return l.ILogDB.ReadRaftState(mapShard(shardID), replicaID, lastIndex)
}

func (l *serverLog) RemoveEntriesTo(shardID, replicaID, index uint64) error {
	return l.ILogDB.RemoveEntriesTo(mapShard(shardID), replicaID, index)
}

func (l *serverLog) CompactEntriesTo(shardID, replicaID, index uint64) (<-chan struct{}, error) {
	return l.ILogDB.CompactEntriesTo(mapShard(shardID), replicaID, index)
}

// SaveSnapshots saves snapshot records (dragonboat's snapshot workers, not the step workers:
// tan writes each under its own lock and syncs it, outside the group commit).
func (l *serverLog) SaveSnapshots(updates []pb.Update) error {
	mapped := make([]pb.Update, len(updates))
	for i, u := range updates {
		u.ShardID = mapShard(u.ShardID)
		mapped[i] = u
	}
	return l.ILogDB.SaveSnapshots(mapped)
}

// GetSnapshot returns the replica's latest snapshot record, with the shard id as dragonboat
// knows it (an imported snapshot was stored with the mapped one).
func (l *serverLog) GetSnapshot(shardID, replicaID uint64) (pb.Snapshot, error) {
	ss, err := l.ILogDB.GetSnapshot(mapShard(shardID), replicaID)
	if err == nil && !pb.IsEmptySnapshot(ss) {
		ss.ShardID = shardID
	}
	return ss, err
}

// errWholeLog is the answer to the calls tan's multiplexed mode implements by dropping every
// log file but the current one, which in a shared log holds every other replica's entries too
// (its db.removeAllLocked). Corral makes neither call: it never removes a replica's data
// (dragonboat's NodeHost.RemoveData) nor imports a snapshot offline (dragonboat's
// tools.ImportSnapshot).
var errWholeLog = errors.New("cluster: not supported by the server log: tan would drop every replica's log files")

func (l *serverLog) RemoveNodeData(shardID, replicaID uint64) error { return errWholeLog }

func (l *serverLog) ImportSnapshot(ss pb.Snapshot, replicaID uint64) error { return errWholeLog }
