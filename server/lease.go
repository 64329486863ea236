package server

import (
	"slices"
	"strings"
	"time"
)

// Session leases (docs/design.md §4, rule 3).
//
// The session manager knows, for every session this server serves, the latest time its client
// was heard as carried by a renewal that committed with the session alive and owned here
// (session.Manager.Heard, the lease basis h). The meta leader cannot expire the session before
// h + T (T the negotiated timeout). A client leaves CONNECTED at the latest 2T/3 after the last
// bytes it received (the read timeout of the Java client, go-zookeeper and kazoo). So the
// connection sends nothing after h + T/3 - T/20: the client is then sure to see Disconnected
// before the session can be expired anywhere, with T/20 for network delay and clock rates.
//
// A connection whose lease has lapsed holds its output, asks for a renewal if its client spoke
// since the last one (at once for a reply or an event, after a short wait for ping replies
// alone: waitRenewal), and sends once a renewal commits. A session with no renewal for 2T/3 has
// its connection closed by the watchdog, so the client moves to a server that can reach the
// quorum while its session is still alive.

// leaseEnd is the last moment a connection may send on a session heard at h.
func leaseEnd(h time.Time, timeout time.Duration) time.Time { return h.Add(timeout/3 - timeout/20) }

// leaseDrop is when the watchdog closes a session's connection that has not been renewed
// since h.
func leaseDrop(h time.Time, timeout time.Duration) time.Time { return h.Add(2 * timeout / 3) }

// leaseGate returns once the connection may send under a valid lease (true), or false when it
// must close: the session is closed or owned elsewhere, the lease was not renewed in time, or
// the connection is closing. The closeSession reply passes: it ends the session.
func (c *conn) leaseGate() bool {
	if c.sessionID == 0 || c.readOnly || c.s.o.Sessions == nil || c.closingSession.Load() {
		return true
	}
	if time.Now().Before(c.leaseUntil.Load().(time.Time)) {
		return true // the common case: no lock taken
	}
	for !c.closingSession.Load() {
		h, ok, next := c.s.o.Sessions.Heard(c.sessionID)
		if !ok {
			c.leaseLost("the session is closed or served by another server")
			return false
		}
		now := time.Now()
		if end := leaseEnd(h, c.timeout); now.Before(end) {
			c.leaseUntil.Store(end)
			return true
		}
		drop := leaseDrop(h, c.timeout)
		if !now.Before(drop) {
			c.leaseLost("no session renewal for two thirds of the session timeout")
			return false
		}
		c.s.o.Metrics.leaseWaits.Inc()
		if !c.waitRenewal(next) {
			return false
		}
	}
	return true // closeSession began meanwhile: its reply ends the session
}

// waitRenewal waits, with the lease lapsed, for the next confirmed activity report (next) or
// for more output; false if the connection is closing. The session's drop time needs no timer
// here: the watchdog closes the connection then, which wakes this wait. Output other than ping
// replies asks for a report at once (Kick). Ping replies alone ask for one within
// pingRenewWait (KickWithin): every ping of an idle session finds its lease lapsed (the lease,
// T/3 - T/20 from when the client was heard, ends before the client's next ping, T/3 later),
// and a report at once for each would keep a meta-shard round going per server for as long as
// idle sessions ping; waiting lets the periodic report (every tickTime/4), or one report per
// server per pingRenewWait, carry all of them. A client waits for a ping's reply for at least
// T/3 before it gives up (docs/design.md §4, rule 3), far longer than this.
func (c *conn) waitRenewal(next <-chan struct{}) bool {
	c.out.Lock()
	urgent, closed := c.out.urgent, c.out.closed
	c.out.Unlock()
	if closed {
		// The close's wake-up was taken by the write loop that called the gate: nothing
		// would end this wait.
		return c.closingSession.Load()
	}
	if urgent {
		c.s.o.Sessions.Kick(c.sessionID)
	} else {
		c.s.o.Sessions.KickWithin(c.sessionID, pingRenewWaitFor(c.timeout))
	}
	select {
	case <-next:
		return true
	case <-c.wake:
		// More output (the write loop takes it all once the gate opens; the gate asks again,
		// at once if it is more than ping replies), or the connection is closing: then
		// nothing more is sent.
		c.out.Lock()
		closed := c.out.closed
		c.out.Unlock()
		return !closed || c.closingSession.Load()
	}
}

