package replica

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble"

	"github.com/corral/corral/shard"
)

// The pebble side of a state's records (records.go): a batch is a shard.RecordWriter, a DB a
// RecordReader.

// batchWriter writes records into a pebble batch (which copies them).
type batchWriter struct{ b *pebble.Batch }

func (w batchWriter) Set(key, value []byte) { _ = w.b.Set(key, value, nil) }
func (w batchWriter) Delete(key []byte)     { _ = w.b.Delete(key, nil) }

// dbReader reads records from a pebble DB.
type dbReader struct{ db *pebble.DB }

func (r dbReader) Get(key []byte) ([]byte, bool, error) { return getValue(r.db, key) }

func (r dbReader) Scan(lo, hi []byte, f func(key, value []byte) error) error {
	it := r.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := f(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// pebbleOptions sizes pebble small: a test process runs 3 replicas of several shards, and a
// server runs many shards. The Raft log, not this store, is the durability point: writes are
// NoSync; there is no pebble WAL and Sync() flushes the memtables.
func pebbleOptions(log *slog.Logger) *pebble.Options {
	return &pebble.Options{
		// No pebble WAL: the Raft log is the write-ahead log. After a crash the store reopens at
		// its last flushed state, whose applied index is in that same state, and dragonboat
		// replays the log from there; it compacts its log only below the index of the last
		// successful Sync, which flushes the memtables.
		DisableWAL:                  true,
		MemTableSize:                8 << 20,
		MemTableStopWritesThreshold: 4,
		MaxOpenFiles:                64,
		// The store is written by syncs and read only when the replica opens, by snapshots and
		// by the offline reader, never while it serves, so level 0 may hold many files. Every sync writes the applied index, the proposer
		// records and the parents of changed znodes beside the znodes themselves, so each flushed
		// file spans most of the key space, and a compaction of level 0 rewrites nearly all of
		// the level below it: compacting at 16 files instead of 4 rewrites it a quarter as often
		// (docs/storage.md, "The store's compactions"). Writes stop at 64, well above.
		L0CompactionThreshold:    16,
		L0StopWritesThreshold:    64,
		MaxConcurrentCompactions: func() int { return 1 },
		Logger:                   pebbleLogger{log},
	}
}

func openDB(dir string, log *slog.Logger) (*pebble.DB, error) {
	opts := pebbleOptions(log)
	cache := pebble.NewCache(1 << 20)
	defer cache.Unref()
	opts.Cache = cache
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("shard: opening pebble at %s: %w", dir, err)
	}
	return db, nil
}

// pebbleLogger routes pebble's messages to slog. Fatalf is called on unrecoverable storage
// errors; it logs and panics, as pebble requires it not to return.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...interface{}) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Fatalf(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "component", "pebble")
	panic("shard: pebble fatal: " + msg)
}

// initStore writes a fresh state (applied index 0) into an empty DB and syncs it.
func initStore(db *pebble.DB, s *shard.State) error {
	b := db.NewBatch()
	defer b.Close()
	s.WriteInitial(batchWriter{b})
	if err := db.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	return db.Flush()
}

// pebbleBatchHeader is the size of a pebble batch's header (sequence number and count), which
// an empty batch's representation holds and nothing else.
const pebbleBatchHeader = 12

// presizeMin is the estimate below which a batch is left to grow on its own.
const presizeMin = 256 << 10

// presize gives an empty batch room for about est bytes of records, so that writing them does not
// grow its buffer by doubling (a copy of everything written so far at each step: 5 % of the
// servers' CPU in a profile of matrix row 8, docs/storage.md "The cost of a Sync"). A wrong
// estimate costs only memory or the growth it was meant to spare.
func presize(b *pebble.Batch, est int) {
	if est < presizeMin {
		return
	}
	_ = b.SetRepr(make([]byte, pebbleBatchHeader, pebbleBatchHeader+est+est/8))
}

// writeChanges adds the state's changes, the applied index and the last zxid to b
// (shard.State.WriteChanges).
func writeChanges(b *pebble.Batch, s *shard.State, applied uint64) {
	s.WriteChanges(batchWriter{b}, applied)
}

// loadState reads the whole state from db (shard.LoadState). found is false for an empty (new) DB.
func loadState(db *pebble.DB, cfg shard.StateConfig) (s *shard.State, applied uint64, found bool, err error) {
	return shard.LoadState(dbReader{db}, cfg)
}

func getValue(db *pebble.DB, key []byte) ([]byte, bool, error) {
	v, closer, err := db.Get(key)
	if err == pebble.ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

// StoreDBDir returns the pebble directory that the replica directory dir's `current` file
// names (what Machine.Open would open), without creating anything.
func StoreDBDir(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, currentFile))
	if err != nil {
		return "", err
	}
	g, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(string(b)), "db-"))
	if err != nil {
		return "", fmt.Errorf("%w: bad %s file %q", shard.ErrCorruptStore, currentFile, b)
	}
	return filepath.Join(dir, dbDirName(g)), nil
}

// NewStoreReader returns a reader of a replica's store, a pebble DB the caller opened (read-only)
// and closes.
func NewStoreReader(db *pebble.DB) *shard.StoreReader { return shard.NewStoreReader(dbReader{db}) }
