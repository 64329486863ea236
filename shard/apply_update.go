package shard

import (
	"bytes"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/wire"
)

// setData applies setData (5): validatePath (BADARGUMENTS), NONODE, ACL WRITE (NOAUTH),
// BADVERSION. version+1, mzxid, mtime and data change; NodeDataChanged.
func (t *txn) setData(path string, data []byte, version int32, auth []wire.ID) (wire.Stat, wire.Err) {
	if !validatePath(path) {
		return wire.Stat{}, wire.ErrBadArguments
	}
	n, _ := t.lookup(path)
	if n == nil {
		return wire.Stat{}, wire.ErrNoNode
	}
	if !t.permitted(n, wire.PermWrite, auth) {
		return wire.Stat{}, wire.ErrNoAuth
	}
	dBytes := int64(len(data) - len(n.data))
	if err := t.quotaCheck(path, 0, dBytes); err != wire.ErrOK {
		return wire.Stat{}, err
	}
	if !versionMatches(n.version, version) {
		return wire.Stat{}, wire.ErrBadVersion
	}
	c := n.clone()
	c.version = nextVersion(n.version)
	c.mzxid = t.zxid
	c.mtime = t.time
	c.data = bytes.Clone(data)
	t.put(c)
	t.event(wire.EventNodeDataChanged, path, c.acl)
	t.quotaCount(path, 0, dBytes)
	return c.stat(), wire.ErrOK
}

// setACL applies setACL (7): validatePath (BADARGUMENTS), fixupACL (INVALIDACL), NONODE, ACL
// ADMIN (NOAUTH), BADVERSION against aversion. Only the ACL and aversion change (no mzxid, no
// mtime); no watch event.
func (t *txn) setACL(path string, acls []wire.ACL, version int32, auth []wire.ID) (wire.Stat, wire.Err) {
	if !validatePath(path) {
		return wire.Stat{}, wire.ErrBadArguments
	}
	fixed, err := acl.Fixup(acls, auth)
	if err != wire.ErrOK {
		return wire.Stat{}, err
	}
	n, _ := t.lookup(path)
	if n == nil {
		return wire.Stat{}, wire.ErrNoNode
	}
	if !t.permitted(n, wire.PermAdmin, auth) {
		return wire.Stat{}, wire.ErrNoAuth
	}
	if !versionMatches(n.aversion, version) {
		return wire.Stat{}, wire.ErrBadVersion
	}
	c := n.clone()
	c.aversion = nextVersion(n.aversion)
	c.acl = internACL(fixed)
	t.put(c)
	return c.stat(), wire.ErrOK
}

// check applies check (13): validatePath (BADARGUMENTS), NONODE, ACL READ (NOAUTH), BADVERSION.
// It changes nothing.
func (t *txn) check(path string, version int32, auth []wire.ID) wire.Err {
	if !validatePath(path) {
		return wire.ErrBadArguments
	}
	n, _ := t.lookup(path)
	if n == nil {
		return wire.ErrNoNode
	}
	if !t.permitted(n, wire.PermRead, auth) {
		return wire.ErrNoAuth
	}
	if !versionMatches(n.version, version) {
		return wire.ErrBadVersion
	}
	return wire.ErrOK
}
