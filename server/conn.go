package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral/corral/router"
	"github.com/corral/corral/sasl"
	"github.com/corral/corral/session"
	"github.com/corral/corral/wire"
)

// conn is one client connection. The frame reader (readFrames) reads frames ahead; the request
// goroutine (serve, requestLoop) handles them in order; the writer goroutine (writeLoop) sends
// queued output.
type conn struct {
	s    *Server
	nc   net.Conn
	ip   string
	id   uint64
	log  func(msg string, args ...any)
	auth atomic.Pointer[[]wire.ID] // immutable slices; replaced on addAuth

	sessionID int64
	timeout   time.Duration
	// readOnly marks a read-only session local to this server (readonly.go); set by the
	// handshake, before the connection serves requests.
	readOnly bool
	lastZxid atomic.Int64
	// lastWriteShard is the shard of the connection's latest write (0: none yet, or a
	// cross-shard transaction; groupMarker: a group). A write to another shard while earlier
	// writes are unanswered joins a group (group.go), so a session's writes are applied in order
	// across shards (request goroutine only).
	lastWriteShard uint64
	// group is the writes collected to run together once the earlier replies are queued
	// (group.go; request goroutine only).
	group *writeGroup
	// lastGroup is the group started last (request goroutine only).
	lastGroup *writeGroup
	// epoch is the session's ownership epoch at this server, which every write carries
	// (shard.Op.Epoch; 0 for a connection opened before format level 2). owned, when not nil,
	// is closed once every data shard recorded it after a take-over (owner.go): no write of the
	// connection is proposed before (request goroutine only, after the handshake).
	epoch uint64
	owned chan struct{}
	// written is the data shards the session wrote to, tracked when this connection created
	// it (written.go); nil otherwise. Set at the handshake.
	written *writtenShards
	// watched is set once the connection registered a watch: its reads then also catch up the
	// other shards, so events of changes a reply depends on are queued before it.
	watched atomic.Bool
	// closingSession is set while this connection runs closeSession: the session table's close
	// notification must not cut the connection before the reply is sent.
	closingSession atomic.Bool
	lastTouch      atomic.Int64 // unix ms of the last activity report handed to the session manager
	// saslx is the connection's SASL exchange (DIGEST-MD5 or GSSAPI), from its first sasl packet on (request
	// goroutine only; sasl.go).
	saslx sasl.Exchange
	// reqNow is when the request being handled was read (request goroutine only).
	reqNow time.Time
	// parkOn is the connection's latest write submitted to a shard's proposer on its own
	// (not in a group or transaction), and parkShard that shard: a read behind it may park
	// (park.go; request goroutine only).
	parkOn    *router.Request
	parkShard *router.Shard
	// leaseUntil caches the end of the session's lease (a time.Time) as the writer last saw it,
	// so that sending under a valid lease takes no lock (lease.go).
	leaseUntil atomic.Value

	out struct {
		sync.Mutex
		buf     []byte
		spare   []byte
		slots   []*slot // replies not yet flushed, in request order
		closed  bool
		reason  string
		drained chan struct{} // closed when slots becomes empty; nil while empty
		heads   []headWaiter  // closed when their slot reaches the head of slots
		// reserved counts the slots ever reserved: a group knows from it whether any request
		// came between it and the group before it.
		reserved uint64
		// unparkable counts the slots in slots that are not single-shard writes or parked
		// reads (park.go).
		unparkable int
		// urgent: buf holds output other than ping replies (a reply, an event): a lapsed lease
		// is renewed at once for it, and lazily for ping replies alone (lease.go).
		urgent bool
	}
	wake      chan struct{}
	writerEnd chan struct{}
	closeOnce sync.Once
}

