package server

import (
	"github.com/corral/corral/audit"
	"github.com/corral/corral/router"
	"github.com/corral/corral/wire"
)

// The audit log (Options.Audit, package audit): a write is audited on the server its client is
// connected to, when its reply is complete and before it is queued, so that an auth packet
// (which waits for every earlier reply) cannot change the identities the line names. A write
// whose outcome is unknown (writeFailed: the connection closes) has no line, as a ZooKeeper
// request that never reaches FinalRequestProcessor.

// auditClient is the connection's part of its audit events.
func (c *conn) auditClient() audit.Client {
	return audit.Client{Session: c.sessionID, User: audit.Users(zkAuthSetOrder(c.AuthIDs())), IP: c.ip}
}

// auditReply audits a write its shard applied: body is the reply body (a create's starts with
// the created path; a multi's is the MultiResponse).
func (c *conn) auditReply(op wire.OpCode, rec wire.Record, errc wire.Err, body []byte) {
	if c.s.o.Audit == nil {
		return
	}
	if m, ok := rec.(*wire.MultiRequest); ok {
		var resp wire.MultiResponse
		if errc == wire.ErrOK && body != nil {
			if err := resp.Decode(wire.NewDecoder(body)); err != nil {
				errc = wire.ErrMarshallingError
			}
		}
		c.s.o.Audit.Write(audit.Multi(c.auditClient(), m, errc, resp.Results)...)
		return
	}
	created := ""
	if _, ok := rec.(*wire.CreateRequest); ok && errc == wire.ErrOK && body != nil {
		created = wire.NewDecoder(body).String()
	}
	c.auditWrite(op, rec, errc, created)
}

// auditWrite audits a write sent alone; created is a successful create's path.
func (c *conn) auditWrite(op wire.OpCode, rec wire.Record, errc wire.Err, created string) {
	if c.s.o.Audit == nil {
		return
	}
	if e, ok := audit.Write(c.auditClient(), op, rec, errc, created); ok {
		c.s.o.Audit.Write(e)
	}
}

// auditReconfig audits a refused reconfig.
func (c *conn) auditReconfig() {
	if c.s.o.Audit != nil {
		c.s.o.Audit.Write(audit.Reconfig(c.auditClient()))
	}
}

// auditTxn audits a write run as a cross-shard transaction: a multi, or (single) a create or
// delete sent alone and run as a one-op multi.
func (c *conn) auditTxn(op wire.OpCode, m *wire.MultiRequest, single bool, res router.TxnResult) {
	if c.s.o.Audit == nil {
		return
	}
	errc := wire.ErrOK
	if res.Failed {
		errc = res.FailErr
	}
	if !single {
		c.s.o.Audit.Write(audit.Multi(c.auditClient(), m, errc, res.Results)...)
		return
	}
	if len(m.Ops) != 1 {
		return
	}
	var rec wire.Record
	switch o := m.Ops[0]; {
	case o.Create != nil:
		rec = o.Create
	case o.CreateTTL != nil:
		rec = o.CreateTTL
	case o.Delete != nil:
		rec = o.Delete
	}
	created := ""
	if !res.Failed && len(res.Results) == 1 {
		created = res.Results[0].Path
	}
	c.auditWrite(op, rec, errc, created)
}
