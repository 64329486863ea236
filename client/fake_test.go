package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral/corral/wire"
)

// fakeServer is an in-process ZooKeeper stand-in: it completes the handshake and then hands each
// request to serve, which writes whatever replies the test wants (in or out of order).
type fakeServer struct {
	ln net.Listener
	wg sync.WaitGroup
	// timeout is the negotiated session timeout in ms; 0 answers with an expired session.
	timeout int32
	serve   func(fc *fakeConn, xid int32, op wire.OpCode, body []byte)
}

type fakeConn struct {
	nc  net.Conn
	out []byte
	mu  sync.Mutex
}

func (fc *fakeConn) reply(xid int32, zxid int64, code wire.Err, body wire.Record) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.out = wire.AppendReply(fc.out[:0], wire.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body)
	fc.nc.Write(fc.out)
}

func (fc *fakeConn) event(ev wire.WatcherEvent) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.out = wire.AppendEvent(fc.out[:0], ev)
	fc.nc.Write(fc.out)
}

func newFakeServer(t testing.TB, timeout int32, serve func(fc *fakeConn, xid int32, op wire.OpCode, body []byte)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, timeout: timeout, serve: serve}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer nc.Close()
			s.handleConn(nc)
		}()
	}
}

func (s *fakeServer) handleConn(nc net.Conn) {
	br := bufio.NewReader(nc)
	frame, err := wire.ReadFrame(br, nil, 1<<20)
	if err != nil {
		return
	}
	var req wire.ConnectRequest
	d := wire.NewDecoder(frame)
	if req.Decode(d) != nil {
		return
	}
	resp := wire.ConnectResponse{TimeOut: s.timeout, SessionID: 0x1234, Passwd: make([]byte, 16),
		HasReadOnly: req.HasReadOnly}
	if s.timeout == 0 {
		resp.SessionID = 0
	}
	e := wire.NewEncoder(nil)
	resp.Encode(e)
	nc.Write(wire.AppendFrame(nil, e.Bytes()))
	fc := &fakeConn{nc: nc}
	var buf []byte
	for {
		buf, err = wire.ReadFrame(br, buf, 1<<20)
		if err != nil {
			return
		}
		var h wire.RequestHeader
		d := wire.NewDecoder(buf)
		if h.Decode(d) != nil {
			return
		}
		s.serve(fc, h.Xid, h.Op, d.Rest())
	}
}

