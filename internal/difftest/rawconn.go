package difftest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/corral/corral/wire"
)

// ErrRawClosed is returned (wrapped) by RawConn calls when the server closed
// the connection before answering.
var ErrRawClosed = errors.New("difftest: server closed the connection")

// rawMaxFrame bounds reply frames a RawConn accepts.
const rawMaxFrame = wire.DefaultMaxBuffer + 64*1024

// RawConn is one ZooKeeper connection at the wire level, for raw steps: it
// sends any opcode with any record (package wire) and returns the reply
// header and body undecoded, so that a step can send what go-zookeeper
// cannot (create2, multiRead, addWatch, setWatches2, unknown opcodes, ...).
//
// A reader goroutine takes every frame off the connection: watch
// notifications (xid -1) are appended to the event list in arrival order,
// ping replies are dropped, replies go to the waiting call. Replies to
// requests whose call was abandoned are dropped. A pinger keeps the session
// alive while the connection sits between steps.
type RawConn struct {
	nc   net.Conn
	addr string
	// Resp is the server's ConnectResponse.
	Resp wire.ConnectResponse

	wmu      sync.Mutex // serialises writes and xid allocation
	xid      int32
	lastSend time.Time

	mu       sync.Mutex
	waiting  map[int32]chan RawReply
	pingWait chan RawReply // a Call of OpPing waiting for its reply
	events   []Event
	states   []int32 // KeeperState of notifications with type None
	lastZxid int64
	err      error // why the reader stopped; nil while it runs

	done chan struct{} // closed when the reader has stopped
	stop chan struct{} // closed by Close
	once sync.Once
	wg   sync.WaitGroup
}

// RawReply is one reply: its header and its undecoded body.
type RawReply struct {
	Header wire.ReplyHeader
	Body   []byte
	ReqXid int32 // the request's xid (Header.Xid differs for pings)
}

// Decode decodes the body into rec.
func (r RawReply) Decode(rec wire.Record) error {
	if err := rec.Decode(wire.NewDecoder(r.Body)); err != nil {
		return fmt.Errorf("difftest: decoding %T: %w", rec, err)
	}
	return nil
}

// ErrName is the reply's error code as Result.Err ("" for OK).
func (r RawReply) ErrName() string { return CodeName(int32(r.Header.Err)) }

// HandshakeOutcome is what a client observes when it sends a ConnectRequest:
// the ConnectResponse (nil if the connection closed without one) and whether
// the server kept the connection open afterwards.
type HandshakeOutcome struct {
	Resp *wire.ConnectResponse
	Open bool
}

// RawHandshake dials addr, sends req and reports what came back. When the
// server answered and kept the connection, the connection is returned
// running (the caller must Close it); otherwise it is closed and nil.
// Whether the server kept the connection is decided by a ping: a reply means
// open, end of stream or a reset means closed.
func RawHandshake(ctx context.Context, addr string, req wire.ConnectRequest) (HandshakeOutcome, *RawConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return HandshakeOutcome{}, nil, fmt.Errorf("difftest: dial %s: %w", addr, err)
	}
	dl := time.Now().Add(10 * time.Second)
	if cd, ok := ctx.Deadline(); ok && cd.Before(dl) {
		dl = cd
	}
	nc.SetDeadline(dl)
	e := wire.NewEncoder(nil)
	mark := wire.BeginFrame(e)
	req.Encode(e)
	wire.EndFrame(e, mark)
	if _, err := nc.Write(e.Bytes()); err != nil {
		nc.Close()
		return HandshakeOutcome{}, nil, nil // closed before it could even send: no answer
	}
	br := bufio.NewReaderSize(nc, 64*1024)
	frame, err := wire.ReadFrame(br, nil, 4096)
	if err != nil {
		nc.Close()
		if isClosed(err) {
			return HandshakeOutcome{}, nil, nil
		}
		return HandshakeOutcome{}, nil, fmt.Errorf("difftest: reading connect response from %s: %w", addr, err)
	}
	var resp wire.ConnectResponse
	if err := resp.Decode(wire.NewDecoder(frame)); err != nil {
		nc.Close()
		return HandshakeOutcome{}, nil, fmt.Errorf("difftest: decoding connect response: %w", err)
	}
	out := HandshakeOutcome{Resp: &resp}
	// Ping: a reply proves the connection open.
	pe := wire.NewEncoder(nil)
	mark = wire.BeginFrame(pe)
	(&wire.RequestHeader{Xid: wire.XidPing, Op: wire.OpPing}).Encode(pe)
	wire.EndFrame(pe, mark)
	if _, err := nc.Write(pe.Bytes()); err != nil {
		nc.Close()
		return out, nil, nil
	}
	for {
		f, err := wire.ReadFrame(br, nil, rawMaxFrame)
		if err != nil {
			nc.Close()
			if isClosed(err) {
				return out, nil, nil
			}
			return out, nil, fmt.Errorf("difftest: waiting for the ping reply from %s: %w", addr, err)
		}
		var h wire.ReplyHeader
		if err := h.Decode(wire.NewDecoder(f)); err != nil {
			nc.Close()
			return out, nil, fmt.Errorf("difftest: decoding reply header: %w", err)
		}
		if h.Xid == wire.XidPing {
			break
		}
		// A notification can precede the ping reply (setWatches is not sent
		// here, so there should be none); keep it.
		if h.Xid == wire.XidNotification {
			continue
		}
	}
	nc.SetDeadline(time.Time{})
	out.Open = true
	return out, startRaw(nc, br, addr, resp, req.LastZxidSeen), nil
}

