package shard

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble"
)

// Pebble layout of one replica (one DB per replica, under Config.Dir/db-<generation>):
//
//	"mc"                          config: u8 tag | u8 ownsRoot | str root   (written at creation)
//	"ma"                          last applied Raft index, uint64 big-endian
//	"mz"                          last assigned zxid, int64 big-endian
//	"n" + treeKey(path)           node (appendNode); the root's key is "n"
//	"p" + proposer (8 BE)         proposer header (appendProposer)
//	"r" + proposer (8 BE) + seq (8 BE)   cached results of one batch (appendResults)
//	"t" + session (8 BE)          tombstone: varint close time
//	"o" + session (8 BE)          session ownership epoch: uvarint epoch
//	"mx"                          the prepared transaction (appendPrepared); absent when none
//	"d" + txn id (8 BE)           decision of a transaction (appendDecision)
//	"mg"                          the routes of moved subtrees (appendRoutes); absent when none
//	"ms"                          root shard: the data shards added online (appendAddedList); absent when none
//
// Every Update writes the nodes it changed, the proposer table changes, the tombstones, the
// transaction state, "ma" and "mz" in one pebble batch, so the applied index is always persisted atomically with the
// state it describes.
var (
	keyConfig  = []byte("mc")
	keyApplied = []byte("ma")
	keyZxid    = []byte("mz")
	keyTxn     = []byte("mx")
	keyRoutes  = []byte("mg")
	keyAdded   = []byte("ms")
)

const (
	prefixNode      = 'n'
	prefixProposer  = 'p'
	prefixResult    = 'r'
	prefixTombstone = 't'
	prefixOwner     = 'o'
	prefixDecision  = 'd'
)

func decisionKeyBytes(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixDecision}, id)
}

func nodeKeyBytes(dst []byte, key string) []byte {
	return append(append(dst, prefixNode), key...)
}

func proposerKeyBytes(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixProposer}, id)
}

func resultKeyBytes(id, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte{prefixResult}, id), seq)
}

func ownerKeyBytes(session int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixOwner}, uint64(session))
}

func tombKeyBytes(session int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixTombstone}, uint64(session))
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
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       24,
		MaxConcurrentCompactions:    func() int { return 1 },
		Logger:                      pebbleLogger{log},
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

func encodeConfig(cfg StateConfig) []byte {
	b := []byte{cfg.Tag, 0}
	if cfg.OwnsRoot {
		b[1] = 1
	}
	return appendStr(b, cfg.Root)
}

// initStore writes a fresh state (applied index 0) into an empty DB and syncs it.
func initStore(db *pebble.DB, s *State) error {
	b := db.NewBatch()
	defer b.Close()
	_ = b.Set(keyConfig, encodeConfig(s.cfg), nil)
	_ = b.Set(keyApplied, binary.BigEndian.AppendUint64(nil, 0), nil)
	_ = b.Set(keyZxid, binary.BigEndian.AppendUint64(nil, uint64(s.lastZxid)), nil)
	var kb, vb []byte
	s.tree.nodes.Ascend(func(n *node) bool {
		kb = nodeKeyBytes(kb[:0], n.key)
		vb = appendNode(vb[:0], n)
		_ = b.Set(kb, vb, nil)
		return true
	})
	if err := db.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	return db.Flush()
}

