package shard

import (
	"strings"

	"github.com/corral/corral/acl"
	"github.com/corral/corral/wire"
)

// Read answers a read request against the view with ZooKeeper 3.8's checks
// (FinalRequestProcessor): req is the decoded request record (as wire.DecodeRequest returns it)
// and ids the caller's identities. On error the record is nil (error replies have no body).
//
//	exists (3)                NUL in path: BADARGUMENTS; NONODE; if the node exists, READ
//	getData (4)               NONODE, READ
//	getACL (6)                NONODE, READ or ADMIN; digest ids masked to "user:x" without ADMIN
//	getChildren (8)           NONODE, READ
//	getChildren2 (12)         NONODE, READ
//	getAllChildrenNumber (104) NONODE, READ
//
// A stub (see doc.go, "Stubs") reads as NONODE at its own path and is listed among its
// parent's children. Watch registration is not the shard's business. getEphemerals needs the session: use
// GetEphemerals. Any other opcode (or a request record of the wrong type) is BADARGUMENTS.
func (v *View) Read(code wire.OpCode, req wire.Record, ids []wire.ID) (wire.Err, wire.Record) {
	switch code {
	case wire.OpExists:
		r, ok := req.(*wire.ExistsRequest)
		if !ok {
			break
		}
		if strings.IndexByte(r.Path, 0) >= 0 {
			return wire.ErrBadArguments, nil
		}
		// ZooKeeper 3.8.0 (Debian's package, our reference) checks no ACL on exists; later
		// 3.8.x releases check READ when the node exists.
		key, ok := keyOf(r.Path)
		if !ok {
			return wire.ErrNoNode, nil
		}
		n := v.node(key)
		if n == nil {
			return wire.ErrNoNode, nil
		}
		return wire.ErrOK, &wire.ExistsResponse{Stat: n.stat()}
	case wire.OpGetData:
		r, ok := req.(*wire.GetDataRequest)
		if !ok {
			break
		}
		n, err := v.readable(r.Path, wire.PermRead, ids)
		if err != wire.ErrOK {
			return err, nil
		}
		return wire.ErrOK, &wire.GetDataResponse{Data: n.data, Stat: n.stat()}
	case wire.OpGetACL:
		r, ok := req.(*wire.GetACLRequest)
		if !ok {
			break
		}
		n, err := v.readable(r.Path, wire.PermRead|wire.PermAdmin, ids)
		if err != wire.ErrOK {
			return err, nil
		}
		acls := acl.Mask(n.aclSlice(), acl.Check(n.aclSlice(), wire.PermAdmin, ids))
		return wire.ErrOK, &wire.GetACLResponse{ACL: acls, Stat: n.stat()}
	case wire.OpGetChildren, wire.OpGetChildren2:
		r, ok := req.(*wire.GetChildrenRequest)
		if !ok {
			break
		}
		n, err := v.readable(r.Path, wire.PermRead, ids)
		if err != wire.ErrOK {
			return err, nil
		}
		children := v.tree.children(n.key)
		if code == wire.OpGetChildren {
			return wire.ErrOK, &wire.GetChildrenResponse{Children: children}
		}
		return wire.ErrOK, &wire.GetChildren2Response{Children: children, Stat: n.stat()}
	case wire.OpGetAllChildrenNumber:
		r, ok := req.(*wire.GetAllChildrenNumberRequest)
		if !ok {
			break
		}
		n, err := v.readable(r.Path, wire.PermRead, ids)
		if err != wire.ErrOK {
			return err, nil
		}
		return wire.ErrOK, &wire.GetAllChildrenNumberResponse{TotalNumber: int32(v.tree.countDescendants(n.key))}
	}
	return wire.ErrBadArguments, nil
}

// readable looks up path and checks perm: NONODE first (also for a stub), then NOAUTH.
func (v *View) readable(path string, perm int32, ids []wire.ID) (*node, wire.Err) {
	key, ok := keyOf(path)
	if !ok {
		return nil, wire.ErrNoNode
	}
	n := v.node(key)
	if n == nil {
		return nil, wire.ErrNoNode
	}
	if !acl.Check(n.aclSlice(), perm, ids) {
		return nil, wire.ErrNoAuth
	}
	return n, wire.ErrOK
}