// DialRaw opens a session on addr with req (SessionID 0 for a new one) and
// returns the running connection. A handshake the server refuses or closes
// is an error.
func DialRaw(ctx context.Context, addr string, req wire.ConnectRequest) (*RawConn, error) {
	out, rc, err := RawHandshake(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	if rc == nil || out.Resp.SessionID == 0 {
		if rc != nil {
			rc.Close()
		}
		return nil, fmt.Errorf("difftest: %s refused the session (response %+v, open %v)", addr, out.Resp, out.Open)
	}
	return rc, nil
}

// NewSessionRequest is a ConnectRequest for a new session with the given
// timeout and, when readOnlyByte, the trailing readOnly byte (false).
func NewSessionRequest(timeout time.Duration, readOnlyByte bool) wire.ConnectRequest {
	return wire.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), Passwd: make([]byte, wire.PasswordLen),
		HasReadOnly: readOnlyByte}
}

func isClosed(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func startRaw(nc net.Conn, br *bufio.Reader, addr string, resp wire.ConnectResponse, lastZxid int64) *RawConn {
	rc := &RawConn{nc: nc, addr: addr, Resp: resp, waiting: map[int32]chan RawReply{}, lastZxid: lastZxid,
		done: make(chan struct{}), stop: make(chan struct{}), lastSend: time.Now()}
	rc.wg.Add(2)
	go rc.readLoop(br)
	go rc.pingLoop()
	return rc
}

func (rc *RawConn) readLoop(br *bufio.Reader) {
	defer rc.wg.Done()
	var err error
loop:
	for {
		var f []byte
		f, err = wire.ReadFrame(br, nil, rawMaxFrame)
		if err != nil {
			break loop
		}
		d := wire.NewDecoder(f)
		var h wire.ReplyHeader
		if err = h.Decode(d); err != nil {
			break loop
		}
		switch h.Xid {
		case wire.XidPing:
			// Ping replies carry xid -2 whatever the request's xid was; a
			// call that sent a ping (see Call) takes the first one.
			rc.mu.Lock()
			ch := rc.pingWait
			rc.pingWait = nil
			if ch != nil {
				for x, c := range rc.waiting {
					if c == ch {
						delete(rc.waiting, x)
					}
				}
			}
			rc.mu.Unlock()
			if ch != nil {
				ch <- RawReply{Header: h, Body: d.Rest()}
			}
			continue
		case wire.XidNotification:
			var ev wire.WatcherEvent
			if err = ev.Decode(d); err != nil {
				break loop
			}
			rc.mu.Lock()
			if ev.Type == wire.EventNone {
				rc.states = append(rc.states, ev.State)
			} else {
				rc.events = append(rc.events, Event{Type: EventType(ev.Type), Path: ev.Path})
			}
			rc.mu.Unlock()
			continue
		}
		rc.mu.Lock()
		if h.Zxid > rc.lastZxid {
			rc.lastZxid = h.Zxid
		}
		ch := rc.waiting[h.Xid]
		delete(rc.waiting, h.Xid)
		if ch != nil && ch == rc.pingWait {
			rc.pingWait = nil
		}
		rc.mu.Unlock()
		if ch != nil {
			ch <- RawReply{Header: h, Body: d.Rest()}
		}
	}
	if err == nil || isClosed(err) {
		err = ErrRawClosed
	}
	rc.mu.Lock()
	rc.err = err
	for x, ch := range rc.waiting {
		close(ch)
		delete(rc.waiting, x)
	}
	rc.mu.Unlock()
	close(rc.done)
}

// pingLoop pings whenever nothing was sent for a third of the session
// timeout.
func (rc *RawConn) pingLoop() {
	defer rc.wg.Done()
	every := time.Duration(rc.Resp.TimeOut) * time.Millisecond / 3
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every / 4)
	defer t.Stop()
	for {
		select {
		case <-rc.stop:
			return
		case <-rc.done:
			return
		case <-t.C:
			rc.wmu.Lock()
			if time.Since(rc.lastSend) >= every {
				rc.writeLocked(wire.XidPing, wire.OpPing, nil)
			}
			rc.wmu.Unlock()
		}
	}
}

