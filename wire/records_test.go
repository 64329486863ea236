package wire

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

var (
	testStat = Stat{
		Czxid: 0x100000001, Mzxid: 0x100000002, Ctime: 1700000000000, Mtime: 1700000000001,
		Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x7001, DataLength: 2,
		NumChildren: 1, Pzxid: 0x100000003,
	}
	testACL = []ACL{{Perms: PermAll, ID: AnyoneID}, {Perms: PermRead, ID: ID{Scheme: "digest", ID: "u:h"}}}
	testPwd = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
)

// opRecord is a request record with the opcode it is sent under.
type opRecord struct {
	op  OpCode
	rec Record
}

// sampleRequests has one populated request record per client opcode with a body.
func sampleRequests() []opRecord {
	return []opRecord{
		{OpCreate, &CreateRequest{Path: "/a", Data: []byte("x"), ACL: testACL, Flags: FlagEphemeralSequential}},
		{OpCreate2, &CreateRequest{Path: "/a", Data: nil, ACL: OpenACLUnsafe, Flags: FlagPersistent}},
		{OpCreateContainer, &CreateRequest{Path: "/c", Data: []byte{}, ACL: []ACL{}, Flags: FlagContainer}},
		{OpCreateTTL, &CreateTTLRequest{Path: "/t", Data: []byte("d"), ACL: OpenACLUnsafe, Flags: FlagPersistentWithTTL, TTL: MaxTTL}},
		{OpDelete, &DeleteRequest{Path: "/a", Version: -1}},
		{OpExists, &ExistsRequest{Path: "/a", Watch: true}},
		{OpGetData, &GetDataRequest{Path: "/a/b", Watch: true}},
		{OpSetData, &SetDataRequest{Path: "/a", Data: []byte("hello"), Version: 7}},
		{OpGetACL, &GetACLRequest{Path: "/a"}},
		{OpSetACL, &SetACLRequest{Path: "/a", ACL: testACL, Version: 2}},
		{OpGetChildren, &GetChildrenRequest{Path: "/", Watch: false}},
		{OpGetChildren2, &GetChildrenRequest{Path: "/a", Watch: true}},
		{OpSync, &SyncRequest{Path: "/a"}},
		{OpCheck, &CheckVersionRequest{Path: "/a", Version: 1}},
		{OpMulti, &MultiRequest{Ops: []MultiOp{
			{Op: OpCreate, Create: &CreateRequest{Path: "/m", Data: []byte("1"), ACL: OpenACLUnsafe}},
			{Op: OpCreate2, Create: &CreateRequest{Path: "/m/a", ACL: OpenACLUnsafe, Flags: FlagEphemeral}},
			{Op: OpCreateContainer, Create: &CreateRequest{Path: "/m/c", ACL: OpenACLUnsafe, Flags: FlagContainer}},
			{Op: OpCreateTTL, CreateTTL: &CreateTTLRequest{Path: "/m/t", ACL: OpenACLUnsafe, Flags: FlagPersistentWithTTL, TTL: 1000}},
			{Op: OpSetData, SetData: &SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0}},
			{Op: OpCheck, Check: &CheckVersionRequest{Path: "/m", Version: 1}},
			{Op: OpDelete, Delete: &DeleteRequest{Path: "/m/a", Version: -1}},
		}}},
		{OpMultiRead, &MultiRequest{Ops: []MultiOp{
			{Op: OpGetData, GetData: &GetDataRequest{Path: "/a"}},
			{Op: OpGetChildren, GetChildren: &GetChildrenRequest{Path: "/"}},
		}}},
		{OpMulti, &MultiRequest{}},
		{OpReconfig, &ReconfigRequest{JoiningServers: "server.4=h:2888:3888;2181", LeavingServers: "3", CurConfigID: -1}},
		{OpCheckWatches, &CheckWatchesRequest{Path: "/a", Type: WatcherData}},
		{OpRemoveWatches, &RemoveWatchesRequest{Path: "/a", Type: WatcherAny}},
		{OpAuth, &AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("user:pass")}},
		{OpSetWatches, &SetWatches{RelativeZxid: 42, DataWatches: []string{"/a", "/b"}, ExistWatches: []string{}, ChildWatches: nil}},
		{OpSASL, &GetSASLRequest{Token: []byte{1, 2, 3}}},
		{OpGetEphemerals, &GetEphemeralsRequest{PrefixPath: "/app"}},
		{OpGetAllChildrenNumber, &GetAllChildrenNumberRequest{Path: "/"}},
		{OpSetWatches2, &SetWatches2{RelativeZxid: 43, DataWatches: []string{"/a"}, ExistWatches: []string{"/e"},
			ChildWatches: []string{}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", "/s"}}},
		{OpAddWatch, &AddWatchRequest{Path: "/a", Mode: AddWatchPersistentRecursive}},
	}
}

