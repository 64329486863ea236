package zkdata

import (
	"fmt"
	"strings"

	"github.com/corral/corral/wire"
)

// This file applies transactions to the tree the way DataTree.processTxn does while ZooKeeper
// replays its log at startup. A snapshot is fuzzy (written while transactions were applied), so
// replaying a transaction the snapshot already holds must not fail: ZooKeeper ignores the
// NONODE and NODEEXISTS errors this causes, and so does apply, with the same repairs ZooKeeper
// makes (cversion and pzxid only move forward).

// apply applies a top-level transaction and moves the tree's zxid forward.
func (t *Tree) apply(h *txnHeader, x *txn) error {
	if _, err := t.process(h, x); err != nil {
		return err
	}
	switch x.typ {
	case wire.OpCreateSession:
		t.sessions[h.clientID] = x.timeout
	case wire.OpCloseSession:
		delete(t.sessions, h.clientID)
	}
	if h.zxid > t.zxid {
		t.zxid = h.zxid
	}
	return nil
}

// process applies x, or a sub-transaction of a multi, and returns ZooKeeper's result code. The
// error is for transactions ZooKeeper itself cannot apply (an invalid TTL or path).
func (t *Tree) process(h *txnHeader, x *txn) (wire.Err, error) {
	switch x.typ {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		if err := checkPath(x.path, false); err != nil {
			return 0, err
		}
		var owner int64
		switch {
		case x.typ == wire.OpCreateContainer:
			owner = containerOwner
		case x.typ == wire.OpCreateTTL:
			// EphemeralType.TTL.toEphemeralOwner
			if x.ttl <= 0 || x.ttl > extendedValueMax {
				return 0, fmt.Errorf("createTTL of %s with an invalid TTL %d", x.path, x.ttl)
			}
			owner = extendedMask | x.ttl
		case x.ephemeral:
			owner = h.clientID
		}
		rc := t.createNode(x.path, x.data, x.acl, owner, x.parentCVersion, h.zxid, h.time)
		if rc == wire.ErrNodeExists && x.typ == wire.OpCreate {
			// The snapshot holds the znode already (it may have been deleted and created again
			// by another session within the fuzzy range): move the parent's cversion and pzxid
			// on as the create did (DataTree.processTxn, then setCversionPzxid).
			t.setCversionPzxid(x.path[:strings.LastIndexByte(x.path, '/')], x.parentCVersion, h.zxid)
		}
		return rc, nil
	case wire.OpDelete, wire.OpDeleteContainer:
		if err := checkPath(x.path, false); err != nil {
			return 0, err
		}
		return t.deleteNode(x.path, h.zxid), nil
	case wire.OpSetData, wire.OpReconfig:
		if err := checkPath(x.path, true); err != nil {
			return 0, err
		}
		z := t.get(x.path)
		if z == nil {
			return wire.ErrNoNode, nil
		}
		t.unDigest(z)
		z.data, z.mtime, z.mzxid, z.version = x.data, h.time, h.zxid, x.version
		t.addDigest(z)
	case wire.OpSetACL:
		if err := checkPath(x.path, true); err != nil {
			return 0, err
		}
		z := t.get(x.path)
		if z == nil {
			return wire.ErrNoNode, nil
		}
		t.acls.removeUsage(z.acl)
		t.unDigest(z)
		z.aversion = x.version
		z.acl = t.acls.convert(x.acl)
		t.addDigest(z)
	case wire.OpCloseSession:
		t.killSession(h.clientID, h.zxid, x.paths, !x.legacy)
	case wire.OpError:
		return wire.Err(x.err), nil
	case wire.OpMulti:
		// A multi that failed was logged with an error sub-transaction: then none of its
		// sub-transactions change the tree. Otherwise each is applied in order and their errors
		// (from the fuzzy snapshot) are ignored one by one.
		for i := range x.subs {
			if x.subs[i].typ == wire.OpError {
				return wire.Err(x.subs[i].err), nil
			}
		}
		var rc wire.Err
		for i := range x.subs {
			sub, err := t.process(h, &x.subs[i])
			if err != nil {
				return 0, fmt.Errorf("multi sub-transaction %d: %w", i, err)
			}
			if sub != 0 && rc == 0 {
				rc = sub
			}
		}
		return rc, nil
	}
	// createSession and check change nothing in the tree.
	return 0, nil
}