// slot is the place of one reply in the connection's order.
type slot struct {
	frame []byte
	done  bool
	start time.Time
	kind  string
	// on lists the shards a write's reply waits for (nil for other requests): the watchdog
	// closes a connection whose oldest request waits on a replica cut off from its shard's
	// quorum (stuck.go).
	on []*router.Shard
	// parkable: a single-shard write through its shard's proposer, or a parked read; a read
	// may park behind such slots only (park.go).
	parkable bool
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, ip: remoteIP(nc), id: s.nextID.Add(1), wake: make(chan struct{}, 1),
		writerEnd: make(chan struct{})}
	ids := []wire.ID{{Scheme: "ip", ID: c.ip}}
	if p, ok := nc.(interface{ PeerIDs() []wire.ID }); ok {
		// The secure client port's connections (package tlsconf): a client certificate's
		// x509 (and super) ids, added once the TLS handshake completed, as ZooKeeper does.
		ids = append(ids, p.PeerIDs()...)
	}
	c.auth.Store(&ids)
	c.leaseUntil.Store(time.Time{})
	return c
}

// ID implements watchhub.Watcher.
func (c *conn) ID() uint64 { return c.id }

// AuthIDs implements watchhub.Watcher.
func (c *conn) AuthIDs() []wire.ID { return *c.auth.Load() }

