package shard

import (
	"slices"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/wire"
)

// txn is one write op (or one whole multi) being applied: changes are staged in an overlay over
// the tree, so later ops of a multi see the effects of earlier ones, and a failing op discards
// everything (ZooKeeper's outstanding ChangeRecords play this role). commit moves the overlay into
// the tree in first-touch order.
type txn struct {
	s       *State
	zxid    int64
	time    int64
	noACL   bool             // an internal transaction: permission checks pass (Fixup still runs)
	quota   QuotaMode        // how the writes treat quotas (quota.go)
	changes map[string]*node // nil: deleted
	order   []string
	events  []Event
	results []wire.MultiResult // evalTxn's, reused (resultSlice)
}

func (t *txn) begin(zxid, time int64) {
	if t.changes == nil {
		t.changes = make(map[string]*node)
	}
	clear(t.changes)
	t.order = t.order[:0]
	t.events = t.events[:0]
	t.zxid, t.time = zxid, time
	t.noACL = false
	t.quota = QuotaOff
}

// resultSlice returns n cleared results in the txn's buffer, which the next call reuses: a
// transaction's results are encoded into its reply before anything else is evaluated.
func (t *txn) resultSlice(n int) []wire.MultiResult {
	t.results = slices.Grow(t.results[:0], n)[:n]
	clear(t.results)
	return t.results
}

func (t *txn) get(key string) *node {
	if n, ok := t.changes[key]; ok {
		return n
	}
	return t.s.tree.get(key)
}

// visible returns the node at key, or nil if there is none or it is a stub: a stub stands for a
// node of another shard and is no node of this one (only NODEEXISTS and the parent side of a
// transaction see it).
func (t *txn) visible(key string) *node {
	if n := t.get(key); n != nil && !n.isStub() {
		return n
	}
	return nil
}

// lookup returns the (non-stub) node at path, or nil.
func (t *txn) lookup(path string) (*node, string) {
	key, ok := keyOf(path)
	if !ok {
		return nil, ""
	}
	return t.visible(key), key
}

// permitted is acl.Check on n's ACL, or true in an internal transaction.
func (t *txn) permitted(n *node, perm int32, auth []wire.ID) bool {
	return t.noACL || acl.Check(n.aclSlice(), perm, auth)
}

func (t *txn) stage(key string, n *node) {
	if _, ok := t.changes[key]; !ok {
		t.order = append(t.order, key)
	}
	t.changes[key] = n
}

func (t *txn) put(n *node) { t.stage(n.key, n) }

func (t *txn) del(key string) { t.stage(key, nil) }

func (t *txn) event(typ wire.EventType, path string, acl *aclList) {
	var a []wire.ACL
	if acl != nil {
		a = acl.acl
	}
	t.events = append(t.events, Event{Type: typ, Path: path, Zxid: t.zxid, ACL: a})
}

// commit applies the overlay to the tree and appends the events to out.
func (t *txn) commit(out []Event) []Event {
	s := t.s
	for _, key := range t.order {
		if n := t.changes[key]; n != nil {
			s.tree.put(n)
		} else {
			s.tree.remove(key)
		}
		if s.track {
			s.dirty.nodes[key] = struct{}{}
		}
	}
	return append(out, t.events...)
}

// removeNode deletes the node n at (key, path) whose parent is parentPath (as splitParent
// returns it): the parent loses a child and takes the zxid as pzxid if it is larger (DataTree
// .deleteNode); its stored cversion, mzxid and mtime are untouched. Events: NodeDeleted on the
// path (not for a stub: the node's own shard reports it), then NodeChildrenChanged on the
// parent.
func (t *txn) removeNode(key, path string, n *node, parentPath string) {
	pkey, _ := parentKey(parentPath)
	if p := t.get(pkey); p != nil {
		p = p.clone()
		p.numChildren--
		if t.zxid > p.pzxid {
			p.pzxid = t.zxid
		}
		t.put(p)
		t.del(key)
		if !n.isStub() {
			t.event(wire.EventNodeDeleted, path, n.acl)
			t.quotaCount(path, -1, -int64(len(n.data)))
		}
		t.event(wire.EventNodeChildrenChanged, displayParent(parentPath), p.acl)
		return
	}
	// A node whose parent lives outside this shard (a mounted subtree's root) has no parent
	// record to update.
	t.del(key)
	t.event(wire.EventNodeDeleted, path, n.acl)
	t.quotaCount(path, -1, -int64(len(n.data)))
}