// sampleMultiResponse is a successful multi's reply with one result of every type, plus a multiRead's.
var sampleMultiResponse = &MultiResponse{Results: []MultiResult{
	{Op: OpCreate, Path: "/m"},
	{Op: OpCreate2, Path: "/m/a0000000001", Stat: testStat},
	{Op: OpSetData, Stat: testStat},
	{Op: OpCheck},
	{Op: OpDelete},
	{Op: OpGetChildren, Children: []string{"a", "b"}},
	{Op: OpGetChildren, Children: []string{}},
	{Op: OpGetData, Data: []byte("v"), Stat: testStat},
	{Op: OpGetData, Data: nil, Stat: testStat},
	{Op: OpError, Err: ErrNoNode},
}}

// sampleRecords has every record type, populated, including responses and handshake records.
func sampleRecords() []Record {
	recs := []Record{
		&RequestHeader{Xid: 1, Op: OpGetData},
		&RequestHeader{Xid: XidPing, Op: OpPing},
		&ReplyHeader{Xid: 1, Zxid: 0x200000001, Err: ErrNoNode},
		&ConnectRequest{LastZxidSeen: 0x10, TimeOut: 30000, SessionID: 0x1234, Passwd: testPwd},
		&ConnectRequest{TimeOut: 4000, Passwd: testPwd, ReadOnly: true, HasReadOnly: true},
		&ConnectRequest{Passwd: nil, HasReadOnly: true},
		&ConnectResponse{TimeOut: 30000, SessionID: 0x1234, Passwd: testPwd},
		&ConnectResponse{TimeOut: 4000, SessionID: 1, Passwd: []byte{}, HasReadOnly: true},
		&CreateResponse{Path: "/a0000000001"},
		&Create2Response{Path: "/a", Stat: testStat},
		&ExistsResponse{Stat: testStat},
		&GetDataResponse{Data: []byte("hi"), Stat: testStat},
		&GetDataResponse{Data: nil, Stat: testStat},
		&SetDataResponse{Stat: testStat},
		&GetACLResponse{ACL: testACL, Stat: testStat},
		&SetACLResponse{Stat: testStat},
		&GetChildrenResponse{Children: []string{"a", "b", ""}},
		&GetChildrenResponse{Children: nil},
		&GetChildren2Response{Children: []string{}, Stat: testStat},
		&SyncResponse{Path: "/a"},
		&GetEphemeralsResponse{Ephemerals: []string{"/e1", "/e2"}},
		&GetAllChildrenNumberResponse{TotalNumber: 12345},
		&ErrorResponse{Err: ErrOK},
		&ErrorResponse{Err: ErrNoWatcher},
		&ClientInfo{AuthScheme: "ip", User: "127.0.0.1"},
		&WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "digest", User: "u"}}},
		&WhoAmIResponse{ClientInfo: []ClientInfo{}},
		&WhoAmIResponse{},
		&WatcherEvent{Type: EventNodeChildrenChanged, State: StateSyncConnected, Path: "/a"},
		&WatcherEvent{Type: EventNone, State: StateExpired},
		&SetSASLResponse{Token: []byte("tok")},
		&SetSASLResponse{Token: nil},
		&MultiHeader{Type: OpCreate, Done: false, Err: -1},
		&MultiHeader{Type: -1, Done: true, Err: -1},
		sampleMultiResponse,
		&MultiResponse{Results: []MultiResult{
			{Op: OpError, Err: ErrOK}, {Op: OpError, Err: ErrNoNode}, {Op: OpError, Err: ErrRuntimeInconsistency},
		}},
		&MultiResponse{},
		&Stat{},
		&ACL{Perms: PermAdmin, ID: ID{Scheme: "ip", ID: "10.0.0.0/8"}},
	}
	for _, r := range sampleRequests() {
		recs = append(recs, r.rec)
	}
	return recs
}

func encode(r Record) []byte {
	e := NewEncoder(nil)
	r.Encode(e)
	return e.Bytes()
}

// newLike returns a new zero record of r's type.
func newLike(r Record) Record { return reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record) }

