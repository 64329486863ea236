package shard

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble"
)

// Read-only access to a replica's pebble store for offline inspection (tools/inspect, `corral
// inspect`): it decodes the layout documented in store.go without loading the state into
// memory and never writes. Nothing here is used by a running server.

// StoreInfo is what a replica's store records about itself.
type StoreInfo struct {
	Tag      uint8
	OwnsRoot bool   // the root shard: it holds "/" and /zookeeper
	Root     string // Config.Root as recorded at creation
	Applied  uint64 // last Raft index written to the store
	LastZxid int64
	Routes   []Route      // subtrees moved in or out, in path order
	Added    []AddedShard // root shard: the data shards added online
	Prepared bool         // a cross-shard transaction is prepared
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
		return "", fmt.Errorf("%w: bad %s file %q", ErrCorruptStore, currentFile, b)
	}
	return filepath.Join(dir, dbDirName(g)), nil
}

// StoreReader reads a replica's store from a pebble DB the caller opened (read-only) and closes.
type StoreReader struct{ db *pebble.DB }

// NewStoreReader returns a reader of db.
func NewStoreReader(db *pebble.DB) *StoreReader { return &StoreReader{db: db} }

// Info returns the store's config, applied index, last zxid, routes and added shards.
// ErrCorruptStore means the DB is not a shard store (or is damaged).
func (s *StoreReader) Info() (StoreInfo, error) {
	var info StoreInfo
	conf, ok, err := getValue(s.db, keyConfig)
	if err != nil {
		return info, err
	}
	if !ok || len(conf) < 2 {
		return info, fmt.Errorf("%w: no config record", ErrCorruptStore)
	}
	r := reader{buf: conf[2:]}
	info.Tag, info.OwnsRoot, info.Root = conf[0], conf[1] == 1, r.str()
	if err := r.finish(); err != nil {
		return info, fmt.Errorf("%w: config: %v", ErrCorruptStore, err)
	}
	av, ok, err := getValue(s.db, keyApplied)
	if err != nil || !ok || len(av) != 8 {
		return info, fmt.Errorf("%w: applied index missing (%v)", ErrCorruptStore, err)
	}
	info.Applied = binary.BigEndian.Uint64(av)
	zv, ok, err := getValue(s.db, keyZxid)
	if err != nil || !ok || len(zv) != 8 {
		return info, fmt.Errorf("%w: zxid missing (%v)", ErrCorruptStore, err)
	}
	info.LastZxid = int64(binary.BigEndian.Uint64(zv))
	if v, ok, err := getValue(s.db, keyRoutes); err != nil {
		return info, err
	} else if ok {
		rs, err := decodeRoutes(v)
		if err != nil {
			return info, err
		}
		info.Routes = (&View{routes: rs}).Routes()
	}
	if v, ok, err := getValue(s.db, keyAdded); err != nil {
		return info, err
	} else if ok {
		if info.Added, err = decodeAddedList(v); err != nil {
			return info, err
		}
	}
	_, info.Prepared, err = getValue(s.db, keyTxn)
	return info, err
}

// Walk calls fn for every node of the subtree at path (path itself first, then in key order:
// a node before its descendants), streaming from the store; stubs are skipped. An absent path
// walks nothing, except "/": a shard that does not own the root has no "/" node, and walking
// "/" walks all its nodes. fn's error stops the walk and is returned.
func (s *StoreReader) Walk(path string, fn func(path string, n NodeInfo) error) error {
	key, ok := keyOf(path)
	if !ok {
		return fmt.Errorf("shard: invalid path %q", path)
	}
	visit := func(k, v []byte) error {
		n, err := decodeNode(string(k[1:]), v)
		if err != nil || n.stub {
			return err
		}
		return fn(pathOf(n.key), NodeInfo{n})
	}
	self := nodeKeyBytes(nil, key)
	if v, ok, err := getValue(s.db, self); err != nil {
		return err
	} else if ok {
		if err := visit(self, v); err != nil {
			return err
		}
	} else if key != "" {
		return nil
	}
	lo, hi := subtreeRange(key)
	it := s.db.NewIter(&pebble.IterOptions{LowerBound: nodeKeyBytes(nil, lo), UpperBound: nodeKeyBytes(nil, hi)})
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := visit(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// Sessions returns the sessions the store knows of: the ownership epoch recorded for each
// (OpSessionOwner) and the closed sessions' tombstones (close time, Unix ms).
func (s *StoreReader) Sessions() (owners map[int64]uint64, tombstones map[int64]int64, err error) {
	owners, tombstones = map[int64]uint64{}, map[int64]int64{}
	it := s.db.NewIter(nil)
	defer it.Close()
	for ok := it.SeekGE([]byte{prefixOwner}); ok && it.Key()[0] == prefixOwner; ok = it.Next() {
		r := reader{buf: it.Value()}
		e := r.uvarint()
		if len(it.Key()) != 9 || r.finish() != nil {
			return nil, nil, fmt.Errorf("%w: session owner %x", ErrCorruptStore, it.Key())
		}
		owners[int64(binary.BigEndian.Uint64(it.Key()[1:]))] = e
	}
	for ok := it.SeekGE([]byte{prefixTombstone}); ok && it.Key()[0] == prefixTombstone; ok = it.Next() {
		r := reader{buf: it.Value()}
		t := r.varint()
		if len(it.Key()) != 9 || r.finish() != nil {
			return nil, nil, fmt.Errorf("%w: tombstone %x", ErrCorruptStore, it.Key())
		}
		tombstones[int64(binary.BigEndian.Uint64(it.Key()[1:]))] = t
	}
	return owners, tombstones, it.Error()
}

// IsEphemeral reports whether the node is an ephemeral (its owner a session), not a
// container, TTL or persistent node.
func (i NodeInfo) IsEphemeral() bool { return kindOf(i.n.owner) == kindEphemeral }

// Kind names the node's type: "persistent", "ephemeral", "container" or "ttl".
func (i NodeInfo) Kind() string {
	switch kindOf(i.n.owner) {
	case kindEphemeral:
		return "ephemeral"
	case kindContainer:
		return "container"
	case kindTTL:
		return "ttl"
	}
	return "persistent"
}

// TTL returns a TTL node's time to live in ms (0 for other kinds).
func (i NodeInfo) TTL() int64 {
	if kindOf(i.n.owner) != kindTTL {
		return 0
	}
	return ttlOf(i.n.owner)
}
