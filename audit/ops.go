package audit

import "github.com/corral/corral/wire"

// Client is what the connection a write came in on contributes to its events.
type Client struct {
	Session int64
	User    string // Users of the connection's identities
	IP      string // the client's address (written as HostAddress writes it)
}

func (c Client) event(op, znode string, r Result) Event {
	return Event{Session: c.Session, HasSession: true, User: c.User, IP: HostAddress(c.IP), Operation: op, Znode: znode, Result: r}
}

// Write returns the event of a write sent alone (not in a multi), as AuditHelper.addAuditLog
// makes it, and false for an opcode ZooKeeper does not audit (createTTL among them: its switch
// has no case for it). errc is the reply's error code; created is the path a successful create
// made (with its sequence suffix), the znode of its line. A failed write's line names the
// request's path.
func Write(c Client, op wire.OpCode, rec wire.Record, errc wire.Err, created string) (Event, bool) {
	res := Success
	if errc != wire.ErrOK {
		res = Failure
	}
	switch r := rec.(type) {
	case *wire.CreateRequest:
		if op != wire.OpCreate && op != wire.OpCreate2 && op != wire.OpCreateContainer {
			return Event{}, false
		}
		e := c.event(OpCreate, r.Path, res)
		if res == Success && created != "" {
			e.Znode = created
		}
		e.ZnodeType = CreateMode(r.Flags)
		return e, true
	case *wire.DeleteRequest:
		return c.event(OpDelete, r.Path, res), true
	case *wire.SetDataRequest:
		return c.event(OpSetData, r.Path, res), true
	case *wire.SetACLRequest:
		e := c.event(OpSetACL, r.Path, res)
		e.ACL = ACLString(r.ACL)
		return e, true
	}
	return Event{}, false
}

// EphemeralDeleted returns the event of an ephemeral znode removed because its session closed
// or expired, as ZooKeeper's DataTree.deleteNodes logs it on every server that applies the
// close: the session, the server's own user (ZKAuditProvider.getZKUser: no client made the
// change, so no ip) and the znode, result=success. (ZooKeeper's result=failure, for a path of
// the session's set that is not in its tree, cannot happen here: the paths come from the tree.)
func EphemeralDeleted(serverUser string, session int64, znode string) Event {
	return Event{Session: session, HasSession: true, User: serverUser, Operation: OpEphemeralDeleted, Znode: znode, Result: Success}
}

// Reconfig returns the event of a reconfig request, which is always refused (reconfiguration is
// disabled): ZooKeeper turns it into an error transaction and audits it with no znode.
func Reconfig(c Client) Event { return c.event(OpReconfig, "", Failure) }

// Multi returns the events of a multi, as AuditHelper.logMultiOperation makes them. errc is
// the reply's error code and results the per-op results (nil when the multi was refused as a
// whole). A multi that failed is one multiOperation line with result=failure and no znode (its
// ops' lines are not written: none applied). One that succeeded is a line per create (the
// created path; znode_type only for a create, create2 or createContainer whose created path is
// the requested one: ZooKeeper looks the mode up by the created path in a map keyed by the
// requested paths, so sequential and TTL creates have none), delete and setData, in the
// multi's order, each with result=success; check ops have no line.
func Multi(c Client, m *wire.MultiRequest, errc wire.Err, results []wire.MultiResult) []Event {
	failed := errc != wire.ErrOK
	for _, r := range results {
		if r.Op == wire.OpError || r.Err != wire.ErrOK {
			failed = true
		}
	}
	if failed {
		return []Event{c.event(OpMulti, "", Failure)}
	}
	modes := map[string]string{}
	for _, op := range m.Ops {
		if op.Create != nil && (op.Op == wire.OpCreate || op.Op == wire.OpCreate2 || op.Op == wire.OpCreateContainer) {
			modes[op.Create.Path] = CreateMode(op.Create.Flags)
		}
	}
	var out []Event
	for i, r := range results {
		if i >= len(m.Ops) {
			break
		}
		op := m.Ops[i]
		switch {
		case op.Create != nil || op.CreateTTL != nil:
			e := c.event(OpCreate, r.Path, Success)
			e.ZnodeType = modes[r.Path]
			out = append(out, e)
		case op.Delete != nil:
			out = append(out, c.event(OpDelete, op.Delete.Path, Success))
		case op.SetData != nil:
			out = append(out, c.event(OpSetData, op.SetData.Path, Success))
		}
	}
	return out
}
