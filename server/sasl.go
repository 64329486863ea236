package server

import (
	"net"

	"github.com/corral/corral/wire"
)

// handleSASL serves a sasl packet (OpSASL) as ZooKeeper 3.8's processSasl: outside the request
// pipeline, answered with zxid 0.
//
// Without a SASL server (no JAAS Server section) every packet is answered OK with a null token
// and adds no identity (ZooKeeper catches the NullPointerException of its missing SASL
// server). With one, the token is the next step of the connection's exchange (DIGEST-MD5, or
// GSSAPI when the JAAS Server section has a Krb5LoginModule, as ZooKeeper chooses); once
// it completes the identity ("sasl", id) is added (and ("super", "") for
// zookeeper.superUser). A failed step is answered with AUTHFAILED (SESSIONCLOSEDREQUIRESASLAUTH
// when SASL is required) and a null token and closes the connection, unless
// allowSaslFailedClients keeps it (then OK with a null token).
func (c *conn) handleSASL(h wire.RequestHeader, body []byte) bool {
	a := c.s.o.SASL
	if !a.Server() {
		if !c.waitIdle() {
			return false
		}
		c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: 0, Err: wire.ErrOK}, &wire.SetSASLResponse{}))
		return true
	}
	var req wire.GetSASLRequest
	if err := req.Decode(wire.NewDecoder(body)); err != nil {
		c.logBad("decoding sasl request", err)
		return false
	}
	if !c.waitIdle() {
		return false
	}
	if c.saslx == nil {
		var ip net.IP
		if ta, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
			ip = ta.IP
		}
		c.saslx = a.NewExchange(ip)
	}
	tok, err := c.saslx.Step(req.Token)
	if err == nil && c.saslx.Complete() {
		var id string
		var super bool
		if id, super, err = a.Identity(c.saslx.User()); err == nil {
			add := []wire.ID{{Scheme: "sasl", ID: id}}
			if super {
				add = append(add, wire.ID{Scheme: "super", ID: ""})
			}
			cur := c.AuthIDs()
			next := dedupIDs(append(append(make([]wire.ID, 0, len(cur)+len(add)), cur...), add...))
			c.auth.Store(&next)
			c.s.o.Log.Info("SASL authenticated", "session", sessionHex(c.sessionID), "remote", c.nc.RemoteAddr().String(),
				"id", id, "super", super)
		}
	}
	if err != nil {
		keep := a.KeepFailed()
		c.warnBad("SASL authentication failed", "session", sessionHex(c.sessionID), "mechanism", a.Mechanism(), "err", err,
			"connection_kept", keep)
		if keep {
			c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: 0, Err: wire.ErrOK}, &wire.SetSASLResponse{}))
			return true
		}
		c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: 0, Err: a.FailureCode()}, &wire.SetSASLResponse{}))
		return false
	}
	c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: 0, Err: wire.ErrOK}, &wire.SetSASLResponse{Token: tok}))
	return true
}

// refuseUnauthenticated answers a request of a connection that enforcement does not admit
// (AuthenticationHelper.enforceAuthentication): SESSIONCLOSEDREQUIRESASLAUTH with zxid 0 and
// no body, then the connection closes (the session lives on until it expires or a client
// reconnects to it with credentials).
func (c *conn) refuseUnauthenticated(h wire.RequestHeader) bool {
	c.warnBad("request refused: the connection has no identity of an enforced authentication scheme; closing it",
		"session", sessionHex(c.sessionID), "op", opName(h.Op))
	if c.waitIdle() {
		c.send(wire.AppendReply(nil, wire.ReplyHeader{Xid: h.Xid, Zxid: 0, Err: wire.ErrSessionClosedRequireSASL}, nil))
	}
	return false
}
