package shard

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The records of a state: how a replica stores it (package replica keeps them in pebble, one DB
// per replica, and streams them in snapshots). A record is a key
// and a value; the state writes its records to a RecordWriter and loads from a RecordReader, and
// knows nothing of where they are kept:
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
// WriteChanges writes the nodes an apply changed, the proposer table changes, the tombstones,
// the transaction state, "ma" and "mz" together; a replica writes them in one batch, so the
// applied index is always persisted atomically with the state it describes.
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

// AttachReplica makes s a replica's state: from now on every apply records what it changed for
// WriteChanges, and hands views between a batch's ops to taps (which may be nil), naming them
// shard shardID.
func (s *State) AttachReplica(taps *Taps, shardID uint64) {
	s.track = true
	s.taps, s.tapShard = taps, shardID
}

// Pending reports what the applies changed since the last WriteChanges: how many znodes
// (written or deleted), and whether anything changed at all.
func (s *State) Pending() (nodes int, any bool) { return len(s.dirty.nodes), !s.dirty.empty() }

// Estimates of what WriteChanges passes per record beyond a znode's key and data: a node value's
// stat and ACL, a cached batch result, any other record, and the store's own framing of each.
const (
	nodeValueEstimate   = 96
	resultValueEstimate = 256
	otherValueEstimate  = 64
	recordFraming       = 16
)

// PendingBytes estimates the bytes of the keys and values WriteChanges will write now, so that a
// writer can size its buffer once instead of growing it step by step (replica.Machine's flush).
// It only estimates: a writer must cope with more or less.
func (s *State) PendingBytes() int {
	n := 0
	var probe node
	for key := range s.dirty.nodes {
		n += 1 + len(key) + recordFraming
		if nd := s.tree.getWith(&probe, key); nd != nil {
			n += len(nd.data) + nodeValueEstimate
		}
	}
	n += (len(s.dirty.results) + len(s.dirty.dropped)) * (resultValueEstimate + recordFraming)
	n += (len(s.dirty.proposers) + len(s.dirty.tombstones) + len(s.dirty.owners) + len(s.dirty.decisions) + 4) *
		(otherValueEstimate + recordFraming)
	return n
}

// Len returns the number of znodes in the state.
func (s *State) Len() int { return s.tree.nodes.Len() }

// RecordWriter receives a state's records.
type RecordWriter interface {
	Set(key, value []byte)
	Delete(key []byte)
}

// RecordReader reads a state's stored records: one by key (the value is the caller's), and
// those with keys in [lo, hi) in key order (key and value valid only during f's call; an error
// of f ends the scan and is returned).
type RecordReader interface {
	Get(key []byte) (value []byte, found bool, err error)
	Scan(lo, hi []byte, f func(key, value []byte) error) error
}

// scanTombstones calls f with every closed-session tombstone record: the session and its close
// time (Unix ms).
func scanTombstones(r RecordReader, f func(session, closed int64)) error {
	return scanPrefix(r, prefixTombstone, func(k, v []byte) error {
		rd := reader{buf: v}
		t := rd.varint()
		if len(k) != 9 || rd.finish() != nil {
			return fmt.Errorf("%w: tombstone %x", ErrCorruptStore, k)
		}
		f(int64(binary.BigEndian.Uint64(k[1:])), t)
		return nil
	})
}

// scanOwners calls f with every session ownership record: the session and its epoch (never 0).
func scanOwners(r RecordReader, f func(session int64, epoch uint64)) error {
	return scanPrefix(r, prefixOwner, func(k, v []byte) error {
		rd := reader{buf: v}
		e := rd.uvarint()
		if len(k) != 9 || rd.finish() != nil || e == 0 {
			return fmt.Errorf("%w: session owner %x", ErrCorruptStore, k)
		}
		f(int64(binary.BigEndian.Uint64(k[1:])), e)
		return nil
	})
}

// scanPrefix scans the records whose keys start with the byte p.
func scanPrefix(r RecordReader, p byte, f func(key, value []byte) error) error {
	return r.Scan([]byte{p}, []byte{p + 1}, f)
}

func encodeConfig(cfg StateConfig) []byte {
	b := []byte{cfg.Tag, 0}
	if cfg.OwnsRoot {
		b[1] = 1
	}
	return appendStr(b, cfg.Root)
}

// WriteInitial writes the records of a fresh state (applied index 0): its configuration, the
// applied index, the zxid and its nodes.
func (s *State) WriteInitial(w RecordWriter) {
	w.Set(keyConfig, encodeConfig(s.cfg))
	w.Set(keyApplied, binary.BigEndian.AppendUint64(nil, 0))
	w.Set(keyZxid, binary.BigEndian.AppendUint64(nil, uint64(s.lastZxid)))
	var kb, vb []byte
	s.tree.nodes.Ascend(func(n *node) bool {
		kb = nodeKeyBytes(kb[:0], n.key)
		vb = appendNode(vb[:0], n)
		w.Set(kb, vb)
		return true
	})
}

// WriteChanges writes the records the state changed since the last call (its dirty set, with
// Track on), the applied index and the last zxid, and forgets the changes. The writer may keep
// the slices it is given only until its next call.
func (s *State) WriteChanges(w RecordWriter, applied uint64) {
	var kb, vb []byte
	var probe node
	for key := range s.dirty.nodes {
		kb = nodeKeyBytes(kb[:0], key)
		if n := s.tree.getWith(&probe, key); n != nil {
			vb = appendNode(vb[:0], n)
			w.Set(kb, vb)
		} else {
			w.Delete(kb)
		}
	}
	for id := range s.dirty.proposers {
		if p, ok := s.proposers[id]; ok {
			w.Set(proposerKeyBytes(id), appendProposer(nil, p))
		} else {
			w.Delete(proposerKeyBytes(id))
		}
	}
	// Drops before writes: a slot evicted and rewritten in the same flush keeps the new value.
	for _, k := range s.dirty.dropped {
		w.Delete(resultKeyBytes(k.proposer, k.seq))
	}
	for _, k := range s.dirty.results {
		p, ok := s.proposers[k.proposer]
		if !ok {
			continue
		}
		if results, ok := p.cached(k.seq); ok {
			w.Set(resultKeyBytes(k.proposer, k.seq), appendResults(nil, results))
		}
	}
	for session := range s.dirty.tombstones {
		if t, ok := s.tombstones.bySession[session]; ok {
			w.Set(tombKeyBytes(session), binary.AppendVarint(nil, t))
		} else {
			w.Delete(tombKeyBytes(session))
		}
	}
	for session := range s.dirty.owners {
		if e, ok := s.owners[session]; ok {
			w.Set(ownerKeyBytes(session), binary.AppendUvarint(nil, e))
		} else {
			w.Delete(ownerKeyBytes(session))
		}
	}
	if s.dirty.prepared {
		if s.prepared != nil {
			w.Set(keyTxn, appendPrepared(nil, s.prepared))
		} else {
			w.Delete(keyTxn)
		}
	}
	if s.dirty.routes {
		w.Set(keyRoutes, appendRoutes(nil, s.routes))
	}
	if s.dirty.added {
		w.Set(keyAdded, appendAddedList(nil, s.added))
	}
	for id := range s.dirty.decisions {
		if d, ok := s.decisions.byID[id]; ok {
			w.Set(decisionKeyBytes(id), appendDecision(nil, d))
		} else {
			w.Delete(decisionKeyBytes(id))
		}
	}
	w.Set(keyApplied, binary.BigEndian.AppendUint64(nil, applied))
	w.Set(keyZxid, binary.BigEndian.AppendUint64(nil, uint64(s.lastZxid)))
	s.dirty.reset()
}

// LoadState reads a whole state from its records, with the applied index stored with it. found
// is false when there are none (a new replica).
func LoadState(db RecordReader, cfg StateConfig) (s *State, applied uint64, found bool, err error) {
	conf, ok, err := db.Get(keyConfig)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	if want := encodeConfig(cfg); !bytes.Equal(conf[:2], want[:2]) {
		return nil, 0, false, fmt.Errorf("%w: stored tag/root flag %v, configured %v", ErrConfigMismatch, conf[:2], want[:2])
	}
	s = NewState(cfg)
	s.tree = newTree()
	av, ok, err := db.Get(keyApplied)
	if err != nil || !ok || len(av) != 8 {
		return nil, 0, false, fmt.Errorf("%w: applied index missing (%v)", ErrCorruptStore, err)
	}
	applied = binary.BigEndian.Uint64(av)
	zv, ok, err := db.Get(keyZxid)
	if err != nil || !ok || len(zv) != 8 {
		return nil, 0, false, fmt.Errorf("%w: zxid missing (%v)", ErrCorruptStore, err)
	}
	s.lastZxid = int64(binary.BigEndian.Uint64(zv))
	if tv, ok, err := db.Get(keyTxn); err != nil {
		return nil, 0, false, err
	} else if ok {
		if s.prepared, err = decodePrepared(tv); err != nil {
			return nil, 0, false, err
		}
	}
	if rv, ok, err := db.Get(keyRoutes); err != nil {
		return nil, 0, false, err
	} else if ok {
		if s.routes, err = decodeRoutes(rv); err != nil {
			return nil, 0, false, err
		}
	}
	if av, ok, err := db.Get(keyAdded); err != nil {
		return nil, 0, false, err
	} else if ok {
		if s.added, err = decodeAddedList(av); err != nil {
			return nil, 0, false, err
		}
	}

	err = scanPrefix(db, prefixDecision, func(k, v []byte) error {
		if len(k) != 9 {
			return fmt.Errorf("%w: decision key %x", ErrCorruptStore, k)
		}
		d, err := decodeDecision(v)
		if err != nil {
			return err
		}
		s.decisions.add(binary.BigEndian.Uint64(k[1:]), d)
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	err = scanPrefix(db, prefixNode, func(k, v []byte) error {
		n, err := decodeNode(string(k[1:]), v)
		if err != nil {
			return err
		}
		s.tree.put(n)
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	err = scanPrefix(db, prefixProposer, func(k, v []byte) error {
		if len(k) != 9 {
			return fmt.Errorf("%w: proposer key %x", ErrCorruptStore, k)
		}
		p, err := decodeProposer(v)
		if err != nil {
			return err
		}
		s.proposers[binary.BigEndian.Uint64(k[1:])] = p
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	err = scanPrefix(db, prefixResult, func(k, v []byte) error {
		if len(k) != 17 {
			return fmt.Errorf("%w: result key %x", ErrCorruptStore, k)
		}
		p := s.proposers[binary.BigEndian.Uint64(k[1:])]
		if p == nil {
			return nil
		}
		results, err := decodeResults(v)
		if err != nil {
			return err
		}
		p.record(binary.BigEndian.Uint64(k[9:]), results)
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	if err := scanTombstones(db, func(session, closed int64) { s.tombstones.add(session, closed) }); err != nil {
		return nil, 0, false, err
	}
	err = scanOwners(db, func(session int64, epoch uint64) { s.owners[session] = epoch })
	if err != nil {
		return nil, 0, false, err
	}
	return s, applied, true, nil
}
