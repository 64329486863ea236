package shard

import (
	"strings"

	"github.com/google/btree"

	"github.com/corral/corral/wire"
)

const btreeDegree = 32

// ephemEntry is one entry of the ephemeral index: a session and the path of one of its
// ephemeral nodes, ordered by session then path.
type ephemEntry struct {
	owner int64
	path  string
	stub  bool // not part of the order: the entry of an ephemeral stub
}

func ephemLess(a, b ephemEntry) bool {
	if a.owner != b.owner {
		return a.owner < b.owner
	}
	return a.path < b.path
}

// tree is the in-memory znode tree with its derived indexes. All three btrees are cloned in O(1)
// for a View.
type tree struct {
	nodes *btree.BTreeG[*node]
	// ephem indexes ephemeral nodes by owner session (rebuilt from nodes on load).
	ephem *btree.BTreeG[ephemEntry]
	// expiring holds the keys of container and TTL nodes (rebuilt from nodes on load).
	expiring *btree.BTreeG[string]
	// stubs is the number of stubs in nodes.
	stubs int
}

func newTree() tree {
	return tree{
		nodes:    btree.NewG(btreeDegree, nodeLess),
		ephem:    btree.NewG(btreeDegree, ephemLess),
		expiring: btree.NewG(btreeDegree, func(a, b string) bool { return a < b }),
	}
}

func (t *tree) clone() tree {
	return tree{nodes: t.nodes.Clone(), ephem: t.ephem.Clone(), expiring: t.expiring.Clone(), stubs: t.stubs}
}

func (t *tree) get(key string) *node { return t.getWith(&node{}, key) }

// getWith is get with a caller's probe node (its key is overwritten), for loops that would
// otherwise allocate a probe per lookup.
func (t *tree) getWith(probe *node, key string) *node {
	probe.key = key
	n, _ := t.nodes.Get(probe)
	return n
}

// put inserts or replaces a node, keeping the indexes in step.
func (t *tree) put(n *node) {
	old, _ := t.nodes.ReplaceOrInsert(n)
	t.unindex(old)
	t.index(n)
}

// remove deletes the node with key, keeping the indexes in step.
func (t *tree) remove(key string) {
	old, _ := t.nodes.Delete(&node{key: key})
	t.unindex(old)
}

func (t *tree) index(n *node) {
	if n.isStub() {
		t.stubs++
	}
	switch kindOf(n.owner) {
	case kindEphemeral:
		t.ephem.ReplaceOrInsert(ephemEntry{owner: n.owner, path: pathOf(n.key), stub: n.isStub()})
	case kindContainer, kindTTL:
		// a stub's owner is 0 or a session: stubs never expire here
		t.expiring.ReplaceOrInsert(n.key)
	}
}

func (t *tree) unindex(n *node) {
	if n == nil {
		return
	}
	if n.isStub() {
		t.stubs--
	}
	switch kindOf(n.owner) {
	case kindEphemeral:
		t.ephem.Delete(ephemEntry{owner: n.owner, path: pathOf(n.key)})
	case kindContainer, kindTTL:
		t.expiring.Delete(n.key)
	}
}

// children returns the names of the children of key in byte order, skipping each child's
// subtree with one seek.
func (t *tree) children(key string) []string {
	lo, hi := subtreeRange(key)
	names := []string{}
	probe := &node{key: lo}
	for {
		var next *node
		t.nodes.AscendRange(probe, &node{key: hi}, func(n *node) bool {
			next = n
			return false
		})
		if next == nil {
			return names
		}
		names = append(names, next.key[len(lo):])
		probe = &node{key: next.key + string(rune(keySepEnd))}
	}
}

// countDescendants returns the number of strict descendants of key, stubs not counted.
func (t *tree) countDescendants(key string) int {
	if key == "" {
		return t.nodes.Len() - 1 - t.stubs
	}
	lo, hi := subtreeRange(key)
	c := 0
	t.nodes.AscendRange(&node{key: lo}, &node{key: hi}, func(n *node) bool {
		if !n.isStub() {
			c++
		}
		return true
	})
	return c
}

// ephemerals returns the paths of session's ephemeral nodes that start with prefix, in order,
// with the session's ephemeral stubs if withStubs.
func (t *tree) ephemerals(session int64, prefix string, withStubs bool) []string {
	out := []string{}
	t.ephem.AscendGreaterOrEqual(ephemEntry{owner: session, path: prefix}, func(e ephemEntry) bool {
		if e.owner != session || !strings.HasPrefix(e.path, prefix) {
			return false
		}
		if withStubs || !e.stub {
			out = append(out, e.path)
		}
		return true
	})
	return out
}

// initialTree returns the tree of a fresh ZooKeeper 3.8 DataTree: "/", "/zookeeper",
// "/zookeeper/quota" and "/zookeeper/config", all with zero stats and empty (non-null) data;
// every ACL is world:anyone:cdrwa except /zookeeper/config, which is world:anyone:r and has
// aversion -1 (DataTree.addConfigNode applies setACL with version -1).
func initialTree() tree {
	t := newTree()
	open := internACL(wire.OpenACLUnsafe)
	t.put(&node{key: "", data: []byte{}, acl: open, numChildren: 1})
	t.put(&node{key: "\x01zookeeper", data: []byte{}, acl: open, numChildren: 2})
	t.put(&node{key: "\x01zookeeper\x01quota", data: []byte{}, acl: open})
	t.put(&node{key: "\x01zookeeper\x01config", data: []byte{}, acl: internACL(wire.ReadACLUnsafe), aversion: -1})
	return t
}

// isSpecialPath is DataTree.isSpecialPath: the nodes delete refuses with BADARGUMENTS.
func isSpecialPath(path string) bool {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}