// DeliverEvent implements watchhub.Watcher: it queues a notification immediately (events are
// not ordered behind pending replies; see the package doc).
func (c *conn) DeliverEvent(ev wire.WatcherEvent) {
	c.out.Lock()
	if c.out.closed {
		c.out.Unlock()
		return
	}
	c.out.buf = wire.AppendEvent(c.out.buf, ev)
	c.out.urgent = true
	over := len(c.out.buf) > c.s.o.MaxOutput
	c.out.Unlock()
	c.s.o.Metrics.watchEvents.Inc()
	c.signal()
	if over {
		go c.close("slow reader: queued output exceeds the limit")
	}
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// reserve appends an unfilled slot for a reply that will be completed later; on lists the
// shards a write waits for.
func (c *conn) reserve(kind string, on ...*router.Shard) *slot {
	return c.reserveSlot(&slot{start: time.Now(), kind: kind, on: on})
}

// reserveSlot appends sl, unfilled, to the reply order.
func (c *conn) reserveSlot(sl *slot) *slot {
	c.out.Lock()
	if !sl.parkable {
		c.out.unparkable++
	}
	if len(c.out.slots) == 0 {
		c.out.drained = make(chan struct{})
	}
	c.out.slots = append(c.out.slots, sl)
	c.out.reserved++
	c.out.Unlock()
	c.s.o.Metrics.outstanding.Inc()
	c.s.gate.add()
	return sl
}

// complete fills a slot and flushes every filled slot at the head of the queue.
func (c *conn) complete(sl *slot, frame []byte) {
	c.out.Lock()
	sl.frame, sl.done = frame, true
	n := 0
	for n < len(c.out.slots) && c.out.slots[n].done {
		h := c.out.slots[n]
		if !c.out.closed {
			c.out.buf = append(c.out.buf, h.frame...)
			c.out.urgent = true
		}
		c.s.stats.observe(time.Since(h.start))
		c.s.o.Metrics.observe(h.kind, time.Since(h.start).Seconds())
		c.s.o.Metrics.outstanding.Dec()
		c.s.gate.done()
		if !h.parkable {
			c.out.unparkable--
		}
		c.out.slots[n] = nil
		n++
	}
	if n > 0 {
		rest := copy(c.out.slots, c.out.slots[n:])
		c.out.slots = c.out.slots[:rest]
		if rest == 0 && c.out.drained != nil {
			close(c.out.drained)
			c.out.drained = nil
		}
		c.wakeHeads()
	}
	c.out.Unlock()
	if n > 0 {
		c.signal()
	}
}

// waitIdle blocks until every earlier request of the connection has its reply queued and its
// last group is applied on this server (group.go, replyAtDecision). It starts a pending group
// first (request goroutine only), whose replies it then waits for.
func (c *conn) waitIdle() bool {
	c.flushGroup()
	c.out.Lock()
	ch := c.out.drained
	closed := c.out.closed
	c.out.Unlock()
	if closed {
		return false
	}
	if ch != nil {
		select {
		case <-ch:
		case <-c.writerEnd:
			return false
		}
	}
	return c.waitGroupApplied(c.lastGroup)
}

// headWaiter is a channel to close once every request before sl has its reply queued.
type headWaiter struct {
	sl *slot
	ch chan struct{}
}

// whenHead returns a channel closed once every request before sl has its reply queued (sl is
// at the head of the reply order), or at once if that is so already.
func (c *conn) whenHead(sl *slot) <-chan struct{} {
	ch := make(chan struct{})
	c.out.Lock()
	defer c.out.Unlock()
	if len(c.out.slots) == 0 || c.out.slots[0] == sl {
		close(ch)
		return ch
	}
	c.out.heads = append(c.out.heads, headWaiter{sl: sl, ch: ch})
	return ch
}

// wakeHeads closes the channel of a waiter whose slot reached the head (c.out held).
func (c *conn) wakeHeads() {
	if len(c.out.heads) == 0 {
		return
	}
	keep := c.out.heads[:0]
	for _, w := range c.out.heads {
		if len(c.out.slots) == 0 || c.out.slots[0] == w.sl {
			close(w.ch)
			continue
		}
		keep = append(keep, w)
	}
	clear(c.out.heads[len(keep):])
	c.out.heads = keep
}

// reservedSlots returns how many slots the connection ever reserved.
func (c *conn) reservedSlots() uint64 {
	c.out.Lock()
	defer c.out.Unlock()
	return c.out.reserved
}

// idle reports whether every request of the connection has its reply queued and its last
// group is applied on this server (request goroutine only).
func (c *conn) idle() bool {
	if !isApplied(c.lastGroup) {
		return false
	}
	c.out.Lock()
	defer c.out.Unlock()
	return len(c.out.slots) == 0
}

// waitEarlier blocks until every request before sl has its reply queued (sl is at the head of
// the connection's reply order). It returns false if the connection closes first.
func (c *conn) waitEarlier(sl *slot) bool {
	for {
		c.out.Lock()
		head := len(c.out.slots) == 0 || c.out.slots[0] == sl
		closed := c.out.closed
		c.out.Unlock()
		switch {
		case head:
			return true
		case closed:
			return false
		}
		select {
		case <-time.After(time.Millisecond): // reroutes are rare (subtree moves): poll
		case <-c.writerEnd:
			return false
		}
	}
}

// throttle holds the request loop while the server is over its outstanding limit and this
// connection has a request outstanding (see throttle.go).
func (c *conn) throttle() {
	if c.group != nil && c.s.gate.full() {
		// The pending group's slots count as outstanding: it must not wait behind the gate
		// it holds shut.
		c.flushGroup()
	}
	c.out.Lock()
	own := c.out.drained
	c.out.Unlock()
	if c.s.gate.wait(own, c.writerEnd) {
		c.s.o.Metrics.throttled.Inc()
	}
}

// send queues a frame directly; the caller guarantees no earlier reply is pending.
func (c *conn) send(frame []byte) {
	c.out.Lock()
	if !c.out.closed {
		c.out.buf = append(c.out.buf, frame...)
		c.out.urgent = true
	}
	c.out.Unlock()
	c.signal()
}

// reply queues a reply directly (no pending earlier replies).
func (c *conn) reply(xid int32, err wire.Err, body wire.Record) { c.replyAt(xid, err, body, 0) }

// replyAt queues a reply whose content reflects state up to zxid (the view it was read from).
func (c *conn) replyAt(xid int32, err wire.Err, body wire.Record, zxid int64) {
	if err != wire.ErrOK {
		body = nil // error replies have no body
	}
	c.out.Lock()
	if !c.out.closed {
		c.out.buf = wire.AppendReply(c.out.buf, wire.ReplyHeader{Xid: xid, Zxid: c.replyZxid(zxid), Err: err}, body)
		c.out.urgent = c.out.urgent || xid != wire.XidPing
	}
	c.out.Unlock()
	c.signal()
	c.countReply(err)
}

func (c *conn) countReply(err wire.Err) {
	c.s.stats.sent.Add(1)
	if err != wire.ErrOK {
		c.s.o.Metrics.errors.WithLabelValues(err.String()).Inc()
	}
}

// replyZxid is the zxid for a reply header: the zxid of the state the reply reflects (a write's
// own zxid, the zxid of the view a read used), never below what the connection has seen. It is
// not the server's largest applied zxid over all shards: the connection's zxid is also the
// dependency its reads wait for (router.EnsureClosed), and a zxid of a shard the client never
// looked at would make its reads of an idle shard wait for a catch-up for nothing.
func (c *conn) replyZxid(z int64) int64 {
	for {
		cur := c.lastZxid.Load()
		if z <= cur {
			return cur
		}
		if c.lastZxid.CompareAndSwap(cur, z) {
			return z
		}
	}
}

// writeLoop sends queued output, batching everything queued since the last write into one call.
func (c *conn) writeLoop() {
	defer close(c.writerEnd)
	for range c.wake {
		if !c.leaseGate() {
			c.closeWith("session lease lapsed")
			return
		}
		c.out.Lock()
		buf := c.out.buf
		c.out.buf = c.out.spare[:0]
		c.out.urgent = false
		closed := c.out.closed
		c.out.Unlock()
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout()))
			if _, err := c.nc.Write(buf); err != nil {
				c.closeWith("write failed: " + err.Error())
				return
			}
		}
		c.out.Lock()
		if cap(buf) <= 1<<20 {
			c.out.spare = buf[:0]
		}
		c.out.Unlock()
		if closed {
			return
		}
	}
}

