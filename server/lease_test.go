package server

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral/corral/router"
	"github.com/corral/corral/session"
	"github.com/corral/corral/watchhub"
	"github.com/corral/corral/wire"
)

// serveWithSessions serves a server with one data shard and a session manager over meta and
// table, reporting activity every tick, until the test ends, and returns its address.
func serveWithSessions(t *testing.T, meta session.Meta, table *session.Table, tick time.Duration) string {
	log := slog.New(slog.DiscardHandler)
	sessions := session.NewManager(session.Options{Self: 1, Tick: tick, Table: table, Meta: meta,
		CloseOnShards: func(context.Context, int64, bool, uint64, session.Written) error { return nil }, Log: log})
	s := New(Options{ServerID: 1, MinTimeout: 200 * time.Millisecond, MaxTimeout: 30 * time.Second,
		Router: router.New([]uint64{2}, []uint8{1}, 0, nil), Sessions: sessions, Hub: watchhub.New(watchhub.Options{}),
		Log: log})
	addr := serveForTest(t, s)
	t.Cleanup(sessions.Stop) // runs before the server closes: cleanups run last first
	return addr
}

// TestIdlePingsShareRenewals is waitRenewal's rule: idle sessions whose pings find their lease
// lapsed are renewed together, by one activity report, not by one report per ping (each a
// meta-shard round on a real server); and output other than a ping reply still asks for a
// report at once. The manager's periodic report is set far beyond the test, so every renewal
// here is one a connection asked for.
func TestIdlePingsShareRenewals(t *testing.T) {
	meta := &tableMeta{t: session.NewTable(nil)}
	addr := serveWithSessions(t, meta, meta.t, time.Hour)

	// T = 6 s: the lease lapses T/3 - T/20 = 1.7 s after the client was heard, the watchdog
	// drops the connection after 2T/3 = 4 s, and a lone ping waits pingRenewWait (250 ms).
	const timeout = 6 * time.Second
	lapse := timeout/3 - timeout/20 + 100*time.Millisecond
	type client struct {
		nc net.Conn
		r  *bufio.Reader
	}
	send := func(c client, recs ...wire.Record) { t.Helper(); sendFrame(t, c.nc, recs...) }
	reply := func(c client) wire.ReplyHeader {
		t.Helper()
		c.nc.SetReadDeadline(time.Now().Add(timeout))
		f, err := wire.ReadFrame(c.r, nil, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var h wire.ReplyHeader
		if err := h.Decode(wire.NewDecoder(f)); err != nil {
			t.Fatal(err)
		}
		return h
	}
	const n = 10
	clients := make([]client, n)
	for i := range clients {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		clients[i] = client{nc, bufio.NewReader(nc)}
		send(clients[i], &wire.ConnectRequest{TimeOut: int32(timeout.Milliseconds()), Passwd: make([]byte, 16)})
		clients[i].nc.SetReadDeadline(time.Now().Add(timeout))
		f, err := wire.ReadFrame(clients[i].r, nil, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var resp wire.ConnectResponse
		if err := resp.Decode(wire.NewDecoder(f)); err != nil || resp.SessionID == 0 {
			t.Fatalf("connect: %+v, %v", resp, err)
		}
	}
	proposals := func() uint64 { meta.mu.Lock(); defer meta.mu.Unlock(); return meta.idx }

	// Idle until every lease lapsed, then each client pings, 10 ms apart.
	time.Sleep(lapse)
	before := proposals()
	start := time.Now()
	for _, c := range clients {
		send(c, &wire.RequestHeader{Xid: wire.XidPing, Op: wire.OpPing})
		time.Sleep(10 * time.Millisecond)
	}
	for i, c := range clients {
		if h := reply(c); h.Xid != wire.XidPing || h.Err != wire.ErrOK {
			t.Fatalf("client %d: reply %+v, want a ping's", i, h)
		}
	}
	took := time.Since(start)
	if got := proposals() - before; got == 0 || got > 3 {
		t.Fatalf("%d activity reports for %d idle pings, want 1-3 (one report per ping costs a meta-shard round each)", got, n)
	}
	t.Logf("%d pings of idle sessions answered in %v", n, took.Round(time.Millisecond))

	// Idle again; a request's reply does not wait for pingRenewWait.
	time.Sleep(lapse)
	sent := time.Now()
	// deleteContainer from a client: BADARGUMENTS, the connection kept (handleServerOnly).
	send(clients[0], &wire.RequestHeader{Xid: 7, Op: wire.OpDeleteContainer}, &wire.ExistsRequest{Path: "/x"})
	if h := reply(clients[0]); h.Xid != 7 || h.Err != wire.ErrBadArguments {
		t.Fatalf("reply %+v, want deleteContainer's BADARGUMENTS", h)
	}
	if d := time.Since(sent); d >= pingRenewWait*3/5 {
		t.Fatalf("a request's reply under a lapsed lease took %v: it waited as a ping's would (%v)", d, pingRenewWait)
	}
}

// failingMeta is a session table whose proposals fail once fail is set: renewals stop
// committing, as on a server cut off from the meta shard's quorum.
type failingMeta struct {
	tableMeta
	fail atomic.Bool
}

func (m *failingMeta) Propose(ctx context.Context, cmd []byte) (uint64, error) {
	if m.fail.Load() {
		return 0, errors.New("no quorum")
	}
	return m.tableMeta.Propose(ctx, cmd)
}

// TestWatchdogDropsUnrenewedIdleSession: a connection whose session is no longer renewed is
// closed by the watchdog at 2T/3 after its client was last heard, although the watchdog scans
// the connections only when one may be due: the scan after the session was bound notes its
// drop time, and the next scan runs then, not at the watchdog's idle bound. The client pings
// once (so the server's read deadline, T after the last frame, does not end the connection
// first); the ping's reply waits for a renewal that never commits, with no timer of its own.
func TestWatchdogDropsUnrenewedIdleSession(t *testing.T) {
	meta := &failingMeta{tableMeta: tableMeta{t: session.NewTable(nil)}}
	addr := serveWithSessions(t, meta, meta.t, 50*time.Millisecond)

	// T = 600 ms: dropped 400 ms after the client was heard; a ping at 300 ms moves the read
	// deadline to 900 ms; the watchdog's idle bound (1 s) is later still.
	const timeout = 600 * time.Millisecond
	drop := 2 * timeout / 3
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	sent := time.Now() // the client is heard after this
	sendFrame(t, nc, &wire.ConnectRequest{TimeOut: int32(timeout.Milliseconds()), Passwd: make([]byte, 16)})
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.ReadFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var resp wire.ConnectResponse
	if err := resp.Decode(wire.NewDecoder(f)); err != nil || resp.SessionID == 0 || resp.TimeOut != int32(timeout.Milliseconds()) {
		t.Fatalf("connect: %+v, %v", resp, err)
	}
	meta.fail.Store(true)
	time.Sleep(time.Until(sent.Add(timeout / 2)))
	sendFrame(t, nc, &wire.RequestHeader{Xid: wire.XidPing, Op: wire.OpPing})
	if _, err := wire.ReadFrame(r, nil, 1<<20); err == nil {
		t.Fatal("a reply under a lapsed lease that was never renewed, want the connection's close")
	}
	took := time.Since(sent)
	if took < drop-50*time.Millisecond || took > drop+7*watchdogEvery/2 {
		t.Fatalf("connection closed %v after the client was heard, want about 2T/3 = %v", took.Round(time.Millisecond), drop)
	}
	t.Logf("closed %v after the client was heard (2T/3 = %v)", took.Round(time.Millisecond), drop)
}