func (rc *RawConn) writeLocked(xid int32, op wire.OpCode, req wire.Record) error {
	e := wire.NewEncoder(nil)
	mark := wire.BeginFrame(e)
	(&wire.RequestHeader{Xid: xid, Op: op}).Encode(e)
	if req != nil {
		req.Encode(e)
	}
	wire.EndFrame(e, mark)
	rc.lastSend = time.Now()
	rc.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := rc.nc.Write(e.Bytes())
	return err
}

// Call sends op with req (nil for an empty body) under the next xid and waits
// for the reply with that xid (for a ping: also a reply with xid -2, which is
// how ZooKeeper answers every ping). If the server closes the connection
// first the error wraps ErrRawClosed.
func (rc *RawConn) Call(ctx context.Context, op wire.OpCode, req wire.Record) (RawReply, error) {
	rc.wmu.Lock()
	rc.xid++
	xid := rc.xid
	return rc.callLocked(ctx, xid, op, req)
}

// CallXid is Call with an explicit xid (e.g. wire.XidAuth for auth).
func (rc *RawConn) CallXid(ctx context.Context, xid int32, op wire.OpCode, req wire.Record) (RawReply, error) {
	rc.wmu.Lock()
	return rc.callLocked(ctx, xid, op, req)
}

// callLocked registers the reply channel, writes and unlocks wmu, then waits.
func (rc *RawConn) callLocked(ctx context.Context, xid int32, op wire.OpCode, req wire.Record) (RawReply, error) {
	ch := make(chan RawReply, 1)
	rc.mu.Lock()
	if rc.err != nil {
		err := rc.err
		rc.mu.Unlock()
		rc.wmu.Unlock()
		return RawReply{}, err
	}
	rc.waiting[xid] = ch
	if op == wire.OpPing {
		rc.pingWait = ch
	}
	rc.mu.Unlock()
	err := rc.writeLocked(xid, op, req)
	rc.wmu.Unlock()
	if err != nil {
		// The reader notices the broken connection too; wait for it.
		select {
		case <-rc.done:
		case <-time.After(5 * time.Second):
		}
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return RawReply{}, rc.Err()
		}
		r.ReqXid = xid
		return r, nil
	case <-ctx.Done():
		rc.mu.Lock()
		delete(rc.waiting, xid)
		if rc.pingWait == ch {
			rc.pingWait = nil
		}
		rc.mu.Unlock()
		return RawReply{}, ctx.Err()
	}
}

// Err is why the connection ended (wrapping ErrRawClosed when the server
// closed it), or nil while it is up.
func (rc *RawConn) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.err
}

// Closed waits up to d for the connection to end and reports whether it did.
func (rc *RawConn) Closed(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-rc.done:
		return true
	case <-t.C:
		return false
	}
}

// TakeEvents returns the watch events received so far (absolute paths, in
// arrival order) and forgets them.
func (rc *RawConn) TakeEvents() []Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ev := rc.events
	rc.events = nil
	if ev == nil {
		ev = []Event{}
	}
	return ev
}

// TakeStates returns the KeeperStates of the state notifications (event
// type None) received so far and forgets them.
func (rc *RawConn) TakeStates() []int32 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := rc.states
	rc.states = nil
	return s
}

// LastZxid is the largest zxid seen in a reply header (or the handshake's
// lastZxidSeen): what a client sends as lastZxidSeen and setWatches'
// relativeZxid when it reconnects.
func (rc *RawConn) LastZxid() int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.lastZxid
}

// SessionID is the session's id.
func (rc *RawConn) SessionID() int64 { return rc.Resp.SessionID }

// Barrier makes every watch event the server owes this connection for
// earlier changes arrive: a sync of path, then an exists of path. ZooKeeper
// delivers an event before any reply that reflects its change.
func (rc *RawConn) Barrier(ctx context.Context, path string) error {
	if _, err := rc.Call(ctx, wire.OpSync, &wire.SyncRequest{Path: path}); err != nil {
		return err
	}
	_, err := rc.Call(ctx, wire.OpExists, &wire.ExistsRequest{Path: path})
	return err
}

// CloseSession sends closeSession and waits for its reply (or the end of the
// connection), then closes the connection. It returns the reply's error
// name, or "" when the server closed without replying.
func (rc *RawConn) CloseSession(ctx context.Context) (string, error) {
	r, err := rc.Call(ctx, wire.OpCloseSession, nil)
	rc.Close()
	if err != nil {
		if errors.Is(err, ErrRawClosed) {
			return "", nil
		}
		return "", err
	}
	return r.ErrName(), nil
}

// Close closes the connection without closing the session (a client that
// lost its connection); the session lives on until it expires or is resumed.
func (rc *RawConn) Close() {
	rc.once.Do(func() {
		close(rc.stop)
		rc.nc.Close()
		rc.wg.Wait()
	})
}
