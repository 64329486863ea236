package replica

import "github.com/cockroachdb/pebble"

// StoreStats describes a replica's pebble store: counters since the replica opened (summed over
// the stores a snapshot recovery replaced) and the current store's size. They are read from
// pebble after Open, after every Sync and after a recovery, so compactions that ran since the
// last Sync show at the next one.
type StoreStats struct {
	// Syncs counts the state syncs (Sync: the changed records written and the memtables
	// flushed); SyncSeconds is their total duration, during which the shard applied nothing.
	Syncs       int64
	SyncSeconds float64
	// Flushes and FlushedBytes: memtables written as sstables; Compactions and CompactedBytes:
	// pebble's background compactions and the bytes they wrote. (FlushedBytes+CompactedBytes)
	// / FlushedBytes is the store's write amplification.
	Flushes        int64
	FlushedBytes   uint64
	Compactions    int64
	CompactedBytes uint64
	// L0Files and Bytes are the current store's level-0 files and its sstables' total size.
	L0Files int64
	Bytes   uint64
}

// StoreStats returns the store's figures as of the last Open, Sync or recovery (zero before
// Open). Safe to call from any goroutine.
func (m *Machine) StoreStats() StoreStats {
	if s := m.stats.Load(); s != nil {
		return *s
	}
	return StoreStats{}
}

// storeCounters reads the cumulative counters of db (from its opening).
func storeCounters(db *pebble.DB) StoreStats {
	pm := db.Metrics()
	t := pm.Total()
	return StoreStats{Flushes: pm.Flush.Count, FlushedBytes: t.BytesFlushed, Compactions: pm.Compact.Count,
		CompactedBytes: t.BytesCompacted, L0Files: pm.Levels[0].NumFiles, Bytes: uint64(t.Size)}
}

// noteStats publishes the store's figures: m.retired (the counters of the stores a recovery
// replaced) plus the current store's, and the syncs so far (apply goroutine only).
func (m *Machine) noteStats() {
	c := storeCounters(m.db)
	s := &StoreStats{Syncs: m.syncs, SyncSeconds: m.syncTime.Seconds(),
		Flushes: m.retired.Flushes + c.Flushes, FlushedBytes: m.retired.FlushedBytes + c.FlushedBytes,
		Compactions: m.retired.Compactions + c.Compactions, CompactedBytes: m.retired.CompactedBytes + c.CompactedBytes,
		L0Files: c.L0Files, Bytes: c.Bytes}
	m.stats.Store(s)
}

// retire adds the counters of a store about to be replaced by a recovery to m.retired.
func (m *Machine) retire(db *pebble.DB) {
	c := storeCounters(db)
	m.retired.Flushes += c.Flushes
	m.retired.FlushedBytes += c.FlushedBytes
	m.retired.Compactions += c.Compactions
	m.retired.CompactedBytes += c.CompactedBytes
}
