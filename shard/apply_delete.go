package shard

import (
	"strings"

	"github.com/corral/corral/wire"
)

// versionMatches is the expected-version test of checkAndIncVersion: -1 matches any version.
func versionMatches(current, expected int32) bool {
	return expected == -1 || expected == current
}

// nextVersion is checkAndIncVersion's increment: version + 1, skipping -1 when the counter wraps
// from MaxInt32 through MinInt32 (ZOOKEEPER-4743), because -1 means "any version".
func nextVersion(v int32) int32 {
	v++
	if v == -1 {
		return 0
	}
	return v
}

// parentForDelete is getParentPathAndValidate: BADARGUMENTS for a path without '/', with a NUL,
// or one of the special paths "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config".
func parentForDelete(path string) (string, bool) {
	parent, ok := splitParent(path)
	if !ok || strings.IndexByte(path, 0) >= 0 || isSpecialPath(path) {
		return "", false
	}
	return parent, true
}

// delete applies delete (2) with ZooKeeper 3.8's check order: BADARGUMENTS (see
// parentForDelete), parent NONODE, parent ACL DELETE (NOAUTH, before the node's own NONODE),
// node NONODE, BADVERSION, NOTEMPTY.
func (t *txn) delete(path string, version int32, auth []wire.ID) wire.Err {
	return t.deleteAs(RoleFull, path, version, auth)
}

// deleteAs is delete in a transaction role (RoleFull is delete itself).
//
// RoleParent (this shard holds "/", the node lives on another shard) runs the parent's part of
// the sequence — BADARGUMENTS, parent NONODE, parent ACL DELETE (NOAUTH) — then NONODE when
// there is no stub at the key, and removes the stub (the parent loses a child, pzxid =
// max(pzxid, zxid)); the only event is NodeChildrenChanged on the parent. A real node at the
// key (it lives here after all) is deleted as by delete.
//
// RoleNode (the node lives here, its parent does not) runs the node's part — BADARGUMENTS,
// NONODE, BADVERSION, NOTEMPTY — and removes the node without touching any parent; the only
// event is NodeDeleted.
func (t *txn) deleteAs(role TxnRole, path string, version int32, auth []wire.ID) wire.Err {
	parentPath, ok := parentForDelete(path)
	if !ok {
		return wire.ErrBadArguments
	}
	if role != RoleNode {
		pkey, ok := parentKey(parentPath)
		var parent *node
		if ok {
			parent = t.visible(pkey)
		}
		if parent == nil {
			return wire.ErrNoNode
		}
		if !t.permitted(parent, wire.PermDelete, auth) {
			return wire.ErrNoAuth
		}
	}
	var n *node
	key, ok := keyOf(path)
	if ok {
		n = t.get(key)
	}
	if role == RoleParent && n != nil && n.isStub() {
		t.removeNode(key, path, n, parentPath)
		return wire.ErrOK
	}
	if n == nil || n.isStub() {
		return wire.ErrNoNode
	}
	if !versionMatches(n.version, version) {
		return wire.ErrBadVersion
	}
	if n.numChildren > 0 {
		return wire.ErrNotEmpty
	}
	if role == RoleNode {
		t.del(key)
		t.event(wire.EventNodeDeleted, path, n.acl)
		t.quotaCount(path, -1, -int64(len(n.data)))
		return wire.ErrOK
	}
	t.removeNode(key, path, n, parentPath)
	return wire.ErrOK
}

// deleteContainer applies the internal deleteContainer (20) proposed by the leader's expiry scan
// (ContainerManager): BADARGUMENTS as delete, NONODE, NOTEMPTY, then BADVERSION unless the node is
// a container, or a TTL node whose mtime + ttl < now (batch time), and BADVERSION when version is
// not -1 and differs. No ACL check. Deviations from ZooKeeper, which re-checks only emptiness and
// "not an ephemeral": a persistent node is refused too (it can only be a container's path
// re-created as a normal node), and a TTL node's expiry is re-checked at apply time with the
// batch's clock, so a setData racing with the scan keeps the node alive.
func (t *txn) deleteContainer(path string, version int32) wire.Err {
	parentPath, ok := parentForDelete(path)
	if !ok {
		return wire.ErrBadArguments
	}
	n, key := t.lookup(path)
	if n == nil {
		return wire.ErrNoNode
	}
	if n.numChildren > 0 {
		return wire.ErrNotEmpty
	}
	switch kindOf(n.owner) {
	case kindContainer:
	case kindTTL:
		if n.mtime+ttlOf(n.owner) >= t.time {
			return wire.ErrBadVersion
		}
	default:
		return wire.ErrBadVersion
	}
	if !versionMatches(n.version, version) {
		return wire.ErrBadVersion
	}
	t.removeNode(key, path, n, parentPath)
	return wire.ErrOK
}

// closeSession deletes every ephemeral node of session in this shard under the one zxid of the
// op, in the order ZooKeeper deletes them (javaorder.go), each with NodeDeleted (its Session
// set to session) and NodeChildrenChanged on its parent (DataTree.killSession), and records the session's tombstone (dropping its ownership epoch). Closing an unknown or already closed
// session only refreshes the tombstone. The session's ephemeral stubs go too, with only the
// parent's NodeChildrenChanged (the node's own shard deletes the node and reports NodeDeleted
// when it applies its closeSession).
func (t *txn) closeSession(session int64) {
	if session == 0 {
		return
	}
	paths := t.s.tree.ephemerals(session, "", true)
	czxids := make([]int64, len(paths))
	for i, path := range paths {
		key, _ := keyOf(path)
		if n := t.get(key); n != nil {
			czxids[i] = n.czxid
		}
	}
	for _, path := range javaHashSetOrder(paths, czxids) {
		key, _ := keyOf(path)
		n := t.get(key)
		if n == nil {
			continue
		}
		parentPath, _ := splitParent(path)
		mark := len(t.events)
		t.removeNode(key, path, n, parentPath)
		for i := mark; i < len(t.events); i++ {
			if t.events[i].Type == wire.EventNodeDeleted {
				t.events[i].Session = session
			}
		}
	}
	t.s.addTombstone(session, t.time)
	t.s.dropSessionOwner(session)
}
