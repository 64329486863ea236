package shard

import (
	"bytes"
	"fmt"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/wire"
)

// createArgs unifies CreateRequest and CreateTTLRequest.
type createArgs struct {
	path  string
	data  []byte
	acl   []wire.ACL
	flags int32
	ttl   int64 // -1 for create, create2, createContainer
}

// create mode properties (CreateMode.fromFlag).
func modeValid(flags int32) bool {
	return flags >= wire.FlagPersistent && flags <= wire.FlagPersistentSequentialWithTTL
}
func modeEphemeral(flags int32) bool {
	return flags == wire.FlagEphemeral || flags == wire.FlagEphemeralSequential
}
func modeSequential(flags int32) bool {
	return flags == wire.FlagPersistentSequential || flags == wire.FlagEphemeralSequential || flags == wire.FlagPersistentSequentialWithTTL
}
func modeTTL(flags int32) bool {
	return flags == wire.FlagPersistentWithTTL || flags == wire.FlagPersistentSequentialWithTTL
}

// create applies create (1), create2 (15), createContainer (19) and createTTL (21) with
// ZooKeeper 3.8's check order (PrepRequestProcessor.pRequest2TxnCreate):
//
//	flags -> CreateMode                       BADARGUMENTS
//	TTL mode without extended types           UNIMPLEMENTED
//	TTL range / ttl given to a non-TTL mode   BADARGUMENTS
//	ephemeral: session 0 or closed            SESSIONEXPIRED
//	no '/' or a NUL in the path               BADARGUMENTS
//	fixupACL                                  INVALIDACL
//	parent lookup                             NONODE
//	parent ACL CREATE                         NOAUTH
//	(sequential suffix appended)
//	validatePath on the final path            BADARGUMENTS
//	node exists                               NODEEXISTS
//	parent is ephemeral                       NOCHILDRENFOREPHEMERALS
//
// The node type follows the opcode, as in ZooKeeper's txns: createContainer always makes a
// container and createTTL a TTL node, whatever the flags; create and create2 make an ephemeral
// for the ephemeral modes and a persistent node otherwise (also for flag 4, CONTAINER).
// Deviation: createTTL with a non-TTL mode is BADARGUMENTS even for a negative ttl (ZooKeeper
// accepts that request in prep and then fails while applying it).
func (t *txn) create(code wire.OpCode, a *createArgs, session int64, auth []wire.ID) (string, wire.Stat, wire.Err) {
	return t.createAs(RoleFull, code, a, session, auth)
}