func (c *conn) writeTimeout() time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	return 30 * time.Second
}

// close flushes what is queued and closes the connection.
func (c *conn) close(reason string) {
	c.closeOnce.Do(func() {
		c.out.Lock()
		if !c.out.closed {
			c.out.closed = true
			c.out.reason = reason
		}
		c.out.Unlock()
		c.signal()
		// Give the writer a moment to flush the final replies (closeSession's reply).
		select {
		case <-c.writerEnd:
		case <-time.After(time.Second):
		}
		c.nc.Close()
		if reason != "" && reason != "client closed the connection" {
			c.s.o.Log.Debug("connection closed", "remote", c.nc.RemoteAddr().String(),
				"session", sessionHex(c.sessionID), "reason", reason)
		}
	})
}

// closeWith closes immediately without waiting for the writer (used by the writer itself). It
// does not go through closeOnce: a close under way waits for the writer to end, and Once would
// make the writer wait for that close in turn, until it gave up on the writer (a second).
func (c *conn) closeWith(reason string) {
	c.out.Lock()
	if !c.out.closed {
		c.out.closed = true
		c.out.reason = reason
	}
	c.out.Unlock()
	c.nc.Close()
}

// serve runs the connection: handshake, then the request loop.
func (c *conn) serve() {
	c.s.track(c)
	go c.writeLoop()
	defer func() {
		c.close("client closed the connection")
		<-c.writerEnd
		if c.sessionID != 0 {
			c.s.o.Hub.RemoveWatcher(c)
		}
		c.s.untrack(c)
	}()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	first, err := r.Peek(4)
	if err != nil {
		return
	}
	if w, ok := wire.FourLetterWord(first); ok {
		c.fourLetterWord(w)
		return
	}
	if !c.handshake(r) {
		return
	}
	c.requestLoop(r)
}

func (c *conn) readDeadlineFrom(now time.Time) time.Time {
	if c.timeout > 0 {
		return now.Add(c.timeout)
	}
	return now.Add(c.s.o.MaxTimeout + 10*time.Second)
}

