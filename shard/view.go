package shard

import (
	"strings"

	"github.com/corral/corral/wire"
)

// View is an immutable snapshot of a shard's state, published after every applied Update. Any
// number of goroutines may read a View concurrently, without locks, while the shard goes on
// applying; everything it returns is shared and must not be modified.
type View struct {
	shardID  uint64
	zxid     int64
	tree     tree
	prepared *PreparedInfo // nil: no transaction prepared
	routes   *routes       // shared with the state that published it
	added    []AddedShard  // shared with the state that published it
	blocked  uint64        // State.blocked when the view was taken
}

// BlockedBatches returns how many batches this replica applied as BatchBlocked (writes that
// waited behind a prepared transaction) since it was loaded. Only its changes mean anything:
// a coordinator that sees it grow while its session's group transactions keep the shard
// prepared lets the waiting writes through (server/group.go, docs/design.md §8). It restarts
// from zero when the replica is loaded again.
func (v *View) BlockedBatches() uint64 { return v.blocked }

// PreparedInfo describes the cross-shard transaction a shard holds prepared.
type PreparedInfo struct {
	ID, Anchor  uint64
	PrepareTime int64 // batch time of the prepare (Unix ms)
	Deadline    int64 // Unix ms; after it any server may resolve the txn at the anchor
	// Group and Parts: a group transaction (TxnPrepare.Group), which recovery resolves by
	// probing every participant (Parts, read-only) instead of asking the anchor.
	Group bool
	Parts []uint64
	// Cut: a backup's consistent cut (cut.go), which blocks every batch while prepared.
	Cut bool
}

// Prepared returns the transaction this view's shard holds prepared, if any. While it does, the
// shard blocks batches that touch the transaction's znodes or reach its reserved zxid floor
// (see BatchBlocked); it commits above the zxid of every view taken meanwhile.
func (v *View) Prepared() (PreparedInfo, bool) {
	if v.prepared == nil {
		return PreparedInfo{}, false
	}
	return *v.prepared, true
}

// ShardID returns the shard the view belongs to.
func (v *View) ShardID() uint64 { return v.shardID }

// Zxid returns the shard's last assigned zxid at the time of the view: the view reflects every
// write with a zxid up to it and none after it.
func (v *View) Zxid() int64 { return v.zxid }

// Len returns the number of nodes in the view (stubs not counted: see doc.go, "Stubs").
func (v *View) Len() int { return v.tree.nodes.Len() - v.tree.stubs }

// ApproximateDataSize is ZooKeeper's approximate data size (DataTree.approximateDataSize) of
// the znodes this shard serves: the length of every path plus the length of its data. It
// walks every node.
func (v *View) ApproximateDataSize() int64 {
	var size int64
	v.tree.nodes.Ascend(func(n *node) bool {
		if !n.isStub() {
			size += int64(len(pathOf(n.key)) + len(n.data))
		}
		return true
	})
	return size
}

// node returns the node at key, or nil if there is none or it is a stub.
func (v *View) node(key string) *node {
	if n := v.tree.get(key); n != nil && !n.isStub() {
		return n
	}
	return nil
}

// Get returns the node at path. A stub is not a node: Get reports it absent.
func (v *View) Get(path string) (NodeInfo, bool) {
	key, ok := keyOf(path)
	if !ok {
		return NodeInfo{}, false
	}
	n := v.node(key)
	if n == nil {
		return NodeInfo{}, false
	}
	return NodeInfo{n}, true
}

// Children returns the names of the children of path in byte order (nil if path does not
// exist), stubs included: the children of "/" on the root shard are all top-level znodes,
// wherever they live. ZooKeeper's order is undefined; clients sort.
func (v *View) Children(path string) []string {
	key, ok := keyOf(path)
	if !ok || v.node(key) == nil {
		return nil
	}
	return v.tree.children(key)
}

// CountDescendants returns the number of nodes strictly below path in this shard (0 if path
// does not exist), stubs not counted. For "/" it is every node of the shard but the root, as
// getAllChildrenNumber reports.
func (v *View) CountDescendants(path string) int {
	key, ok := keyOf(path)
	if !ok || v.node(key) == nil {
		return 0
	}
	return v.tree.countDescendants(key)
}

// Ephemerals returns the paths of session's ephemeral nodes in this shard that start with prefix
// (a plain string prefix), in byte order, as getEphemerals: a prefix that is empty or "/" after
// Java's trim selects all of them. Ephemeral stubs are not listed (the node's own shard lists
// the node), so the lists of different shards never overlap.
func (v *View) Ephemerals(session int64, prefix string) []string {
	if allEphemerals(prefix) {
		prefix = ""
	}
	return v.tree.ephemerals(session, prefix, false)
}

// Walk calls fn for each node of the subtree rooted at path (path itself first), in key order,
// until fn returns false. Stubs are skipped.
func (v *View) Walk(path string, fn func(path string, n NodeInfo) bool) {
	key, ok := keyOf(path)
	if !ok {
		return
	}
	n := v.node(key)
	if n == nil || !fn(path, NodeInfo{n}) {
		return
	}
	lo, hi := subtreeRange(key)
	if key == "" {
		lo, hi = "\x01", "\x02"
	}
	v.tree.nodes.AscendRange(&node{key: lo}, &node{key: hi}, func(n *node) bool {
		return n.isStub() || fn(pathOf(n.key), NodeInfo{n})
	})
}

// ExpiryCandidates returns up to max paths the leader should propose OpDeleteContainer for at
// time now (Unix ms), as ZooKeeper's ContainerManager.getCandidates: containers without
// children that have had at least one (stored cversion > 0), and TTL nodes without children
// whose mtime + ttl < now. Never-used containers are not candidates
// (znode.container.maxNeverUsedIntervalMs = 0, ZooKeeper's default). Stubs never are (their
// owner is 0 or a session).
func (v *View) ExpiryCandidates(now int64, max int) []string {
	var out []string
	if max <= 0 {
		return nil
	}
	v.tree.expiring.Ascend(func(key string) bool {
		n := v.tree.get(key)
		if n == nil || n.numChildren > 0 {
			return true
		}
		switch kindOf(n.owner) {
		case kindContainer:
			if n.cversion <= 0 {
				return true
			}
		case kindTTL:
			if n.mtime+ttlOf(n.owner) >= now {
				return true
			}
		default:
			return true
		}
		out = append(out, pathOf(key))
		return len(out) < max
	})
	return out
}

// allEphemerals reports whether prefix selects all of a session's ephemerals
// (null, blank after Java's trim, or "/").
func allEphemerals(prefix string) bool {
	p := strings.TrimFunc(prefix, func(r rune) bool { return r <= ' ' })
	return p == "" || p == "/"
}

// GetEphemerals answers getEphemerals (103) for session: its ephemeral paths in this shard that
// start with req.PrefixPath, or all of them when the prefix is empty or "/" after trimming
// (FinalRequestProcessor). It needs no ACL.
func (v *View) GetEphemerals(session int64, req *wire.GetEphemeralsRequest) (wire.Err, wire.Record) {
	return wire.ErrOK, &wire.GetEphemeralsResponse{Ephemerals: v.Ephemerals(session, req.PrefixPath)}
}
