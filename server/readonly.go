package server

import (
	"crypto/rand"
	"crypto/subtle"
	"time"

	"github.com/corral/corral/wire"
)

// Read-only mode (readonlymode.enabled; docs/compatibility.md "Read-only mode").
//
// While Options.ReadOnly reports that this server has lost its quorum, it serves only clients
// that asked for read-only mode (the connect request's readOnly flag), as ZooKeeper's
// ReadOnlyZooKeeperServer does:
//
//   - a connect without the flag is refused (the connection closes);
//   - a reconnect with a session of the replicated table is refused too: its lease cannot be
//     renewed here, and the client must find a server of the quorum for it (ZooKeeper: "Refusing
//     global session reconnection in RO mode");
//   - a new session is local to this server (not in the session table): ConnectResponse has
//     readOnly set, reads are answered from this server's replicas however stale, with no
//     staleness bound, and every write, sync and multi gets NOTREADONLY;
//   - once the quorum is back, every read-only connection closes; the client reconnects, and its
//     local session is unknown to the quorum, so it is told the session expired and starts a
//     new one (what ZooKeeper's clients do after a read-only session too).

// roSession is a read-only session local to this server.
type roSession struct {
	passwd  []byte
	timeout time.Duration
}

// readOnlyNow reports whether the server is in read-only mode.
func (s *Server) readOnlyNow() bool { return s.o.ReadOnly != nil && s.o.ReadOnly() }

// readOnlyHandshake answers a connect request while the server is in read-only mode; false
// means close the connection.
func (c *conn) readOnlyHandshake(req *wire.ConnectRequest, timeout time.Duration) bool {
	remote := c.nc.RemoteAddr().String()
	if !req.ReadOnly {
		c.s.o.Log.Info("refusing session request for a client that did not ask for read-only mode: this server has lost its quorum",
			"remote", remote)
		return false
	}
	s := c.s
	id, pw := req.SessionID, req.Passwd
	s.mu.Lock()
	if id != 0 {
		ro, ok := s.mu.roSessions[id]
		s.mu.Unlock()
		if !ok {
			s.o.Log.Info("refusing reconnection of a read-write session in read-only mode: it must reach the quorum",
				"session", sessionHex(id), "remote", remote)
			return false
		}
		if subtle.ConstantTimeCompare(ro.passwd, pw) != 1 {
			c.send(wire.AppendFrame(nil, encodeRecord(&wire.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true})))
			return false
		}
		timeout = ro.timeout
	} else {
		s.mu.Unlock()
		pw = make([]byte, 16)
		if _, err := rand.Read(pw); err != nil {
			return false
		}
		id = s.o.Sessions.LocalID()
		s.mu.Lock()
		s.mu.roSessions[id] = roSession{passwd: pw, timeout: timeout}
		s.mu.Unlock()
		s.o.Log.Info("read-only session created", "session", sessionHex(id), "remote", remote)
	}
	c.readOnly = true
	c.sessionID = id
	c.timeout = timeout
	s.mu.Lock()
	old := s.mu.roConns[id]
	s.mu.roConns[id] = c
	s.mu.Unlock()
	if old != nil && old != c {
		old.close("session moved to a newer connection")
	}
	c.send(wire.AppendFrame(nil, encodeRecord(&wire.ConnectResponse{TimeOut: int32(timeout / time.Millisecond),
		SessionID: id, Passwd: pw, ReadOnly: true, HasReadOnly: true})))
	return true
}

// refusedReadOnly reports whether op changes state or needs the quorum, which a read-only
// session may not do (ZooKeeper's ReadOnlyRequestProcessor answers NOTREADONLY to these).
func refusedReadOnly(op wire.OpCode) bool {
	switch op {
	case wire.OpSync, wire.OpCreate, wire.OpCreate2, wire.OpCreateTTL, wire.OpCreateContainer,
		wire.OpDelete, wire.OpDeleteContainer, wire.OpSetData, wire.OpReconfig, wire.OpSetACL,
		wire.OpMulti, wire.OpCheck:
		return true
	}
	return false
}

// handleReadOnlyRefused answers a refused request of a read-only session.
func (c *conn) handleReadOnlyRefused(h wire.RequestHeader) bool {
	if !c.waitIdle() {
		return false
	}
	c.reply(h.Xid, wire.ErrNotReadOnly, nil)
	return true
}

// endReadOnly closes a read-only session (closeSession) and its connection.
func (c *conn) endReadOnly(h wire.RequestHeader) bool {
	if !c.waitIdle() {
		return false
	}
	c.s.mu.Lock()
	delete(c.s.mu.roSessions, c.sessionID)
	c.s.mu.Unlock()
	c.reply(h.Xid, wire.ErrOK, nil)
	return false
}

// closeReadOnlyIfRecovered closes every read-only connection and forgets the local sessions
// once the server has its quorum again (called by the watchdog loop).
func (s *Server) closeReadOnlyIfRecovered() {
	if s.readOnlyNow() {
		return
	}
	s.mu.Lock()
	if len(s.mu.roSessions) == 0 && len(s.mu.roConns) == 0 {
		s.mu.Unlock()
		return
	}
	conns := make([]*conn, 0, len(s.mu.roConns))
	for _, c := range s.mu.roConns {
		conns = append(conns, c)
	}
	clear(s.mu.roSessions)
	s.mu.Unlock()
	if len(conns) > 0 {
		s.o.Log.Info("quorum is back: closing read-only connections", "connections", len(conns))
	}
	for _, c := range conns {
		go c.close("read-only mode ended")
	}
}
