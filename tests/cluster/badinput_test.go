package clustertest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/testcluster"
	"github.com/corral/corral/wire"
)

// rawConn is a hand-driven ZooKeeper connection for protocol edge cases.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) send(rec ...wire.Record) {
	c.t.Helper()
	e := wire.NewEncoder(nil)
	mark := wire.BeginFrame(e)
	for _, r := range rec {
		r.Encode(e)
	}
	wire.EndFrame(e, mark)
	if _, err := c.nc.Write(e.Bytes()); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) recv() ([]byte, error) {
	return wire.ReadFrame(c.r, nil, 1<<22)
}

func (c *rawConn) handshake(readOnly bool) wire.ConnectResponse {
	c.t.Helper()
	c.send(&wire.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16), HasReadOnly: readOnly})
	f, err := c.recv()
	if err != nil {
		c.t.Fatal(err)
	}
	want := wire.ConnectResponseSize
	if readOnly {
		want = wire.ConnectResponseSizeReadOnly
	}
	if len(f) != want {
		c.t.Fatalf("connect response is %d bytes, want %d", len(f), want)
	}
	var resp wire.ConnectResponse
	if err := resp.Decode(wire.NewDecoder(f)); err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *rawConn) reply() (wire.ReplyHeader, []byte) {
	c.t.Helper()
	for {
		f, err := c.recv()
		if err != nil {
			c.t.Fatalf("reading reply: %v", err)
		}
		d := wire.NewDecoder(f)
		var h wire.ReplyHeader
		if err := h.Decode(d); err != nil {
			c.t.Fatal(err)
		}
		if h.Xid == wire.XidNotification {
			continue
		}
		return h, d.Rest()
	}
}

func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, err := c.recv()
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("connection was not closed")
		}
		return
	}
}

// TestBadInputIsContained: each kind of bad input gets ZooKeeper's answer (an error code or a
// closed connection) and a well-behaved client on the same server is not disturbed.
func TestBadInputIsContained(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Servers: 1, Shards: 1})
	addr := cl.Addrs()[0]
	good, _ := connect(t, []string{addr})
	if _, err := good.Create("/ok", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	t.Run("handshake sizes", func(t *testing.T) {
		if r := dialRaw(t, addr).handshake(false); r.SessionID == 0 || r.TimeOut != 10000 {
			t.Fatalf("response %+v", r)
		}
		if r := dialRaw(t, addr).handshake(true); r.SessionID == 0 || !r.HasReadOnly {
			t.Fatalf("response %+v", r)
		}
	})
	t.Run("oversized frame closes", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(false)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 0xfffff+1)
		c.nc.Write(hdr[:])
		c.expectClosed()
	})
	t.Run("negative length closes", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(false)
		c.nc.Write([]byte{0xff, 0xff, 0xff, 0xfe})
		c.expectClosed()
	})
	t.Run("unknown opcode gets UNIMPLEMENTED and closes", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(false)
		c.send(&wire.RequestHeader{Xid: 7, Op: 9999})
		h, _ := c.reply()
		if h.Xid != 7 || h.Err != wire.ErrUnimplemented {
			t.Fatalf("reply %+v", h)
		}
		c.expectClosed()
	})
	t.Run("undecodable record gets MARSHALLINGERROR and the connection stays", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(false)
		e := wire.NewEncoder(nil)
		mark := wire.BeginFrame(e)
		(&wire.RequestHeader{Xid: 1, Op: wire.OpGetData}).Encode(e)
		e.Int32(100) // a path length with no bytes behind it
		wire.EndFrame(e, mark)
		c.nc.Write(e.Bytes())
		if h, _ := c.reply(); h.Xid != 1 || h.Err != wire.ErrMarshallingError {
			t.Fatalf("reply %+v", h)
		}
		c.send(&wire.RequestHeader{Xid: 2, Op: wire.OpGetData}, &wire.GetDataRequest{Path: "/ok"})
		h, body := c.reply()
		var gd wire.GetDataResponse
		if h.Xid != 2 || h.Err != wire.ErrOK || gd.Decode(wire.NewDecoder(body)) != nil || string(gd.Data) != "1" {
			t.Fatalf("reply %+v %q", h, gd.Data)
		}
	})
	t.Run("undecodable write gets MARSHALLINGERROR", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(false)
		c.send(&wire.RequestHeader{Xid: 3, Op: wire.OpCreate})
		if h, _ := c.reply(); h.Xid != 3 || h.Err != wire.ErrMarshallingError {
			t.Fatalf("reply %+v", h)
		}
	})
	t.Run("truncated frame then hang-up", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(false)
		c.nc.Write([]byte{0, 0, 0, 100, 1, 2, 3})
		c.nc.Close()
	})
	t.Run("bad path gets BADARGUMENTS", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.handshake(false)
		c.send(&wire.RequestHeader{Xid: 4, Op: wire.OpCreate}, &wire.CreateRequest{Path: "/a//b", ACL: wire.OpenACLUnsafe})
		// As ZooKeeper: the parent "/a/" is looked up before the full path is validated.
		if h, _ := c.reply(); h.Xid != 4 || h.Err != wire.ErrNoNode {
			t.Fatalf("reply %+v", h)
		}
		c.send(&wire.RequestHeader{Xid: 5, Op: wire.OpCreate}, &wire.CreateRequest{Path: "/ok/.", ACL: wire.OpenACLUnsafe})
		if h, _ := c.reply(); h.Xid != 5 || h.Err != wire.ErrBadArguments {
			t.Fatalf("reply %+v", h)
		}
	})
	t.Run("expired session gets the zero answer", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.send(&wire.ConnectRequest{TimeOut: 10000, SessionID: 0x0abcdef, Passwd: make([]byte, 16)})
		f, err := c.recv()
		if err != nil {
			t.Fatal(err)
		}
		var r wire.ConnectResponse
		r.Decode(wire.NewDecoder(f))
		if r.SessionID != 0 || r.TimeOut != 0 || len(r.Passwd) != 16 {
			t.Fatalf("response %+v", r)
		}
		c.expectClosed()
	})
	t.Run("four-letter word", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.nc.Write([]byte("ruok"))
		b, _ := io.ReadAll(c.r)
		if string(b) != "imok" {
			t.Fatalf("ruok = %q", b)
		}
	})
	// The well-behaved client never noticed.
	if d, _, err := good.Get("/ok"); err != nil || string(d) != "1" {
		t.Fatalf("good client: %q %v", d, err)
	}
	if good.State() != zk.StateHasSession {
		t.Fatalf("good client state %v", good.State())
	}
}