// checkPath refuses the paths PrepRequestProcessor never lets through and DataTree would turn
// into nonsense: relative ones, empty names, and the root where it cannot be.
func checkPath(p string, rootOK bool) error {
	if p == "/" && rootOK {
		return nil
	}
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' || strings.Contains(p, "//") {
		return fmt.Errorf("invalid znode path %q", p)
	}
	return nil
}

// createNode is DataTree.createNode. parentCVersion -1 means one more than the parent's.
func (t *Tree) createNode(path string, data []byte, acl []wire.ACL, owner int64, parentCVersion int32, zxid, time int64) wire.Err {
	i := strings.LastIndexByte(path, '/')
	parent := t.get(path[:i])
	if parent == nil {
		return wire.ErrNoNode
	}
	// The ACL is counted before the existence check, as ZooKeeper counts it.
	aclID := t.acls.convert(acl)
	name := path[i+1:]
	if _, ok := parent.children[name]; ok {
		return wire.ErrNodeExists
	}
	t.unDigest(parent)
	if parentCVersion == -1 {
		parentCVersion = parent.cversion + 1
	}
	// A create replayed for a znode created and deleted within the fuzzy range must not move
	// the parent's cversion and pzxid back.
	if parentCVersion > parent.cversion {
		parent.cversion = parentCVersion
		parent.pzxid = zxid
	}
	z := &znode{path: path, data: data, acl: aclID, czxid: zxid, mzxid: zxid, pzxid: zxid,
		ctime: time, mtime: time, owner: owner}
	parent.addChild(name, z)
	t.addDigest(parent)
	t.put(z)
	t.addEphemeral(z)
	return 0
}

// deleteNode is DataTree.deleteNode: the parent's pzxid moves forward even when the child is
// already gone.
func (t *Tree) deleteNode(path string, zxid int64) wire.Err {
	i := strings.LastIndexByte(path, '/')
	parent := t.get(path[:i])
	if parent == nil {
		return wire.ErrNoNode
	}
	t.unDigest(parent)
	delete(parent.children, path[i+1:])
	if zxid > parent.pzxid {
		parent.pzxid = zxid
	}
	t.addDigest(parent)
	z := t.nodes[path]
	if z == nil {
		return wire.ErrNoNode
	}
	delete(t.nodes, path)
	t.unDigest(z)
	t.acls.removeUsage(z.acl)
	if k, _ := kindOf(z.owner); k == Ephemeral {
		delete(t.ephemerals[z.owner], path)
	}
	return 0
}

// setCversionPzxid is DataTree.setCversionPzxid.
func (t *Tree) setCversionPzxid(path string, cversion int32, zxid int64) {
	z := t.get(strings.TrimSuffix(path, "/"))
	if z == nil {
		return
	}
	if cversion == -1 {
		cversion = z.cversion + 1
	}
	if cversion > z.cversion {
		t.unDigest(z)
		z.cversion, z.pzxid = cversion, zxid
		t.addDigest(z)
	}
}

// killSession is DataTree.killSession: the paths the closeSession transaction lists (ZooKeeper
// 3.6+) are deleted, then whatever other ephemerals the tree knows for the session.
func (t *Tree) killSession(session, zxid int64, paths []string, listed bool) {
	local := t.ephemerals[session]
	delete(t.ephemerals, session)
	if listed {
		for _, p := range paths {
			if checkPath(p, false) == nil {
				t.deleteNode(p, zxid)
			}
			delete(local, p)
		}
	}
	for p := range local {
		t.deleteNode(p, zxid)
	}
}

// killDeadSessions deletes the ephemerals of sessions that are not alive at the end, as
// ZooKeeperServer.loadData does before serving, with the last zxid. It returns how many
// sessions had ephemerals left.
func (t *Tree) killDeadSessions() int {
	dead := 0
	for owner, paths := range t.ephemerals {
		if _, alive := t.sessions[owner]; alive {
			continue
		}
		if len(paths) > 0 {
			dead++
		}
		t.killSession(owner, t.zxid, nil, false)
	}
	return dead
}
