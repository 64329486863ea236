package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral/corral/wire"
)

// Options configures a session. The zero value asks for a 10 s session timeout.
type Options struct {
	// SessionTimeout is the requested session timeout; the server clamps it (ZooKeeper to
	// [2, 20] × tickTime) and Conn.Timeout reports the negotiated value. Default 10 s.
	SessionTimeout time.Duration
	// SendReadOnly appends the optional readOnly byte to the ConnectRequest (as the Java, C and
	// Python clients do; go-zookeeper does not). ReadOnly is its value and implies SendReadOnly.
	SendReadOnly bool
	ReadOnly     bool
	// SessionID, Passwd and LastZxidSeen resume an existing session; zero values start a new one.
	SessionID    int64
	Passwd       []byte
	LastZxidSeen int64
	// DialTimeout bounds the TCP connect and handshake with each address (ctx may end it
	// sooner). Default 5 s.
	DialTimeout time.Duration
	// CloseTimeout bounds how long Close waits for the closeSession reply. Default 2 s.
	CloseTimeout time.Duration
	// OnEvent, if set, receives watch events synchronously on the reader goroutine, ordered with
	// the replies on the connection; it must not block. When it is set, Events() gets nothing
	// (the channel is closed when the connection ends).
	OnEvent func(Event)
	// MaxFrame is the largest reply frame accepted (default wire.DefaultMaxBuffer plus room for
	// the headers). A larger length prefix is a protocol error.
	MaxFrame int
	// ReadBufferSize is the reader's buffer; replies up to this size are decoded in place.
	// Default 256 KiB.
	ReadBufferSize int
}

func (o *Options) withDefaults() Options {
	r := *o
	if r.SessionTimeout <= 0 {
		r.SessionTimeout = 10 * time.Second
	}
	if r.DialTimeout <= 0 {
		r.DialTimeout = 5 * time.Second
	}
	if r.CloseTimeout <= 0 {
		r.CloseTimeout = 2 * time.Second
	}
	if r.MaxFrame <= 0 {
		r.MaxFrame = wire.DefaultMaxBuffer + 64*1024
	}
	if r.ReadBufferSize <= 0 {
		r.ReadBufferSize = 256 * 1024
	}
	if r.ReadOnly {
		r.SendReadOnly = true
	}
	return r
}

// Event is a watch notification, or a state change of the connection (Type wire.EventNone).
// After the connection ends, one last event with State wire.StateDisconnected (or
// wire.StateClosed after Close) and Err set to the cause is queued.
type Event struct {
	Type  wire.EventType
	State int32
	Path  string
	Err   error
}

// pending is one outstanding request. cb is nil or one of the callback types of the Async
// methods, chosen by op.
type pending struct {
	xid int32
	op  wire.OpCode
	cb  any
}

// Conn is one session over one TCP connection. Its methods are safe for concurrent use.
type Conn struct {
	nc        net.Conn
	addr      string
	opts      Options
	sessionID int64
	passwd    []byte
	timeout   time.Duration
	readOnly  bool
	epoch     time.Time

	lastZxid atomic.Int64
	lastRecv atomic.Int64 // ns since epoch
	lastSend atomic.Int64 // ns since epoch

	// mu guards the output buffer, the xid counter and the outstanding FIFO; holding it while
	// encoding makes xid order, FIFO order and byte order on the wire the same. It is never held
	// while a callback runs. Lock order: mu before ev.mu.
	mu struct {
		sync.Mutex
		xid    int32
		out    []byte
		pend   ring
		closed bool // set by the reader once it stops; later calls fail at once
	}
	wake chan struct{} // cap 1: the output buffer became non-empty

	abortOnce sync.Once
	dying     chan struct{} // closed by abort; cause and lossErr are set before
	cause     error
	lossErr   error

	ev struct {
		sync.Mutex
		q    []Event
		done bool // the reader queued its last event
	}
	evWake   chan struct{}
	events   chan Event
	stopPump chan struct{}

	closeCalled atomic.Bool
	closeErr    error
	closed      chan struct{} // closed when Close has finished
	readerDone  chan struct{}
	wg          sync.WaitGroup
}