// writeChanges adds the state's dirty set, the applied index and the last zxid to b, and resets
// the dirty set.
func writeChanges(b *pebble.Batch, s *State, applied uint64) {
	var kb, vb []byte
	for key := range s.dirty.nodes {
		kb = nodeKeyBytes(kb[:0], key)
		if n := s.tree.get(key); n != nil {
			vb = appendNode(vb[:0], n)
			_ = b.Set(kb, vb, nil)
		} else {
			_ = b.Delete(kb, nil)
		}
	}
	for id := range s.dirty.proposers {
		if p, ok := s.proposers[id]; ok {
			_ = b.Set(proposerKeyBytes(id), appendProposer(nil, p), nil)
		} else {
			_ = b.Delete(proposerKeyBytes(id), nil)
		}
	}
	// Drops before writes: a slot evicted and rewritten in the same flush keeps the new value.
	for _, k := range s.dirty.dropped {
		_ = b.Delete(resultKeyBytes(k.proposer, k.seq), nil)
	}
	for _, k := range s.dirty.results {
		p, ok := s.proposers[k.proposer]
		if !ok {
			continue
		}
		if results, ok := p.cached(k.seq); ok {
			_ = b.Set(resultKeyBytes(k.proposer, k.seq), appendResults(nil, results), nil)
		}
	}
	for session := range s.dirty.tombstones {
		if t, ok := s.tombstones.bySession[session]; ok {
			_ = b.Set(tombKeyBytes(session), binary.AppendVarint(nil, t), nil)
		} else {
			_ = b.Delete(tombKeyBytes(session), nil)
		}
	}
	for session := range s.dirty.owners {
		if e, ok := s.owners[session]; ok {
			_ = b.Set(ownerKeyBytes(session), binary.AppendUvarint(nil, e), nil)
		} else {
			_ = b.Delete(ownerKeyBytes(session), nil)
		}
	}
	if s.dirty.prepared {
		if s.prepared != nil {
			_ = b.Set(keyTxn, appendPrepared(nil, s.prepared), nil)
		} else {
			_ = b.Delete(keyTxn, nil)
		}
	}
	if s.dirty.routes {
		_ = b.Set(keyRoutes, appendRoutes(nil, s.routes), nil)
	}
	if s.dirty.added {
		_ = b.Set(keyAdded, appendAddedList(nil, s.added), nil)
	}
	for id := range s.dirty.decisions {
		if d, ok := s.decisions.byID[id]; ok {
			_ = b.Set(decisionKeyBytes(id), appendDecision(nil, d), nil)
		} else {
			_ = b.Delete(decisionKeyBytes(id), nil)
		}
	}
	_ = b.Set(keyApplied, binary.BigEndian.AppendUint64(nil, applied), nil)
	_ = b.Set(keyZxid, binary.BigEndian.AppendUint64(nil, uint64(s.lastZxid)), nil)
	s.dirty.reset()
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

// loadState reads the whole state from db. found is false for an empty (new) DB.
func loadState(db *pebble.DB, cfg StateConfig) (s *State, applied uint64, found bool, err error) {
	conf, ok, err := getValue(db, keyConfig)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	if want := encodeConfig(cfg); !bytes.Equal(conf[:2], want[:2]) {
		return nil, 0, false, fmt.Errorf("%w: stored tag/root flag %v, configured %v", ErrConfigMismatch, conf[:2], want[:2])
	}
	s = NewState(cfg)
	s.tree = newTree()
	av, ok, err := getValue(db, keyApplied)
	if err != nil || !ok || len(av) != 8 {
		return nil, 0, false, fmt.Errorf("%w: applied index missing (%v)", ErrCorruptStore, err)
	}
	applied = binary.BigEndian.Uint64(av)
	zv, ok, err := getValue(db, keyZxid)
	if err != nil || !ok || len(zv) != 8 {
		return nil, 0, false, fmt.Errorf("%w: zxid missing (%v)", ErrCorruptStore, err)
	}
	s.lastZxid = int64(binary.BigEndian.Uint64(zv))
	if tv, ok, err := getValue(db, keyTxn); err != nil {
		return nil, 0, false, err
	} else if ok {
		if s.prepared, err = decodePrepared(tv); err != nil {
			return nil, 0, false, err
		}
	}
	if rv, ok, err := getValue(db, keyRoutes); err != nil {
		return nil, 0, false, err
	} else if ok {
		if s.routes, err = decodeRoutes(rv); err != nil {
			return nil, 0, false, err
		}
	}
	if av, ok, err := getValue(db, keyAdded); err != nil {
		return nil, 0, false, err
	} else if ok {
		if s.added, err = decodeAddedList(av); err != nil {
			return nil, 0, false, err
		}
	}

	it := db.NewIter(nil)
	defer it.Close()
	for ok := it.SeekGE([]byte{prefixDecision}); ok && it.Key()[0] == prefixDecision; ok = it.Next() {
		if len(it.Key()) != 9 {
			return nil, 0, false, fmt.Errorf("%w: decision key %x", ErrCorruptStore, it.Key())
		}
		d, err := decodeDecision(it.Value())
		if err != nil {
			return nil, 0, false, err
		}
		s.decisions.add(binary.BigEndian.Uint64(it.Key()[1:]), d)
	}
	for ok := it.SeekGE([]byte{prefixNode}); ok && it.Key()[0] == prefixNode; ok = it.Next() {
		n, err := decodeNode(string(it.Key()[1:]), it.Value())
		if err != nil {
			return nil, 0, false, err
		}
		s.tree.put(n)
	}
	for ok := it.SeekGE([]byte{prefixProposer}); ok && it.Key()[0] == prefixProposer; ok = it.Next() {
		if len(it.Key()) != 9 {
			return nil, 0, false, fmt.Errorf("%w: proposer key %x", ErrCorruptStore, it.Key())
		}
		p, err := decodeProposer(it.Value())
		if err != nil {
			return nil, 0, false, err
		}
		s.proposers[binary.BigEndian.Uint64(it.Key()[1:])] = p
	}
	for ok := it.SeekGE([]byte{prefixResult}); ok && it.Key()[0] == prefixResult; ok = it.Next() {
		k := it.Key()
		if len(k) != 17 {
			return nil, 0, false, fmt.Errorf("%w: result key %x", ErrCorruptStore, k)
		}
		p := s.proposers[binary.BigEndian.Uint64(k[1:])]
		if p == nil {
			continue
		}
		results, err := decodeResults(it.Value())
		if err != nil {
			return nil, 0, false, err
		}
		p.record(binary.BigEndian.Uint64(k[9:]), results)
	}
	for ok := it.SeekGE([]byte{prefixTombstone}); ok && it.Key()[0] == prefixTombstone; ok = it.Next() {
		k := it.Key()
		r := reader{buf: it.Value()}
		t := r.varint()
		if len(k) != 9 || r.finish() != nil {
			return nil, 0, false, fmt.Errorf("%w: tombstone %x", ErrCorruptStore, k)
		}
		s.tombstones.add(int64(binary.BigEndian.Uint64(k[1:])), t)
	}
	for ok := it.SeekGE([]byte{prefixOwner}); ok && it.Key()[0] == prefixOwner; ok = it.Next() {
		k := it.Key()
		r := reader{buf: it.Value()}
		e := r.uvarint()
		if len(k) != 9 || r.finish() != nil || e == 0 {
			return nil, 0, false, fmt.Errorf("%w: session owner %x", ErrCorruptStore, k)
		}
		s.owners[int64(binary.BigEndian.Uint64(k[1:]))] = e
	}
	if err := it.Error(); err != nil {
		return nil, 0, false, err
	}
	return s, applied, true, nil
}
