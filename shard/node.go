package shard

import (
	"math"

	"github.com/corral/corral/wire"
)

// Special ephemeralOwner encodings (ZooKeeper's EphemeralType).
const (
	// containerOwner marks a container node.
	containerOwner int64 = math.MinInt64
	// ttlMask marks a TTL node: the owner is ttlMask | ttl with 0 < ttl <= wire.MaxTTL.
	ttlMask int64 = -0x0100_0000_0000_0000 // 0xFF00_0000_0000_0000
)

// nodeKind is a node's type, derived from its raw ephemeralOwner.
type nodeKind uint8

const (
	kindPersistent nodeKind = iota // owner 0
	kindEphemeral                  // owner = session id
	kindContainer                  // owner = containerOwner
	kindTTL                        // owner = ttlMask | ttl
)

// kindOf classifies a raw ephemeralOwner. Session ids must therefore never have 0xFF as their top
// byte nor equal math.MinInt64 (ZooKeeper has the same rule: server ids <= 254 with extended
// types).
func kindOf(owner int64) nodeKind {
	switch {
	case owner == 0:
		return kindPersistent
	case owner == containerOwner:
		return kindContainer
	case owner&ttlMask == ttlMask:
		return kindTTL
	}
	return kindEphemeral
}

// ttlOf returns the TTL of a TTL node's owner.
func ttlOf(owner int64) int64 { return owner &^ ttlMask }

// node is one znode as stored: ZooKeeper's StatPersisted (with the stored, create-counting
// cversion and the raw ephemeralOwner) plus the child count, the data and the ACL. A node is
// immutable once it is in a tree: every change builds a new *node (copy on write), so views
// share nodes with the live state without locks.
type node struct {
	key         string
	czxid       int64
	mzxid       int64
	pzxid       int64
	ctime       int64
	mtime       int64
	owner       int64
	version     int32
	cversion    int32 // stored: number of child creations; drives the sequential suffix
	aversion    int32
	numChildren int32
	data        []byte // nil (null) and empty are distinct
	// acl is the node's interned ACL list, or stubACL for a stub: the parent side's entry for a
	// top-level node that lives on another shard (see doc.go, "Stubs"), which counts as a child
	// of "/" but is no node of this shard. (A flag of its own would put node in the next size
	// class, 16 bytes more per znode.)
	acl *aclList
}

// stubACL marks a stub (node.acl); it is never interned, so no real node shares it. A stub has
// no ACL of its own: as a list it is empty, as internACL(nil) is.
var stubACL = &aclList{}

// isStub reports whether n is a stub (see node.acl).
func (n *node) isStub() bool { return n.acl == stubACL }

func nodeLess(a, b *node) bool { return a.key < b.key }

// clone returns a shallow copy for modification (data and acl are immutable and shared).
func (n *node) clone() *node {
	c := *n
	return &c
}

// stat returns the stat clients see (DataNode.copyStat): cversion = stored*2 - numChildren (every
// create and every delete counts once), ephemeralOwner 0 for containers and TTL nodes,
// dataLength = len(data).
func (n *node) stat() wire.Stat {
	owner := n.owner
	if kindOf(owner) != kindEphemeral {
		owner = 0
	}
	return wire.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       n.cversion*2 - n.numChildren,
		Aversion:       n.aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.data)),
		NumChildren:    n.numChildren,
		Pzxid:          n.pzxid,
	}
}

func (n *node) aclSlice() []wire.ACL {
	if n.acl == nil {
		return nil
	}
	return n.acl.acl
}

// NodeInfo is a read-only handle on a node of a View.
type NodeInfo struct{ n *node }

// Path returns the node's path.
func (i NodeInfo) Path() string { return pathOf(i.n.key) }

// Stat returns the stat as clients see it.
func (i NodeInfo) Stat() wire.Stat { return i.n.stat() }

// Data returns the node's data (nil for null). The slice is shared: never modify it.
func (i NodeInfo) Data() []byte { return i.n.data }

// ACL returns the node's ACL. The slice is shared: never modify it.
func (i NodeInfo) ACL() []wire.ACL { return i.n.aclSlice() }

// EphemeralOwner returns the raw stored owner: a session id for ephemerals, 0 for persistent
// nodes, math.MinInt64 for containers and 0xFF00_0000_0000_0000|ttl for TTL nodes.
func (i NodeInfo) EphemeralOwner() int64 { return i.n.owner }

// StoredCversion returns the stored child-creation counter (the next sequential suffix).
func (i NodeInfo) StoredCversion() int32 { return i.n.cversion }
