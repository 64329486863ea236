package shard

import (
	"encoding/binary"
	"fmt"
)

// Read-only access to a replica's stored records for offline inspection (tools/inspect, `corral
// inspect`): it decodes the layout documented in records.go without loading the state into
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

// StoreReader reads a replica's stored records (package replica opens them read-only from its
// pebble store).
type StoreReader struct{ db RecordReader }

// NewStoreReader returns a reader of the records r reads.
func NewStoreReader(r RecordReader) *StoreReader { return &StoreReader{db: r} }

// Info returns the store's config, applied index, last zxid, routes and added shards.
// ErrCorruptStore means the DB is not a shard store (or is damaged).
func (s *StoreReader) Info() (StoreInfo, error) {
	var info StoreInfo
	conf, ok, err := s.db.Get(keyConfig)
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
	av, ok, err := s.db.Get(keyApplied)
	if err != nil || !ok || len(av) != 8 {
		return info, fmt.Errorf("%w: applied index missing (%v)", ErrCorruptStore, err)
	}
	info.Applied = binary.BigEndian.Uint64(av)
	zv, ok, err := s.db.Get(keyZxid)
	if err != nil || !ok || len(zv) != 8 {
		return info, fmt.Errorf("%w: zxid missing (%v)", ErrCorruptStore, err)
	}
	info.LastZxid = int64(binary.BigEndian.Uint64(zv))
	if v, ok, err := s.db.Get(keyRoutes); err != nil {
		return info, err
	} else if ok {
		rs, err := decodeRoutes(v)
		if err != nil {
			return info, err
		}
		info.Routes = (&View{routes: rs}).Routes()
	}
	if v, ok, err := s.db.Get(keyAdded); err != nil {
		return info, err
	} else if ok {
		if info.Added, err = decodeAddedList(v); err != nil {
			return info, err
		}
	}
	_, info.Prepared, err = s.db.Get(keyTxn)
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
		if err != nil || n.isStub() {
			return err
		}
		return fn(pathOf(n.key), NodeInfo{n})
	}
	self := nodeKeyBytes(nil, key)
	if v, ok, err := s.db.Get(self); err != nil {
		return err
	} else if ok {
		if err := visit(self, v); err != nil {
			return err
		}
	} else if key != "" {
		return nil
	}
	lo, hi := subtreeRange(key)
	return s.db.Scan(nodeKeyBytes(nil, lo), nodeKeyBytes(nil, hi), visit)
}

// Sessions returns the sessions the store knows of: the ownership epoch recorded for each
// (OpSessionOwner) and the closed sessions' tombstones (close time, Unix ms).
func (s *StoreReader) Sessions() (owners map[int64]uint64, tombstones map[int64]int64, err error) {
	owners, tombstones = map[int64]uint64{}, map[int64]int64{}
	if err := scanOwners(s.db, func(session int64, epoch uint64) { owners[session] = epoch }); err != nil {
		return nil, nil, err
	}
	if err := scanTombstones(s.db, func(session, closed int64) { tombstones[session] = closed }); err != nil {
		return nil, nil, err
	}
	return owners, tombstones, nil
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