func TestRoundTrip(t *testing.T) {
	for i, want := range sampleRecords() {
		t.Run(fmt.Sprintf("%d/%T", i, want), func(t *testing.T) {
			b := encode(want)
			got := newLike(want)
			d := NewDecoder(b)
			if err := got.Decode(d); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if d.Remaining() != 0 {
				t.Errorf("%d bytes left over", d.Remaining())
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeRequestRoundTrip(t *testing.T) {
	for i, tc := range sampleRequests() {
		t.Run(fmt.Sprintf("%d/%d", i, tc.op), func(t *testing.T) {
			got, err := DecodeRequest(tc.op, encode(tc.rec))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Errorf("got %+v, want %+v", got, tc.rec)
			}
			// Trailing bytes are ignored.
			got, err = DecodeRequest(tc.op, append(encode(tc.rec), 0xde, 0xad))
			if err != nil || !reflect.DeepEqual(got, tc.rec) {
				t.Errorf("with trailing bytes: got %+v, %v", got, err)
			}
		})
	}
}

func TestDecodeRequestSpecialOps(t *testing.T) {
	for i, tc := range []struct {
		op      OpCode
		wantErr error
	}{
		{OpPing, nil},
		{OpCloseSession, nil},
		{OpWhoAmI, nil},
		{OpNotification, ErrUnknownOp},
		{OpDeleteContainer, ErrUnknownOp},
		{OpCreateSession, ErrUnknownOp},
		{OpError, ErrUnknownOp},
		{10, ErrUnknownOp},
		{999, ErrUnknownOp},
	} {
		rec, err := DecodeRequest(tc.op, nil)
		if rec != nil || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("%d: DecodeRequest(%d) = %v, %v; want nil, %v", i, tc.op, rec, err, tc.wantErr)
		}
	}
}

func TestNullVersusEmpty(t *testing.T) {
	for i, tc := range []struct {
		rec  Record
		want []byte // encoding prefix that shows null (-1) or empty (0)
	}{
		{&GetDataResponse{Data: nil}, []byte{0xff, 0xff, 0xff, 0xff}},
		{&GetDataResponse{Data: []byte{}}, []byte{0, 0, 0, 0}},
		{&GetChildrenResponse{Children: nil}, []byte{0xff, 0xff, 0xff, 0xff}},
		{&GetChildrenResponse{Children: []string{}}, []byte{0, 0, 0, 0}},
		{&GetACLResponse{ACL: nil}, []byte{0xff, 0xff, 0xff, 0xff}},
		{&GetACLResponse{ACL: []ACL{}}, []byte{0, 0, 0, 0}},
		{&WhoAmIResponse{ClientInfo: nil}, []byte{0xff, 0xff, 0xff, 0xff}},
		{&WhoAmIResponse{ClientInfo: []ClientInfo{}}, []byte{0, 0, 0, 0}},
		{&SetSASLResponse{Token: nil}, []byte{0xff, 0xff, 0xff, 0xff}},
		{&SetSASLResponse{Token: []byte{}}, []byte{0, 0, 0, 0}},
		{&CreateRequest{Path: "", Data: nil}, []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
		{&CreateRequest{Path: "", Data: []byte{}}, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		b := encode(tc.rec)
		if len(b) < len(tc.want) || string(b[:len(tc.want)]) != string(tc.want) {
			t.Errorf("%d: %T encodes as % x, want prefix % x", i, tc.rec, b, tc.want)
		}
		got := newLike(tc.rec)
		if err := got.Decode(NewDecoder(b)); err != nil || !reflect.DeepEqual(got, tc.rec) {
			t.Errorf("%d: decoded %+v (%v), want %+v", i, got, err, tc.rec)
		}
	}
	// A null ustring decodes as "".
	var s SyncRequest
	if err := s.Decode(NewDecoder([]byte{0xff, 0xff, 0xff, 0xff})); err != nil || s.Path != "" {
		t.Errorf("null path: %q, %v", s.Path, err)
	}
}

// TestTruncated decodes every proper prefix of every sample: each must fail without panicking,
// except the handshake records, whose trailing readOnly byte is optional.
func TestTruncated(t *testing.T) {
	for i, rec := range sampleRecords() {
		b := encode(rec)
		for n := 0; n < len(b); n++ {
			err := newLike(rec).Decode(NewDecoder(b[:n:n]))
			if err == nil {
				var optional bool
				switch r := rec.(type) {
				case *ConnectRequest:
					optional = r.HasReadOnly
				case *ConnectResponse:
					optional = r.HasReadOnly
				}
				if !optional || n != len(b)-1 {
					t.Errorf("%d: %T decoded from %d of %d bytes", i, rec, n, len(b))
				}
			} else if !errors.Is(err, ErrMalformed) {
				t.Errorf("%d: %T from %d bytes: error %v is not ErrMalformed", i, rec, n, err)
			}
		}
	}
	for i, tc := range sampleRequests() {
		b := encode(tc.rec)
		for n := 0; n < len(b); n++ {
			if rec, err := DecodeRequest(tc.op, b[:n:n]); err == nil {
				t.Errorf("%d: DecodeRequest(%d) decoded %+v from %d of %d bytes", i, tc.op, rec, n, len(b))
			}
		}
	}
}

func TestHostileLengths(t *testing.T) {
	for i, b := range [][]byte{
		{0x7f, 0xff, 0xff, 0xff},             // vector count far beyond the input
		{0x00, 0x00, 0x00, 0x02, 0, 0, 0, 0}, // two strings announced, room for one
		{0xff, 0xff, 0xff, 0xfe},             // negative, not null
		{0x80, 0x00, 0x00, 0x00},
	} {
		var r GetChildrenResponse
		if err := r.Decode(NewDecoder(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d: children from % x: %v", i, b, err)
		}
		var g GetDataResponse
		if err := g.Decode(NewDecoder(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d: data from % x: %v", i, b, err)
		}
		var w WhoAmIResponse
		if err := w.Decode(NewDecoder(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d: whoami from % x: %v", i, b, err)
		}
	}
}

func TestMultiRequestRejects(t *testing.T) {
	hdr := func(op OpCode) []byte { return encode(&MultiHeader{Type: op, Err: -1}) }
	end := encode(&multiEnd)
	getData := encode(&GetDataRequest{Path: "/a"})
	del := encode(&DeleteRequest{Path: "/a"})
	cat := func(parts ...[]byte) (b []byte) {
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for i, tc := range []struct {
		op   OpCode
		body []byte
	}{
		{OpMulti, cat(hdr(OpExists), encode(&ExistsRequest{Path: "/a"}), end)},  // not allowed in multi
		{OpMulti, cat(hdr(OpGetChildren2), encode(&GetChildrenRequest{}), end)}, // nor this
		{OpMulti, cat(hdr(OpMulti), end)},
		{OpMulti, cat(hdr(OpDelete), del, hdr(OpGetData), getData, end)}, // write then read
		{OpMultiRead, cat(hdr(OpGetData), getData, hdr(OpDelete), del, end)},
		{OpMulti, cat(hdr(OpGetData), getData, end)},      // a read multi sent as multi
		{OpMultiRead, cat(hdr(OpDelete), del, end)},       // a write multi sent as multiRead
		{OpMultiRead, cat(hdr(OpGetData), getData)},       // no terminator: malformed
		{OpMulti, cat(hdr(OpDelete), del, hdr(OpDelete))}, // truncated header
	} {
		rec, err := DecodeRequest(tc.op, tc.body)
		if err == nil {
			t.Errorf("%d: decoded %+v", i, rec)
		}
		wantBad := i < 7
		if errors.Is(err, ErrBadMulti) != wantBad || errors.Is(err, ErrMalformed) == wantBad {
			t.Errorf("%d: error %v: want ErrBadMulti %v", i, err, wantBad)
		}
	}
	// The terminator is recognised by its done flag alone, as in ZooKeeper.
	var m MultiRequest
	if err := m.Decode(NewDecoder(cat(hdr(OpDelete), del, encode(&MultiHeader{Type: 5, Done: true})))); err != nil || len(m.Ops) != 1 {
		t.Errorf("odd terminator: %+v, %v", m, err)
	}
	var r MultiResponse
	if err := r.Decode(NewDecoder(cat(hdr(OpExists), end))); !errors.Is(err, ErrBadMulti) {
		t.Errorf("unknown result type: %v", err)
	}
}

func TestMultiReadOnly(t *testing.T) {
	for i, tc := range []struct {
		ops  []OpCode
		want bool
	}{
		{nil, false},
		{[]OpCode{OpGetData}, true},
		{[]OpCode{OpGetData, OpGetChildren}, true},
		{[]OpCode{OpCheck}, false},
		{[]OpCode{OpCreate2, OpDelete}, false},
	} {
		var m MultiRequest
		for _, op := range tc.ops {
			m.Ops = append(m.Ops, MultiOp{Op: op})
		}
		if got := m.ReadOnly(); got != tc.want {
			t.Errorf("%d: ReadOnly(%v) = %v", i, tc.ops, got)
		}
	}
}

func TestMultiEncodeDetails(t *testing.T) {
	// A nil record pointer encodes as the zero record.
	m := MultiRequest{Ops: []MultiOp{{Op: OpDelete}}}
	want := encode(&MultiRequest{Ops: []MultiOp{{Op: OpDelete, Delete: &DeleteRequest{}}}})
	if got := encode(&m); string(got) != string(want) {
		t.Errorf("nil delete: % x, want % x", got, want)
	}
	// createTTL and createContainer results are sent as create2.
	r := MultiResponse{Results: []MultiResult{{Op: OpCreateTTL, Path: "/t", Stat: testStat}, {Op: OpCreateContainer, Path: "/c"}}}
	var got MultiResponse
	if err := got.Decode(NewDecoder(encode(&r))); err != nil {
		t.Fatal(err)
	}
	wantRes := []MultiResult{{Op: OpCreate2, Path: "/t", Stat: testStat}, {Op: OpCreate2, Path: "/c"}}
	if !reflect.DeepEqual(got.Results, wantRes) {
		t.Errorf("got %+v, want %+v", got.Results, wantRes)
	}
}
