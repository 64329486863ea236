package wire

import (
	"bufio"
	"net"
	"os"
	"reflect"
	"testing"
	"time"
)

// zkConn is a raw client connection to a real ZooKeeper, speaking through this package only.
type zkConn struct {
	t   *testing.T
	c   net.Conn
	r   *bufio.Reader
	xid int32
	buf []byte
}

func dialZK(t *testing.T, addr string, readOnly bool) (*zkConn, *ConnectResponse, int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	z := &zkConn{t: t, c: c, r: bufio.NewReader(c)}
	req := ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16), HasReadOnly: readOnly}
	e := NewEncoder(nil)
	m := BeginFrame(e)
	req.Encode(e)
	EndFrame(e, m)
	if _, err := c.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
	frame := z.frame()
	var resp ConnectResponse
	if err := resp.Decode(NewDecoder(frame)); err != nil {
		t.Fatal(err)
	}
	return z, &resp, len(frame)
}

func (z *zkConn) frame() []byte {
	z.t.Helper()
	var err error
	if z.buf, err = ReadFrame(z.r, z.buf, DefaultMaxBuffer); err != nil {
		z.t.Fatal(err)
	}
	return z.buf
}

// send writes a request with raw body bytes.
func (z *zkConn) sendRaw(op OpCode, body []byte) int32 {
	z.t.Helper()
	z.xid++
	e := NewEncoder(nil)
	m := BeginFrame(e)
	(&RequestHeader{Xid: z.xid, Op: op}).Encode(e)
	e.Raw(body)
	EndFrame(e, m)
	if _, err := z.c.Write(e.Bytes()); err != nil {
		z.t.Fatal(err)
	}
	return z.xid
}

// call sends a request and decodes the reply into resp (if the reply has a body).
func (z *zkConn) call(op OpCode, req Record, resp Record) (ReplyHeader, []byte) {
	z.t.Helper()
	var body []byte
	if req != nil {
		body = encode(req)
	}
	return z.callRaw(op, body, resp)
}

func (z *zkConn) callRaw(op OpCode, body []byte, resp Record) (ReplyHeader, []byte) {
	z.t.Helper()
	xid := z.sendRaw(op, body)
	for {
		d := NewDecoder(z.frame())
		var h ReplyHeader
		if err := h.Decode(d); err != nil {
			z.t.Fatal(err)
		}
		if h.Xid == XidNotification {
			var ev WatcherEvent
			ev.Decode(d)
			z.t.Logf("event %+v header %+v", ev, h)
			continue
		}
		if h.Xid != xid {
			z.t.Fatalf("xid %d, want %d", h.Xid, xid)
		}
		rest := append([]byte(nil), d.Rest()...)
		if resp != nil && h.Err == ErrOK || op == OpMulti || op == OpMultiRead {
			if err := resp.Decode(d); err != nil {
				z.t.Fatalf("op %d: %v", op, err)
			}
			if d.Remaining() != 0 {
				z.t.Errorf("op %d: %d bytes left", op, d.Remaining())
			}
		}
		return h, rest
	}
}