func (c *conn) handshake(r *bufio.Reader) bool {
	c.nc.SetReadDeadline(time.Now().Add(c.s.o.MaxTimeout))
	frame, err := wire.ReadFrame(r, nil, c.s.o.MaxBuffer)
	if err != nil {
		c.logBad("reading connect request", err)
		return false
	}
	var req wire.ConnectRequest
	if err := req.Decode(wire.NewDecoder(frame)); err != nil {
		c.logBad("decoding connect request", err)
		return false
	}
	timeout := time.Duration(req.TimeOut) * time.Millisecond
	if timeout < c.s.o.MinTimeout {
		timeout = c.s.o.MinTimeout
	}
	if timeout > c.s.o.MaxTimeout {
		timeout = c.s.o.MaxTimeout
	}
	if c.s.readOnlyNow() {
		if req.LastZxidSeen > c.s.o.Router.LastZxid() {
			c.s.o.Log.Info("refusing session in read-only mode: client has seen a newer zxid than this server",
				"remote", c.nc.RemoteAddr().String(), "client_zxid", req.LastZxidSeen, "server_zxid", c.s.o.Router.LastZxid())
			return false
		}
		c.lastZxid.Store(req.LastZxidSeen)
		return c.readOnlyHandshake(&req, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.handshakeTimeout(timeout))
	defer cancel()
	if req.LastZxidSeen > c.s.o.Router.LastZxid() {
		// The client has seen more than this server applied: catch up instead of refusing.
		for _, sh := range c.s.o.Router.Shards() {
			if err := c.s.o.Sync(ctx, sh.ID); err != nil {
				break
			}
		}
		if req.LastZxidSeen > c.s.o.Router.LastZxid() {
			c.s.o.Log.Warn("refusing session: client has seen a newer zxid than this server",
				"remote", c.nc.RemoteAddr().String(), "client_zxid", req.LastZxidSeen, "server_zxid", c.s.o.Router.LastZxid())
			return false
		}
	}
	c.lastZxid.Store(req.LastZxidSeen)
	resp := wire.ConnectResponse{TimeOut: int32(timeout / time.Millisecond), HasReadOnly: req.HasReadOnly}
	if req.SessionID == 0 {
		id, pw, err := c.s.o.Sessions.Create(ctx, resp.TimeOut)
		if err != nil {
			c.s.o.Log.Warn("cannot create session", "remote", c.nc.RemoteAddr().String(), "err", err)
			return false
		}
		resp.SessionID, resp.Passwd = id, pw
		if c.epochs() {
			c.epoch = session.CreatedEpoch
			c.written = &writtenShards{gen: c.s.o.Router.MountGen()}
		}
	} else {
		// The local table may be stale (this server was cut off or paused): it decides only
		// the password. Whether the session is alive is the committed take-over's answer.
		e, err := c.s.o.Sessions.Validate(ctx, req.SessionID, req.Passwd)
		var epoch uint64
		if err == nil {
			epoch, err = c.s.o.Sessions.TakeOver(ctx, req.SessionID)
		}
		if errors.Is(err, session.ErrExpired) {
			// Expired, unknown or wrong password: ZooKeeper's "expired" answer, then close.
			c.send(wire.AppendFrame(nil, encodeRecord(&wire.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: req.HasReadOnly})))
			c.s.o.Log.Info("session expired or invalid at reconnect", "session", sessionHex(req.SessionID),
				"remote", c.nc.RemoteAddr().String())
			return false
		}
		if err != nil {
			c.s.o.Log.Warn("cannot take over session", "session", sessionHex(req.SessionID), "err", err)
			return false
		}
		resp.SessionID, resp.Passwd = e.ID, e.Passwd
		resp.TimeOut = int32(timeout / time.Millisecond)
		if c.epochs() {
			c.epoch, c.owned = epoch, make(chan struct{})
			go c.recordOwner(e.ID, epoch, c.owned)
		}
	}
	c.sessionID = resp.SessionID
	c.timeout = timeout
	c.s.bindSession(c)
	c.send(wire.AppendFrame(nil, encodeRecord(&resp)))
	return true
}

func encodeRecord(r wire.Record) []byte {
	e := wire.NewEncoder(nil)
	r.Encode(e)
	return e.Bytes()
}

func (c *conn) logBad(what string, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	c.warnBad("bad client input, closing connection", "session", sessionHex(c.sessionID), "while", what, "err", err)
}

func sessionHex(id int64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 18)
	b[0], b[1] = '0', 'x'
	for i := 0; i < 16; i++ {
		b[17-i] = digits[(uint64(id)>>(4*i))&15]
	}
	return string(b)
}

// touch reports session activity at now to the session manager, at most a few times per tick
// (frame reader only, inbound.go).
func (c *conn) touch(now time.Time) {
	ms := now.UnixMilli()
	if ms-c.lastTouch.Load() < touchEvery.Milliseconds() {
		return
	}
	c.lastTouch.Store(ms)
	c.s.o.Sessions.Touch(c.sessionID, now)
}

// touchEvery bounds how often a busy connection reports activity; the manager reports it to the
// meta shard once per half tick, so this only removes redundant work.
const touchEvery = 100 * time.Millisecond
