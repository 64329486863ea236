package shard

import (
	"encoding/binary"

	"github.com/corral/corral/wire"
)

// Stats set verbatim: the import and restore primitive (docs/operations.md "Moving in").
//
// A tree brought over from ZooKeeper (or restored from a backup) is first built with ordinary
// creates, setACLs and so on, which give every znode Corral's own zxids, times and versions.
// OpSetStat then overwrites one existing znode's stat fields with the source's: czxid, mzxid,
// pzxid, ctime, mtime, version, aversion and the stored cversion (the number of child
// creations, which ZooKeeper persists and which names the next sequential child; clients see
// cversion = 2 × stored − numChildren). numChildren, dataLength and the ephemeral owner follow
// from the tree and are not set. The op fires no watch (nothing a client asked about changed
// in meaning), and its own zxid, which the proposer raises above every zxid it sets (MinZxid),
// keeps the shard's clock above the stats it wrote. It is an internal op: servers at format
// level 3 propose it for an operator's import, never for a client.

// OpSetStat overwrites the stat of an existing znode (body: SetStatBody).
const OpSetStat wire.OpCode = 1007

// SetStat is the body of an OpSetStat: the znode's path and its new stat fields.
type SetStat struct {
	Path                string
	Czxid, Mzxid, Pzxid int64
	Ctime, Mtime        int64
	Version, Aversion   int32
	// Cversion is the stored count of child creations (ZooKeeper's StatPersisted.cversion),
	// not the cversion clients see.
	Cversion int32
	// Root (format.LevelCut, a restore of "/") allows a stored cversion one below the child
	// count: the root's child /zookeeper was never created, so no creation counted it. It
	// travels as a trailing byte, which a binary before level 6 (LevelCut) refuses (MARSHALLINGERROR).
	Root bool
}

// MaxZxid is the largest zxid the stat carries: the op's MinZxid.
func (st *SetStat) MaxZxid() int64 { return max(st.Czxid, st.Mzxid, st.Pzxid) }

// SetStatBody encodes st as an OpSetStat body.
func SetStatBody(st *SetStat) []byte {
	b := binary.AppendUvarint(nil, uint64(len(st.Path)))
	b = append(b, st.Path...)
	for _, v := range []int64{st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime,
		int64(st.Version), int64(st.Aversion), int64(st.Cversion)} {
		b = binary.AppendVarint(b, v)
	}
	if st.Root {
		b = append(b, 1)
	}
	return b
}

func decodeSetStat(body []byte) (SetStat, bool) {
	r := reader{buf: body}
	var st SetStat
	st.Path = r.str()
	st.Czxid, st.Mzxid, st.Pzxid = r.varint(), r.varint(), r.varint()
	st.Ctime, st.Mtime = r.varint(), r.varint()
	st.Version, st.Aversion, st.Cversion = r.int32(), r.int32(), r.int32()
	if r.err == nil && r.off < len(r.buf) {
		st.Root = r.byte() == 1 && st.Path == "/"
		if !st.Root {
			r.fail("root flag")
		}
	}
	return st, r.finish() == nil
}

// setStat applies OpSetStat: validatePath (BADARGUMENTS), NONODE (also for a stub: the node
// lives on another shard), BADARGUMENTS for a negative version or a stored cversion below the
// node's child count.
func (t *txn) setStat(st *SetStat) wire.Err {
	if !validatePath(st.Path) {
		return wire.ErrBadArguments
	}
	n, _ := t.lookup(st.Path)
	if n == nil {
		return wire.ErrNoNode
	}
	least := n.numChildren
	if st.Root {
		least-- // /zookeeper
	}
	if st.Version < 0 || st.Aversion < 0 || st.Cversion < least {
		return wire.ErrBadArguments
	}
	c := n.clone()
	c.czxid, c.mzxid, c.pzxid = st.Czxid, st.Mzxid, st.Pzxid
	c.ctime, c.mtime = st.Ctime, st.Mtime
	c.version, c.aversion, c.cversion = st.Version, st.Aversion, st.Cversion
	t.put(c)
	return wire.ErrOK
}

// ClockBody is the body of an OpSetStat that names no znode. It changes nothing and fails with
// BADARGUMENTS, but like every write it consumes a zxid above its op's MinZxid: proposed on
// every data shard with MinZxid = the largest zxid an import or restore set, it moves every
// shard's clock past it, so that every later write anywhere gets a larger zxid than every
// restored one (an OpSetStat alone moves only its own shard's clock).
func ClockBody() []byte { return SetStatBody(&SetStat{}) }