// pingRenewWait bounds how long a lapsed lease with only ping replies to send waits before it
// asks for an activity report of its own; pingRenewWaitFor keeps it to a tenth of a short
// session timeout.
const pingRenewWait = 250 * time.Millisecond

func pingRenewWaitFor(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout/10 < pingRenewWait {
		return timeout / 10
	}
	return pingRenewWait
}

func (c *conn) leaseLost(why string) {
	args := []any{"session", sessionHex(c.sessionID), "remote", c.nc.RemoteAddr().String(), "reason", why}
	if h, ok, _ := c.s.o.Sessions.Heard(c.sessionID); ok {
		args = append(args, "renewed_ago", time.Since(h).Round(time.Millisecond).String())
	}
	lastOK, lastErr := c.s.o.Sessions.Reports()
	if !lastOK.IsZero() {
		args = append(args, "last_report_ago", time.Since(lastOK).Round(time.Millisecond).String())
	}
	if lastErr != nil {
		first, _, _ := strings.Cut(lastErr.Error(), "\n") // dragonboat's errors carry a stack trace
		args = append(args, "last_report_err", first)
	}
	c.s.o.Log.Info("closing connection: its session lease cannot be renewed", args...)
}

// watchdog closes the connections of sessions whose lease was not renewed for 2T/3 (see
// above), whether or not they have output pending, and those whose oldest write is stuck on a
// replica cut off from its shard's quorum (stuck.go). It runs until the server closes.
//
// It looks every watchdogEvery, but goes over the connections only when one may be due: a
// scan notes the earliest drop time of the sessions it saw (a session's lease basis only moves
// forward while it has one), and the next scan runs at that time, or at once after a session
// was bound to a connection here since (Server.binds), or on every look while a replica is cut
// off, and at least every watchdogIdle. With thousands of idle sessions a scan on every look
// was a tenth of the server's work (row 13 of the benchmark matrix).
func (s *Server) watchdog(stop <-chan struct{}) {
	t := time.NewTicker(watchdogEvery)
	defer t.Stop()
	var ( // reused by every scan
		ids   []int64
		conns []*conn
		heard []time.Time
		due   time.Time // the next scan; zero: at the next look
		binds uint64    // s.binds at the last scan
	)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.closeReadOnlyIfRecovered()
		now := time.Now()
		cut := s.anyCutOff(now)
		b := s.binds.Load()
		if !cut && b == binds && now.Before(due) {
			continue
		}
		binds = b
		due = now.Add(watchdogIdle)
		ids, conns = ids[:0], conns[:0]
		s.mu.Lock()
		for id, c := range s.mu.bySess {
			ids, conns = append(ids, id), append(conns, c)
		}
		s.mu.Unlock()
		heard = slices.Grow(heard[:0], len(ids))[:len(ids)]
		s.o.Sessions.HeardAll(ids, heard)
		var late []*conn
		live := conns[:0] // filtered in place: index i is read before live's i-th write
		for i, c := range conns {
			h := heard[i]
			if h.IsZero() {
				late = append(late, c)
				continue
			}
			drop := leaseDrop(h, c.timeout)
			if !now.Before(drop) {
				late = append(late, c)
				continue
			}
			if drop.Before(due) {
				due = drop
			}
			live = append(live, c)
		}
		if cut {
			s.dropStuck(live, now)
		}
		clear(conns[len(live):]) // no stale pointers kept until the next scan
		for _, c := range late {
			if c.closingSession.Load() || c.closing() {
				continue // closeSession ends it, or a close is under way (counted once)
			}
			c.leaseLost("no session renewal for two thirds of the session timeout")
			s.o.Metrics.leaseDrops.Inc()
			go c.close("session lease lapsed")
		}
	}
}

// closing reports whether the connection's close has begun.
func (c *conn) closing() bool {
	c.out.Lock()
	defer c.out.Unlock()
	return c.out.closed
}

// watchdogEvery is how often the watchdog looks; it adds at most this much to the moment a
// client of a cut-off server sees Disconnected (2T/3), far below the T/3 to spare.
const watchdogEvery = 100 * time.Millisecond

// watchdogIdle is the longest the watchdog goes without a scan of every connection.
const watchdogIdle = time.Second