// createAs is create in a transaction role (RoleFull is create itself). A stub counts as an
// existing node for NODEEXISTS but never as a parent.
//
// RoleParent (this shard holds the parent "/", the node lives on another shard) runs the whole
// check sequence above, then puts a stub at the key instead of the node: no data, owner the
// session for an ephemeral mode and 0 otherwise, czxid = mzxid = pzxid = the zxid. The parent
// is updated as for a create (cversion, numChildren, pzxid); the only event is
// NodeChildrenChanged on the parent. The returned path is final (sequential suffix resolved),
// the stat zero.
//
// RoleNode (the node lives here, its parent does not) runs the checks that do not involve the
// parent — flags, TTL, session, path, ACL fixup, validatePath, NODEEXISTS — uses the path as
// given (the coordinator resolved any sequential suffix on the parent side: none is appended
// here), puts the real node and touches no parent; the only event is NodeCreated.
func (t *txn) createAs(role TxnRole, code wire.OpCode, a *createArgs, session int64, auth []wire.ID) (string, wire.Stat, wire.Err) {
	if !modeValid(a.flags) {
		return "", wire.Stat{}, wire.ErrBadArguments
	}
	if modeTTL(a.flags) {
		if !t.s.cfg.ExtendedTypes {
			return "", wire.Stat{}, wire.ErrUnimplemented
		}
		if a.ttl <= 0 || a.ttl > wire.MaxTTL {
			return "", wire.Stat{}, wire.ErrBadArguments
		}
	} else if a.ttl >= 0 || code == wire.OpCreateTTL {
		return "", wire.Stat{}, wire.ErrBadArguments
	}
	if modeEphemeral(a.flags) && (session == 0 || t.s.tombstones.has(session)) {
		return "", wire.Stat{}, wire.ErrSessionExpired
	}
	parentPath, ok := splitParent(a.path)
	if !ok || bytes.IndexByte([]byte(a.path), 0) >= 0 {
		return "", wire.Stat{}, wire.ErrBadArguments
	}
	acls, err := acl.Fixup(a.acl, auth)
	if err != wire.ErrOK {
		return "", wire.Stat{}, err
	}
	var owner int64
	switch {
	case code == wire.OpCreateContainer:
		owner = containerOwner
	case code == wire.OpCreateTTL:
		owner = ttlMask | a.ttl
	case modeEphemeral(a.flags):
		owner = session
	}
	if role == RoleNode {
		if !validatePath(a.path) {
			return "", wire.Stat{}, wire.ErrBadArguments
		}
		key, _ := keyOf(a.path)
		if t.get(key) != nil {
			return "", wire.Stat{}, wire.ErrNodeExists
		}
		if err := t.quotaCheck(a.path, 1, int64(len(a.data))); err != wire.ErrOK {
			return "", wire.Stat{}, err
		}
		n := t.newNode(key, owner, a.data, acls)
		t.put(n)
		t.event(wire.EventNodeCreated, a.path, n.acl)
		st := n.stat()
		t.quotaCreated(a.path, n)
		return a.path, st, wire.ErrOK
	}
	pkey, ok := parentKey(parentPath)
	var parent *node
	if ok {
		parent = t.visible(pkey)
	}
	if parent == nil {
		return "", wire.Stat{}, wire.ErrNoNode
	}
	if !t.permitted(parent, wire.PermCreate, auth) {
		return "", wire.Stat{}, wire.ErrNoAuth
	}
	path := a.path
	if modeSequential(a.flags) {
		path += fmt.Sprintf("%010d", parent.cversion)
	}
	if !validatePath(path) {
		return "", wire.Stat{}, wire.ErrBadArguments
	}
	key, _ := keyOf(path) // a valid path always has a key
	if t.get(key) != nil {
		return "", wire.Stat{}, wire.ErrNodeExists
	}
	if kindOf(parent.owner) == kindEphemeral {
		return "", wire.Stat{}, wire.ErrNoChildrenForEphemerals
	}
	if role != RoleParent {
		if err := t.quotaCheck(path, 1, int64(len(a.data))); err != wire.ErrOK {
			return "", wire.Stat{}, err
		}
	}
	p := parent.clone()
	p.cversion++
	p.numChildren++
	p.pzxid = t.zxid
	t.put(p)
	if role == RoleParent {
		stubOwner := int64(0)
		if kindOf(owner) == kindEphemeral {
			stubOwner = owner
		}
		t.put(&node{key: key, czxid: t.zxid, mzxid: t.zxid, pzxid: t.zxid, ctime: t.time, mtime: t.time,
			owner: stubOwner, acl: stubACL})
		t.event(wire.EventNodeChildrenChanged, displayParent(parentPath), p.acl)
		return path, wire.Stat{}, wire.ErrOK
	}
	n := t.newNode(key, owner, a.data, acls)
	t.put(n)
	t.event(wire.EventNodeCreated, path, n.acl)
	t.event(wire.EventNodeChildrenChanged, displayParent(parentPath), p.acl)
	st := n.stat()
	t.quotaCreated(path, n)
	return path, st, wire.ErrOK
}

// newNode returns a fresh node created by the txn.
func (t *txn) newNode(key string, owner int64, data []byte, acls []wire.ACL) *node {
	return &node{
		key:   key,
		czxid: t.zxid, mzxid: t.zxid, pzxid: t.zxid,
		ctime: t.time, mtime: t.time,
		owner: owner,
		data:  bytes.Clone(data),
		acl:   internACL(acls),
	}
}