// TestZooKeeperInterop talks to a real ZooKeeper 3.8 at $WIRE_ZK_ADDR (extendedTypesEnabled=true,
// 4lw.commands.whitelist=*) and checks that its bytes match what this package encodes and decodes.
func TestZooKeeperInterop(t *testing.T) {
	addr := os.Getenv("WIRE_ZK_ADDR")
	if addr == "" {
		t.Skip("set WIRE_ZK_ADDR to a ZooKeeper 3.8 server to run")
	}
	// Handshake sizes.
	_, resp, n := dialZK(t, addr, false)
	if n != ConnectResponseSize || resp.HasReadOnly || resp.TimeOut <= 0 || len(resp.Passwd) != PasswordLen {
		t.Errorf("44-byte connect: %d-byte response %+v", n, resp)
	}
	z, resp, n := dialZK(t, addr, true)
	if n != ConnectResponseSizeReadOnly || !resp.HasReadOnly {
		t.Errorf("45-byte connect: %d-byte response %+v", n, resp)
	}
	t.Logf("session %#x timeout %d", resp.SessionID, resp.TimeOut)

	root := "/wire-interop"
	for _, c := range []string{"a", "b", "c", "t"} {
		z.call(OpDelete, &DeleteRequest{Path: root + "/" + c, Version: -1}, nil)
	}
	z.call(OpDelete, &DeleteRequest{Path: root, Version: -1}, nil)

	var c2 Create2Response
	if h, _ := z.call(OpCreate2, &CreateRequest{Path: root, Data: nil, ACL: OpenACLUnsafe}, &c2); h.Err != ErrOK || c2.Path != root {
		t.Fatalf("create2: %+v %+v", h, c2)
	}
	var gd GetDataResponse
	if h, _ := z.call(OpGetData, &GetDataRequest{Path: root, Watch: true}, &gd); h.Err != ErrOK || gd.Data != nil {
		t.Errorf("null data: %+v %+v", h, gd)
	}
	if h, rest := z.call(OpExists, &ExistsRequest{Path: root + "/none"}, &ExistsResponse{}); h.Err != ErrNoNode || len(rest) != 0 {
		t.Errorf("exists on a missing node: %+v, body % x", h, rest)
	}
	// Trailing bytes after a record are ignored.
	if h, _ := z.callRaw(OpSetData, append(encode(&SetDataRequest{Path: root, Data: []byte{}, Version: -1}), 1, 2, 3), &SetDataResponse{}); h.Err != ErrOK {
		t.Errorf("setData with trailing bytes: %+v", h)
	}

	// A failed multi: header err 0, every result an error.
	var mr MultiResponse
	h, rest := z.call(OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: OpCreate, Create: &CreateRequest{Path: root + "/a", ACL: OpenACLUnsafe}},
		{Op: OpDelete, Delete: &DeleteRequest{Path: root + "/none", Version: -1}},
		{Op: OpSetData, SetData: &SetDataRequest{Path: root, Version: -1}},
	}}, &mr)
	want := &MultiResponse{Results: []MultiResult{{Op: OpError, Err: ErrOK}, {Op: OpError, Err: ErrNoNode}, {Op: OpError, Err: ErrRuntimeInconsistency}}}
	if h.Err != ErrOK || !reflect.DeepEqual(&mr, want) || string(rest) != string(encode(want)) {
		t.Errorf("failed multi: %+v %+v\n% x", h, mr, rest)
	}
	// A successful multi with every write op type.
	h, rest = z.call(OpMulti, &MultiRequest{Ops: []MultiOp{
		{Op: OpCreate, Create: &CreateRequest{Path: root + "/a", ACL: OpenACLUnsafe}},
		{Op: OpCreate2, Create: &CreateRequest{Path: root + "/b", ACL: OpenACLUnsafe, Flags: FlagEphemeral}},
		{Op: OpCreateContainer, Create: &CreateRequest{Path: root + "/c", ACL: OpenACLUnsafe, Flags: FlagContainer}},
		{Op: OpCreateTTL, CreateTTL: &CreateTTLRequest{Path: root + "/t", ACL: OpenACLUnsafe, Flags: FlagPersistentWithTTL, TTL: 100000}},
		{Op: OpSetData, SetData: &SetDataRequest{Path: root, Data: []byte("v"), Version: -1}},
		{Op: OpCheck, Check: &CheckVersionRequest{Path: root, Version: 2}},
		{Op: OpDelete, Delete: &DeleteRequest{Path: root + "/b", Version: -1}},
	}}, &mr)
	t.Logf("multi: %+v", h)
	for i, r := range mr.Results {
		t.Logf("  result %d: %+v", i, r)
	}
	if string(rest) != string(encode(&mr)) {
		t.Errorf("multi response does not re-encode identically")
	}
	// multiRead: independent results.
	h, rest = z.call(OpMultiRead, &MultiRequest{Ops: []MultiOp{
		{Op: OpGetData, GetData: &GetDataRequest{Path: root}},
		{Op: OpGetChildren, GetChildren: &GetChildrenRequest{Path: root}},
		{Op: OpGetData, GetData: &GetDataRequest{Path: root + "/none"}},
	}}, &mr)
	t.Logf("multiRead: %+v", h)
	for i, r := range mr.Results {
		t.Logf("  result %d: %+v", i, r)
	}
	if string(rest) != string(encode(&mr)) {
		t.Errorf("multiRead response does not re-encode identically")
	}
	if len(mr.Results) != 3 || mr.Results[2].Op != OpError || mr.Results[2].Err != ErrNoNode {
		t.Errorf("multiRead results %+v", mr.Results)
	}

	// addWatch answers with a 4-byte ErrorResponse.
	var er ErrorResponse
	if h, rest := z.call(OpAddWatch, &AddWatchRequest{Path: root, Mode: AddWatchPersistentRecursive}, &er); h.Err != ErrOK || len(rest) != 4 {
		t.Errorf("addWatch: %+v % x", h, rest)
	}
	var who WhoAmIResponse
	h, _ = z.call(OpWhoAmI, nil, &who)
	t.Logf("whoAmI: %+v %+v", h, who)
	var eph GetEphemeralsResponse
	h, _ = z.call(OpGetEphemerals, &GetEphemeralsRequest{PrefixPath: "/"}, &eph)
	t.Logf("getEphemerals: %+v %+v", h, eph)
	var all GetAllChildrenNumberResponse
	if h, _ := z.call(OpGetAllChildrenNumber, &GetAllChildrenNumberRequest{Path: root}, &all); h.Err != ErrOK || all.TotalNumber != 3 {
		t.Errorf("getAllChildrenNumber: %+v %+v", h, all)
	}
	sw := SetWatches2{RelativeZxid: h.Zxid, DataWatches: []string{root}, ExistWatches: []string{},
		ChildWatches: []string{}, PersistentWatches: []string{"/"}, PersistentRecursiveWatches: []string{}}
	if h, rest := z.call(OpSetWatches2, &sw, nil); h.Err != ErrOK || len(rest) != 0 {
		t.Errorf("setWatches2: %+v % x", h, rest)
	}
	// ZooKeeper does not accept null watch lists (real clients send empty ones).
	sw.ExistWatches = nil
	h, _ = z.call(OpSetWatches2, &sw, nil)
	t.Logf("setWatches2 with a null list: %+v", h)
	// A mixed multi, a read multi sent as multi, and a write multi sent as multiRead.
	hdr := func(op OpCode) []byte { return encode(&MultiHeader{Type: op, Err: -1}) }
	mixed := append(append(append(hdr(OpCheck), encode(&CheckVersionRequest{Path: root, Version: -1})...), hdr(OpGetData)...), encode(&GetDataRequest{Path: root})...)
	mixed = append(mixed, encode(&multiEnd)...)
	for i, tc := range []struct {
		op   OpCode
		body []byte
	}{
		{OpMulti, mixed},
		{OpMulti, encode(&MultiRequest{Ops: []MultiOp{{Op: OpGetData, GetData: &GetDataRequest{Path: root}}}})},
		{OpMultiRead, encode(&MultiRequest{Ops: []MultiOp{{Op: OpCheck, Check: &CheckVersionRequest{Path: root, Version: -1}}}})},
	} {
		zz, _, _ := dialZK(t, addr, true)
		zz.sendRaw(tc.op, tc.body)
		var err error
		zz.buf, err = ReadFrame(zz.r, zz.buf, DefaultMaxBuffer)
		if err != nil {
			t.Logf("bad multi %d: connection: %v", i, err)
			continue
		}
		d := NewDecoder(zz.buf)
		var h ReplyHeader
		h.Decode(d)
		t.Logf("bad multi %d: %+v, body % x", i, h, d.Rest())
		if h.Err != ErrMarshallingError {
			t.Errorf("bad multi %d: %+v", i, h)
		}
		// The connection stays usable.
		zz.sendRaw(OpPing, nil)
		var err2 error
		if zz.buf, err2 = ReadFrame(zz.r, zz.buf, DefaultMaxBuffer); err2 != nil {
			t.Errorf("bad multi %d: then %v", i, err2)
		}
	}

	// A notification: change the watched node. The event arrives before the reply.
	xid := z.sendRaw(OpSetData, encode(&SetDataRequest{Path: root, Data: []byte("w"), Version: -1}))
	sawEvent := false
	for {
		d := NewDecoder(z.frame())
		var h ReplyHeader
		h.Decode(d)
		if h.Xid == xid {
			if !sawEvent {
				t.Error("setData reply before its event")
			}
			break
		}
		if h.Xid == XidNotification {
			sawEvent = true
			var ev WatcherEvent
			ev.Decode(d)
			if h.Zxid != -1 || h.Err != 0 || ev.State != StateSyncConnected || ev.Path != root {
				t.Errorf("event header %+v, event %+v", h, ev)
			}
			if got := AppendEvent(nil, ev); string(got[4:]) != string(z.buf) {
				t.Errorf("event bytes % x, AppendEvent gives % x", z.buf, got[4:])
			}
		}
	}
	z.call(OpCloseSession, nil, nil)
}