// echoServe answers every request in order with an OK reply and a body fitting the op.
func echoServe(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {
	switch op {
	case wire.OpPing:
		fc.reply(xid, 0, wire.ErrOK, nil)
	case wire.OpGetData:
		var r wire.GetDataRequest
		r.Decode(wire.NewDecoder(body))
		fc.reply(xid, 7, wire.ErrOK, &wire.GetDataResponse{Data: []byte(r.Path), Stat: wire.Stat{Version: 1}})
	case wire.OpCloseSession:
		fc.reply(xid, 8, wire.ErrOK, nil)
		fc.nc.Close()
	default:
		fc.reply(xid, 7, wire.ErrOK, nil)
	}
}

func dialFake(t *testing.T, s *fakeServer, opts Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, []string{s.addr()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestFakePipelinedInOrder(t *testing.T) {
	s := newFakeServer(t, 30000, echoServe)
	c := dialFake(t, s, Options{})
	const n = 5000
	var next atomic.Int32
	var bad atomic.Int32
	done := make(chan struct{})
	for i := 0; i < n; i++ {
		want := int32(i)
		path := "/p" + strconv.Itoa(i)
		c.GetDataAsync(path, false, func(data []byte, st wire.Stat, err error) {
			if err != nil || string(data) != path || next.Add(1)-1 != want {
				bad.Add(1)
			}
			if want == n-1 {
				close(done)
			}
		})
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("only %d of %d replies", next.Load(), n)
	}
	if bad.Load() != 0 {
		t.Fatalf("%d callbacks got a wrong reply or ran out of order", bad.Load())
	}
	if z := c.LastZxid(); z != 7 {
		t.Fatalf("LastZxid = %d, want 7", z)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestFakeXidMismatchClosesConnection(t *testing.T) {
	var mu sync.Mutex
	var held []int32
	s := newFakeServer(t, 30000, func(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {
		if op != wire.OpGetData {
			echoServe(fc, xid, op, body)
			return
		}
		mu.Lock()
		held = append(held, xid)
		if len(held) == 3 { // answer the second request first
			fc.reply(held[1], 1, wire.ErrOK, &wire.GetDataResponse{})
		}
		mu.Unlock()
	})
	c := dialFake(t, s, Options{})
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		c.GetDataAsync("/x", false, func(_ []byte, _ wire.Stat, err error) { errs <- err })
	}
	for i := 0; i < 3; i++ {
		select {
		case err := <-errs:
			if !errors.Is(err, wire.ErrConnectionLoss) || !errors.Is(err, ErrProtocol) {
				t.Fatalf("call %d: err = %v, want connection loss caused by a protocol error", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("outstanding calls were not failed")
		}
	}
	<-c.Done()
	if !errors.Is(c.Err(), ErrProtocol) {
		t.Fatalf("Err() = %v", c.Err())
	}
	// Calls after the failure fail at once.
	_, _, err := c.Get(context.Background(), "/x", false)
	if !errors.Is(err, wire.ErrConnectionLoss) {
		t.Fatalf("Get after failure: %v", err)
	}
	// The events channel ends with a Disconnected state event.
	var last Event
	for ev := range c.Events() {
		last = ev
	}
	if last.State != wire.StateDisconnected {
		t.Fatalf("last event %+v, want Disconnected", last)
	}
}

func TestFakeReplyWithNothingOutstanding(t *testing.T) {
	s := newFakeServer(t, 30000, func(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {
		fc.reply(xid, 1, wire.ErrOK, nil)
		fc.reply(xid+100, 1, wire.ErrOK, nil)
	})
	c := dialFake(t, s, Options{})
	if err := c.Delete(context.Background(), "/a", -1); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection not closed after an unexpected reply")
	}
	if !errors.Is(c.Err(), ErrProtocol) {
		t.Fatalf("Err() = %v", c.Err())
	}
}

func TestFakeErrorCodes(t *testing.T) {
	s := newFakeServer(t, 30000, func(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {
		switch op {
		case wire.OpExists, wire.OpGetData:
			fc.reply(xid, 1, wire.ErrNoNode, nil)
		case wire.OpMulti:
			fc.reply(xid, 1, wire.ErrOK, &wire.MultiResponse{Results: []wire.MultiResult{
				{Op: wire.OpError, Err: wire.ErrOK},
				{Op: wire.OpError, Err: wire.ErrBadVersion},
				{Op: wire.OpError, Err: wire.ErrRuntimeInconsistency},
			}})
		default:
			echoServe(fc, xid, op, body)
		}
	})
	c := dialFake(t, s, Options{})
	ctx := context.Background()
	if _, _, err := c.Get(ctx, "/a", false); !errors.Is(err, wire.ErrNoNode) {
		t.Fatalf("Get: %v", err)
	}
	if ok, _, err := c.Exists(ctx, "/a", true); ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	rs, err := c.Multi(ctx, wire.MultiOp{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: "/a"}})
	if !errors.Is(err, wire.ErrBadVersion) || len(rs) != 3 {
		t.Fatalf("Multi = %v, %v", rs, err)
	}
}

func TestFakeWatchEventsInOrder(t *testing.T) {
	s := newFakeServer(t, 30000, func(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {
		if op == wire.OpExists {
			fc.reply(xid, 1, wire.ErrOK, &wire.ExistsResponse{})
			for _, p := range []string{"/a", "/b", "/c"} {
				fc.event(wire.WatcherEvent{Type: wire.EventNodeDataChanged, State: wire.StateSyncConnected, Path: p})
			}
			return
		}
		echoServe(fc, xid, op, body)
	})
	c := dialFake(t, s, Options{})
	if _, _, err := c.Exists(context.Background(), "/a", true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/a", "/b", "/c"} {
		select {
		case ev := <-c.Events():
			if ev.Path != want || ev.Type != wire.EventNodeDataChanged {
				t.Fatalf("event %+v, want data change of %s", ev, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event for %s", want)
		}
	}
	c.Close()
	// After Close the channel is closed (possibly after the final Closed event).
	for ev := range c.Events() {
		if ev.Type != wire.EventNone {
			t.Fatalf("unexpected event after Close: %+v", ev)
		}
	}
}

func TestFakePingsKeepIdleConnectionAlive(t *testing.T) {
	var pings atomic.Int32
	// A 900 ms timeout: pings every 300 ms, a read timeout of 600 ms — wide enough that a loaded
	// 2-core machine's scheduling delays do not end the connection.
	s := newFakeServer(t, 900, func(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {
		if op == wire.OpPing {
			if xid != wire.XidPing {
				fc.nc.Close()
			}
			pings.Add(1)
		}
		echoServe(fc, xid, op, body)
	})
	c := dialFake(t, s, Options{SessionTimeout: 900 * time.Millisecond})
	time.Sleep(2100 * time.Millisecond)
	if err := c.Err(); err != nil {
		t.Fatalf("connection ended while idle: %v", err)
	}
	if pings.Load() < 2 {
		t.Fatalf("%d pings in 2.1s with a 900ms timeout", pings.Load())
	}
}

func TestFakeReadTimeout(t *testing.T) {
	s := newFakeServer(t, 300, func(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {}) // silent
	c := dialFake(t, s, Options{SessionTimeout: 300 * time.Millisecond})
	errc := make(chan error, 1)
	c.DeleteAsync("/a", -1, func(err error) { errc <- err })
	select {
	case err := <-errc:
		if !errors.Is(err, wire.ErrConnectionLoss) || !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want connection loss by timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no read timeout")
	}
}

func TestFakeExpiredSession(t *testing.T) {
	s := newFakeServer(t, 0, echoServe)
	_, err := Dial(context.Background(), []string{s.addr()}, Options{SessionID: 99, Passwd: make([]byte, 16)})
	if !errors.Is(err, wire.ErrSessionExpired) {
		t.Fatalf("Dial = %v, want session expired", err)
	}
}

func TestDialNoServer(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := Dial(context.Background(), []string{addr}, Options{DialTimeout: time.Second})
	if !errors.Is(err, wire.ErrConnectionLoss) {
		t.Fatalf("Dial = %v", err)
	}
	if _, err := Dial(context.Background(), nil, Options{}); !errors.Is(err, ErrNoServers) {
		t.Fatalf("Dial(nil) = %v", err)
	}
}

func TestCloseFailsOutstandingWithErrClosed(t *testing.T) {
	s := newFakeServer(t, 30000, func(fc *fakeConn, xid int32, op wire.OpCode, body []byte) {
		if op == wire.OpCloseSession {
			echoServe(fc, xid, op, body)
		}
		// everything else stays unanswered
	})
	c := dialFake(t, s, Options{CloseTimeout: 200 * time.Millisecond})
	errc := make(chan error, 1)
	c.GetDataAsync("/a", false, func(_ []byte, _ wire.Stat, err error) { errc <- err })
	c.Close()
	err := <-errc
	if !errors.Is(err, wire.ErrConnectionLoss) || !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	c.DeleteAsync("/a", -1, func(err error) { errc <- err })
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// BenchmarkPipelinedGetData measures the client's cost per pipelined getData against the fake
// server (which also runs in this process, so the numbers bound the client's cost from above).
func BenchmarkPipelinedGetData(b *testing.B) {
	s := newFakeServer(b, 30000, echoServe)
	ctx := context.Background()
	c, err := Dial(ctx, []string{s.addr()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var left atomic.Int64
	done := make(chan struct{})
	var cb DataCallback = func([]byte, wire.Stat, error) {
		if left.Add(-1) == 0 {
			close(done)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	left.Store(int64(b.N))
	for i := 0; i < b.N; i++ {
		c.GetDataAsync("/bench/c0", false, cb)
	}
	<-done
}
