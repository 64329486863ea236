package shard

import (
	"strings"

	"github.com/corral/corral/acl"
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
	parentPath, ok := parentForDelete(path)
	if !ok {
		return wire.ErrBadArguments
	}
	pkey, ok := parentKey(parentPath)
	var parent *node
	if ok {
		parent = t.get(pkey)
	}
	if parent == nil {
		return wire.ErrNoNode
	}
	if !acl.Check(parent.aclSlice(), wire.PermDelete, auth) {
		return wire.ErrNoAuth
	}
	n, key := t.lookup(path)
	if n == nil {
		return wire.ErrNoNode
	}
	if !versionMatches(n.version, version) {
		return wire.ErrBadVersion
	}
	if n.numChildren > 0 {
		return wire.ErrNotEmpty
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
// op, in path order, each with NodeDeleted and NodeChildrenChanged on its parent (DataTree
// .killSession), and records the session's tombstone. Closing an unknown or already closed
// session only refreshes the tombstone.
func (t *txn) closeSession(session int64) {
	if session == 0 {
		return
	}
	paths := t.s.tree.ephemerals(session, "")
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
		t.removeNode(key, path, n, parentPath)
	}
	t.s.addTombstone(session, t.time)
}