// Dial connects to the first address in addrs that accepts a session, trying them in order.
// Spread sessions over an ensemble by rotating addrs per caller. A failure matches
// wire.ErrConnectionLoss, or wire.ErrSessionExpired when resuming an expired session.
func Dial(ctx context.Context, addrs []string, opts Options) (*Conn, error) {
	if len(addrs) == 0 {
		return nil, ErrNoServers
	}
	o := opts.withDefaults()
	var errs []error
	for _, a := range addrs {
		c, err := dialOne(ctx, a, o)
		if err == nil {
			return c, nil
		}
		if errors.Is(err, wire.ErrSessionExpired) {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", wire.ErrConnectionLoss, errors.Join(errs...))
}

func dialOne(ctx context.Context, addr string, o Options) (*Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	resp, err := handshake(dctx, nc, &o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := &Conn{
		nc:         nc,
		addr:       addr,
		opts:       o,
		sessionID:  resp.SessionID,
		passwd:     resp.Passwd,
		timeout:    time.Duration(resp.TimeOut) * time.Millisecond,
		readOnly:   resp.ReadOnly,
		epoch:      time.Now(),
		wake:       make(chan struct{}, 1),
		dying:      make(chan struct{}),
		evWake:     make(chan struct{}, 1),
		events:     make(chan Event, 64),
		stopPump:   make(chan struct{}),
		closed:     make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	c.mu.xid = 0
	c.mu.out = make([]byte, 0, 64*1024)
	c.lastZxid.Store(o.LastZxidSeen)
	br := bufio.NewReaderSize(nc, o.ReadBufferSize)
	c.wg.Add(4)
	go c.readLoop(br)
	go c.writeLoop()
	go c.pingLoop()
	go c.eventPump()
	return c, nil
}

// handshake sends the ConnectRequest and reads the ConnectResponse (neither has a header).
func handshake(ctx context.Context, nc net.Conn, o *Options) (wire.ConnectResponse, error) {
	var resp wire.ConnectResponse
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	passwd := o.Passwd
	if passwd == nil {
		passwd = make([]byte, wire.PasswordLen)
	}
	req := wire.ConnectRequest{
		LastZxidSeen: o.LastZxidSeen,
		TimeOut:      int32(o.SessionTimeout / time.Millisecond),
		SessionID:    o.SessionID,
		Passwd:       passwd,
		ReadOnly:     o.ReadOnly,
		HasReadOnly:  o.SendReadOnly,
	}
	var e wire.Encoder
	e.SetBytes(make([]byte, 4, 64))
	req.Encode(&e)
	b := e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := nc.Write(b); err != nil {
		return resp, err
	}
	var lb [4]byte
	if _, err := io.ReadFull(nc, lb[:]); err != nil {
		return resp, fmt.Errorf("reading connect response: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(lb[:]))
	if n < wire.ConnectResponseSize-4 || n > 4096 {
		return resp, fmt.Errorf("%w: connect response length %d", ErrProtocol, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(nc, body); err != nil {
		return resp, fmt.Errorf("reading connect response: %w", err)
	}
	var d wire.Decoder
	d.Reset(body)
	if err := resp.Decode(&d); err != nil {
		return resp, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if resp.TimeOut <= 0 || resp.SessionID == 0 {
		return resp, wire.ErrSessionExpired
	}
	nc.SetDeadline(time.Time{})
	return resp, nil
}

// SessionID returns the session's id.
func (c *Conn) SessionID() int64 { return c.sessionID }

// Passwd returns the session's password (to resume it with Options.Passwd).
func (c *Conn) Passwd() []byte { return c.passwd }

// Timeout returns the negotiated session timeout.
func (c *Conn) Timeout() time.Duration { return c.timeout }

// ReadOnly reports whether the server said the session is read-only (only meaningful when the
// request carried the readOnly byte).
func (c *Conn) ReadOnly() bool { return c.readOnly }

// Addr returns the server address the connection is using.
func (c *Conn) Addr() string { return c.addr }

// LastZxid returns the largest zxid seen in a reply header.
func (c *Conn) LastZxid() int64 { return c.lastZxid.Load() }

// Done is closed when the connection has ended (by Close or a failure).
func (c *Conn) Done() <-chan struct{} { return c.dying }

// Err returns why the connection ended (matching wire.ErrConnectionLoss), or nil while it is up.
func (c *Conn) Err() error {
	select {
	case <-c.dying:
		return c.lossErr
	default:
		return nil
	}
}

// Outstanding returns the number of requests sent and not yet answered.
func (c *Conn) Outstanding() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.pend.n
}

// Events returns the channel of watch and state events. It is closed after the connection ends
// and the last event was taken, or when Close returns (events not yet taken are then dropped).
func (c *Conn) Events() <-chan Event { return c.events }

func (c *Conn) now() int64 { return int64(time.Since(c.epoch)) }

// abort ends the connection (first cause wins) and wakes every goroutine; the reader then
// fails what is outstanding.
func (c *Conn) abort(err error) {
	c.abortOnce.Do(func() {
		if c.closeCalled.Load() {
			err = ErrClosed
		}
		c.cause = err
		c.lossErr = fmt.Errorf("%w: %w", wire.ErrConnectionLoss, err)
		close(c.dying)
		c.nc.Close()
	})
}

// Close closes the session (closeSession, waiting up to Options.CloseTimeout for the reply), then
// the connection, and waits for every goroutine of the Conn. Outstanding calls fail with an
// error matching both wire.ErrConnectionLoss and ErrClosed. Close returns nil when the server
// acknowledged the closeSession; calling it again returns the first result.
func (c *Conn) Close() error {
	if !c.closeCalled.CompareAndSwap(false, true) {
		<-c.closed
		return c.closeErr
	}
	done := make(chan error, 1)
	c.enqueue(wire.OpCloseSession, &reqBody{}, func(err error) { done <- err })
	t := time.NewTimer(c.opts.CloseTimeout)
	var err error
	select {
	case err = <-done:
	case <-t.C:
		err = fmt.Errorf("%w: closeSession not answered within %v", wire.ErrConnectionLoss, c.opts.CloseTimeout)
	}
	t.Stop()
	c.abort(ErrClosed)
	<-c.readerDone
	close(c.stopPump)
	c.wg.Wait()
	c.closeErr = err
	close(c.closed)
	return err
}

// reqBody carries the fields of any request record; enqueue encodes the record chosen by the
// opcode straight into the output buffer, so no record escapes to the heap.
type reqBody struct {
	path    string
	data    []byte
	watch   bool
	version int32
	flags   int32
	mode    int32
	acl     []wire.ACL
	ops     []wire.MultiOp
}

func (b *reqBody) encode(e *wire.Encoder, op wire.OpCode) {
	switch op {
	case wire.OpGetData:
		r := wire.GetDataRequest{Path: b.path, Watch: b.watch}
		r.Encode(e)
	case wire.OpSetData:
		r := wire.SetDataRequest{Path: b.path, Data: b.data, Version: b.version}
		r.Encode(e)
	case wire.OpExists:
		r := wire.ExistsRequest{Path: b.path, Watch: b.watch}
		r.Encode(e)
	case wire.OpGetChildren2:
		r := wire.GetChildrenRequest{Path: b.path, Watch: b.watch}
		r.Encode(e)
	case wire.OpCreate2:
		r := wire.CreateRequest{Path: b.path, Data: b.data, ACL: b.acl, Flags: b.flags}
		r.Encode(e)
	case wire.OpDelete:
		r := wire.DeleteRequest{Path: b.path, Version: b.version}
		r.Encode(e)
	case wire.OpSync:
		r := wire.SyncRequest{Path: b.path}
		r.Encode(e)
	case wire.OpAddWatch:
		r := wire.AddWatchRequest{Path: b.path, Mode: b.mode}
		r.Encode(e)
	case wire.OpMulti:
		r := wire.MultiRequest{Ops: b.ops}
		r.Encode(e)
	case wire.OpPing, wire.OpCloseSession:
		// empty body
	}
}

// enqueue appends one request frame to the output buffer and its callback to the FIFO. If the
// connection has ended, cb runs at once (on the caller's goroutine) with the loss error.
func (c *Conn) enqueue(op wire.OpCode, body *reqBody, cb any) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		c.complete(op, cb, wire.ErrOK, nil, c.lossErr)
		return
	}
	var xid int32
	if op == wire.OpPing {
		xid = wire.XidPing
	} else {
		c.mu.xid++
		if c.mu.xid <= 0 {
			c.mu.xid = 1
		}
		xid = c.mu.xid
	}
	wasEmpty := len(c.mu.out) == 0
	start := len(c.mu.out)
	var e wire.Encoder
	e.SetBytes(append(c.mu.out, 0, 0, 0, 0))
	h := wire.RequestHeader{Xid: xid, Op: op}
	h.Encode(&e)
	body.encode(&e, op)
	out := e.Bytes()
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
	c.mu.out = out
	if op != wire.OpPing {
		c.mu.pend.push(pending{xid: xid, op: op, cb: cb})
	}
	c.mu.Unlock()
	if wasEmpty {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// writeLoop owns the write side: it swaps out the output buffer and writes it in one call.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	var buf []byte = make([]byte, 0, 64*1024)
	for {
		select {
		case <-c.wake:
		case <-c.dying:
			return
		}
		for {
			c.mu.Lock()
			buf, c.mu.out = c.mu.out, buf[:0]
			c.mu.Unlock()
			if len(buf) == 0 {
				break
			}
			c.nc.SetWriteDeadline(time.Now().Add(c.timeout * 2 / 3))
			if _, err := c.nc.Write(buf); err != nil {
				c.abort(fmt.Errorf("write: %w", err))
				return
			}
			c.lastSend.Store(c.now())
			if cap(buf) > 4<<20 { // drop a buffer grown by a burst
				buf = make([]byte, 0, 64*1024)
			}
		}
	}
}

// pingLoop pings when the connection was idle for a third of the timeout and ends it when
// nothing arrived for two thirds.
func (c *Conn) pingLoop() {
	defer c.wg.Done()
	idle := c.timeout / 3
	t := time.NewTicker(max(idle/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.dying:
			return
		case <-t.C:
		}
		now := c.now()
		if time.Duration(now-c.lastRecv.Load()) > c.timeout*2/3 {
			c.abort(ErrTimeout)
			return
		}
		if time.Duration(now-c.lastSend.Load()) >= idle {
			c.enqueue(wire.OpPing, &reqBody{}, nil)
		}
	}
}

// readLoop owns the read side and the outstanding FIFO's head.
func (c *Conn) readLoop(br *bufio.Reader) {
	defer c.wg.Done()
	err := c.readFrames(br)
	c.abort(err)
	c.mu.Lock()
	c.mu.closed = true
	c.mu.Unlock()
	for {
		c.mu.Lock()
		if c.mu.pend.n == 0 {
			c.mu.Unlock()
			break
		}
		p := c.mu.pend.pop()
		c.mu.Unlock()
		c.complete(p.op, p.cb, wire.ErrOK, nil, c.lossErr)
	}
	state := wire.StateDisconnected
	if errors.Is(c.cause, ErrClosed) {
		state = wire.StateClosed
	}
	c.deliver(Event{Type: wire.EventNone, State: state, Err: c.lossErr})
	c.ev.Lock()
	c.ev.done = true
	c.ev.Unlock()
	c.wakePump()
	close(c.readerDone)
}

func (c *Conn) readFrames(br *bufio.Reader) error {
	var scratch []byte
	for {
		lb, err := br.Peek(4)
		if err != nil {
			return err
		}
		n := int(int32(binary.BigEndian.Uint32(lb)))
		if n < wire.ReplyHeaderSize || n > c.opts.MaxFrame {
			return fmt.Errorf("%w: reply frame length %d", ErrProtocol, n)
		}
		var frame []byte
		inPlace := 4+n <= br.Size()
		if inPlace {
			b, err := br.Peek(4 + n)
			if err != nil {
				return err
			}
			frame = b[4:]
		} else {
			br.Discard(4)
			if cap(scratch) < n {
				scratch = make([]byte, n)
			}
			frame = scratch[:n]
			if _, err := io.ReadFull(br, frame); err != nil {
				return err
			}
		}
		c.lastRecv.Store(c.now())
		if err := c.handle(frame); err != nil {
			return err
		}
		if inPlace {
			br.Discard(4 + n)
		}
	}
}

// handle dispatches one reply frame.
func (c *Conn) handle(frame []byte) error {
	var d wire.Decoder
	d.Reset(frame)
	var h wire.ReplyHeader
	if err := h.Decode(&d); err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	switch h.Xid {
	case wire.XidNotification:
		var we wire.WatcherEvent
		if err := we.Decode(&d); err != nil {
			return fmt.Errorf("%w: notification: %w", ErrProtocol, err)
		}
		c.deliver(Event{Type: we.Type, State: we.State, Path: we.Path})
		return nil
	case wire.XidPing, wire.XidAuth:
		return nil
	}
	if h.Zxid > c.lastZxid.Load() {
		c.lastZxid.Store(h.Zxid)
	}
	c.mu.Lock()
	if c.mu.pend.n == 0 {
		c.mu.Unlock()
		return fmt.Errorf("%w: reply with xid %d but nothing outstanding", ErrProtocol, h.Xid)
	}
	if head := c.mu.pend.peek(); head.xid != h.Xid {
		want := head.xid
		c.mu.Unlock()
		return fmt.Errorf("%w: reply xid %d out of order, expected %d", ErrProtocol, h.Xid, want)
	}
	p := c.mu.pend.pop()
	c.mu.Unlock()
	return c.complete(p.op, p.cb, h.Err, &d, nil)
}

// complete decodes a reply body (d, when code is OK) and runs the callback. With failure set, the
// callback gets failure and no body is read. It returns a protocol error when the body is bad.
func (c *Conn) complete(op wire.OpCode, cb any, code wire.Err, d *wire.Decoder, failure error) error {
	err := failure
	if err == nil && code != wire.ErrOK {
		err = code
	}
	body := err == nil && d != nil
	var perr error
	bad := func(derr error) error {
		perr = fmt.Errorf("%w: decoding reply to op %d: %w", ErrProtocol, op, derr)
		return fmt.Errorf("%w: %w", wire.ErrConnectionLoss, perr)
	}
	switch op {
	case wire.OpGetData:
		var r wire.GetDataResponse
		if body {
			if derr := r.Decode(d); derr != nil {
				err = bad(derr)
			}
		}
		if f, _ := cb.(func([]byte, wire.Stat, error)); f != nil {
			f(r.Data, r.Stat, err)
		}
	case wire.OpSetData, wire.OpExists:
		var st wire.Stat
		if body {
			if derr := st.Decode(d); derr != nil {
				err = bad(derr)
			}
		}
		if f, _ := cb.(func(wire.Stat, error)); f != nil {
			f(st, err)
		}
	case wire.OpCreate2:
		var r wire.Create2Response
		if body {
			if derr := r.Decode(d); derr != nil {
				err = bad(derr)
			}
		}
		if f, _ := cb.(func(string, wire.Stat, error)); f != nil {
			f(r.Path, r.Stat, err)
		}
	case wire.OpGetChildren2:
		var r wire.GetChildren2Response
		if body {
			if derr := r.Decode(d); derr != nil {
				err = bad(derr)
			}
		}
		if f, _ := cb.(func([]string, wire.Stat, error)); f != nil {
			f(r.Children, r.Stat, err)
		}
	case wire.OpSync:
		var r wire.SyncResponse
		if body {
			if derr := r.Decode(d); derr != nil {
				err = bad(derr)
			}
		}
		if f, _ := cb.(func(string, error)); f != nil {
			f(r.Path, err)
		}
	case wire.OpAddWatch:
		// The body is an ErrorResponse{err}; the header already carries the code.
		if f, _ := cb.(func(error)); f != nil {
			f(err)
		}
	case wire.OpMulti:
		var r wire.MultiResponse
		if body {
			if derr := r.Decode(d); derr != nil {
				err = bad(derr)
			} else {
				err = firstMultiErr(r.Results)
			}
		}
		if f, _ := cb.(func([]wire.MultiResult, error)); f != nil {
			f(r.Results, err)
		}
	default: // delete, closeSession
		if f, _ := cb.(func(error)); f != nil {
			f(err)
		}
	}
	return perr
}

// firstMultiErr returns the code of the op that failed a multi: the first result whose error is
// neither OK (rolled back) nor RUNTIMEINCONSISTENCY (not attempted), else the first non-OK one.
func firstMultiErr(rs []wire.MultiResult) error {
	var first wire.Err
	for i := range rs {
		e := rs[i].Err
		if e == wire.ErrOK {
			continue
		}
		if e != wire.ErrRuntimeInconsistency {
			return e
		}
		if first == wire.ErrOK {
			first = e
		}
	}
	if first != wire.ErrOK {
		return first
	}
	return nil
}

// deliver hands an event to OnEvent or to the pump's queue.
func (c *Conn) deliver(ev Event) {
	if c.opts.OnEvent != nil {
		c.opts.OnEvent(ev)
		return
	}
	c.ev.Lock()
	c.ev.q = append(c.ev.q, ev)
	c.ev.Unlock()
	c.wakePump()
}

func (c *Conn) wakePump() {
	select {
	case c.evWake <- struct{}{}:
	default:
	}
}

// eventPump moves queued events to the Events channel, in order, and closes it at the end.
func (c *Conn) eventPump() {
	defer c.wg.Done()
	defer close(c.events)
	for {
		c.ev.Lock()
		if len(c.ev.q) == 0 {
			done := c.ev.done
			c.ev.q = c.ev.q[:0]
			c.ev.Unlock()
			if done {
				return
			}
			select {
			case <-c.evWake:
				continue
			case <-c.stopPump:
				return
			}
		}
		ev := c.ev.q[0]
		c.ev.q[0] = Event{}
		c.ev.q = c.ev.q[1:]
		c.ev.Unlock()
		select {
		case c.events <- ev:
		case <-c.stopPump:
			return
		}
	}
}
