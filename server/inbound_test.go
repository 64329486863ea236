package server

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/router"
	"github.com/corral/corral/session"
	"github.com/corral/corral/watchhub"
	"github.com/corral/corral/wire"
)

// tableMeta commits session-table commands at once, as a meta shard that always has a leader.
type tableMeta struct {
	mu  sync.Mutex
	t   *session.Table
	idx uint64
}

func (m *tableMeta) Propose(_ context.Context, cmd []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.idx++
	r, err := m.t.Update(sm.Entry{Index: m.idx, Cmd: cmd})
	return r.Value, err
}
func (m *tableMeta) Barrier(context.Context) error { return nil }
func (m *tableMeta) IsLeader() bool                { return true }

// serveForTest serves s on a loopback port until the test ends and returns the address.
func serveForTest(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// sendFrame writes recs to nc as one frame.
func sendFrame(t *testing.T, nc net.Conn, recs ...wire.Record) {
	t.Helper()
	e := wire.NewEncoder(nil)
	mark := wire.BeginFrame(e)
	for _, rec := range recs {
		rec.Encode(e)
	}
	wire.EndFrame(e, mark)
	if _, err := nc.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// TestPingsRenewTheSessionWhileARequestWaits is inbound.go's invariant: a client that keeps
// pinging keeps its session and its connection while one of its requests waits longer than the
// lease's grace (2T/3). The request here is a sync whose catch-up does not finish; the pings
// behind it are answered only after it, as in ZooKeeper, but each one renews the session when
// it arrives. A server that reads a request only once the previous one is handled sees none of
// these pings and closes the connection after 2T/3 for a lapsed lease.
func TestPingsRenewTheSessionWhileARequestWaits(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	meta := &tableMeta{t: session.NewTable(nil)}
	sessions := session.NewManager(session.Options{Self: 1, Tick: 100 * time.Millisecond, Table: meta.t, Meta: meta,
		CloseOnShards: func(context.Context, int64, bool, uint64, session.Written) error { return nil }, Log: log})
	defer sessions.Stop()
	s := New(Options{ServerID: 1, MinTimeout: 200 * time.Millisecond, MaxTimeout: 10 * time.Second,
		Router: router.New([]uint64{2}, []uint8{1}, 0, nil), Sessions: sessions, Hub: watchhub.New(watchhub.Options{}),
		// The catch-up never finishes; the sync gives up after the session timeout T and
		// replies with an error.
		Sync: func(ctx context.Context, _ uint64) error { <-ctx.Done(); return ctx.Err() },
		Log:  log})
	addr := serveForTest(t, s)

	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	send := func(recs ...wire.Record) { t.Helper(); sendFrame(t, nc, recs...) }
	const timeout = 1500 * time.Millisecond // the lease lapses 1 s after the client was last heard
	send(&wire.ConnectRequest{TimeOut: int32(timeout.Milliseconds()), Passwd: make([]byte, 16)})
	f, err := wire.ReadFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var resp wire.ConnectResponse
	if err := resp.Decode(wire.NewDecoder(f)); err != nil || resp.SessionID == 0 {
		t.Fatalf("connect: %+v, %v", resp, err)
	}

	send(&wire.RequestHeader{Xid: 1, Op: wire.OpSync}, &wire.SyncRequest{Path: "/"})
	sent := time.Now()
	closed := make(chan error, 1)
	go func() { // the first bytes back: the sync's reply, or the end of the connection
		_, err := r.Peek(1)
		closed <- err
	}()
	// Ping every 100 ms until the sync's reply (after T) or a close (after 2T/3 without a
	// renewal, if the pings went unread).
	var err2 error
	for done := false; !done; {
		send(&wire.RequestHeader{Xid: wire.XidPing, Op: wire.OpPing})
		select {
		case err2 = <-closed:
			done = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err2 != nil {
		t.Fatalf("connection closed while its client was pinging and its sync waited: %v", err2)
	}
	if _, ok, _ := sessions.Heard(resp.SessionID); !ok {
		t.Fatal("the session is gone although its client kept pinging")
	}
	var h wire.ReplyHeader
	f, err = wire.ReadFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Decode(wire.NewDecoder(f)); err != nil || h.Xid != 1 || h.Err != wire.ErrOperationTimeout {
		t.Fatalf("first reply %+v (%v), want the sync's OPERATIONTIMEOUT", h, err)
	}
	if d := time.Since(sent); d < timeout {
		t.Fatalf("the sync answered after %v, before its timeout %v: the test did not wait past 2T/3", d, timeout)
	}
	f, err = wire.ReadFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Decode(wire.NewDecoder(f)); err != nil || h.Xid != wire.XidPing {
		t.Fatalf("second reply %+v (%v), want a ping's", h, err)
	}
}
