package wire

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// unhex decodes hex digits separated by white space; '#' starts a comment running to the end of
// the line.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var digits strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGolden checks encodings derived by hand from zookeeper.jute and §1 of the protocol reference.
func TestGolden(t *testing.T) {
	zeroPwd := make([]byte, 16)
	for i, tc := range []struct {
		rec  Record
		size int
		hex  string
	}{
		{ // 44-byte ConnectRequest: go-zookeeper sends no readOnly byte.
			&ConnectRequest{LastZxidSeen: 0x0102030405060708, TimeOut: 30000, Passwd: zeroPwd}, ConnectRequestSize, `
			00000000          # protocolVersion
			0102030405060708  # lastZxidSeen
			00007530          # timeOut 30000
			0000000000000000  # sessionId
			00000010 00000000000000000000000000000000  # passwd`,
		},
		{ // 45-byte ConnectRequest with readOnly (Java, C, kazoo).
			&ConnectRequest{TimeOut: 10000, SessionID: 0x1122334455667788, Passwd: testPwd, ReadOnly: true, HasReadOnly: true},
			ConnectRequestSizeReadOnly, `
			00000000 0000000000000000 00002710 1122334455667788
			00000010 000102030405060708090a0b0c0d0e0f
			01`,
		},
		{ // 36-byte ConnectResponse.
			&ConnectResponse{TimeOut: 30000, SessionID: 0x1122334455667788, Passwd: testPwd}, ConnectResponseSize, `
			00000000 00007530 1122334455667788 00000010 000102030405060708090a0b0c0d0e0f`,
		},
		{ // 37-byte ConnectResponse; this one refuses a session (timeOut 0, sessionId 0, zero passwd).
			&ConnectResponse{Passwd: zeroPwd, HasReadOnly: true}, ConnectResponseSizeReadOnly, `
			00000000 00000000 0000000000000000 00000010 00000000000000000000000000000000 00`,
		},
		{ // A failed multi: rolled back (0), the failing op (NONODE -101), skipped (RUNTIMEINCONSISTENCY -2).
			&MultiResponse{Results: []MultiResult{{Op: OpError, Err: ErrOK}, {Op: OpError, Err: ErrNoNode}, {Op: OpError, Err: ErrRuntimeInconsistency}}},
			3*13 + 9, `
			ffffffff 00 00000000  00000000
			ffffffff 00 ffffff9b  ffffff9b
			ffffffff 00 fffffffe  fffffffe
			ffffffff 01 ffffffff`,
		},
		{ // multi(create /a "x" world:anyone:cdrwa, check /a version 3).
			&MultiRequest{Ops: []MultiOp{
				{Op: OpCreate, Create: &CreateRequest{Path: "/a", Data: []byte("x"), ACL: OpenACLUnsafe}},
				{Op: OpCheck, Check: &CheckVersionRequest{Path: "/a", Version: 3}},
			}}, 79, `
			00000001 00 ffffffff
			  00000002 2f61  00000001 78
			  00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65
			  00000000
			0000000d 00 ffffffff
			  00000002 2f61  00000003
			ffffffff 01 ffffffff`,
		},
		{ // getData reply body for a node created with null data.
			&GetDataResponse{Data: nil, Stat: Stat{Czxid: 2, Mzxid: 3, Version: 1, DataLength: 0, Pzxid: 2}}, 4 + StatSize, `
			ffffffff
			0000000000000002 0000000000000003 0000000000000000 0000000000000000
			00000001 00000000 00000000 0000000000000000 00000000 00000000 0000000000000002`,
		},
		{ // setWatches2 with null, empty and one-element vectors.
			&SetWatches2{RelativeZxid: 5, DataWatches: []string{"/d"}, ExistWatches: []string{}, PersistentRecursiveWatches: []string{"/"}}, 39, `
			0000000000000005 00000001 00000002 2f64 00000000 ffffffff ffffffff 00000001 00000001 2f`,
		},
		{ // addWatch's reply body: ErrorResponse{0}.
			&ErrorResponse{}, 4, `00000000`,
		},
		{ // auth: digest user:pw.
			&AuthPacket{Scheme: "digest", Auth: []byte("u:pw")}, 22, `
			00000000 00000006 646967657374 00000004 753a7077`,
		},
	} {
		want := unhex(t, tc.hex)
		if len(want) != tc.size {
			t.Fatalf("%d: golden has %d bytes, want %d", i, len(want), tc.size)
		}
		if got := encode(tc.rec); string(got) != string(want) {
			t.Errorf("%d: %T encodes as\n% x\nwant\n% x", i, tc.rec, got, want)
		}
		got := newLike(tc.rec)
		if err := got.Decode(NewDecoder(want)); err != nil || !reflect.DeepEqual(got, tc.rec) {
			t.Errorf("%d: golden decodes as %+v (%v)", i, got, err)
		}
	}
}

func TestGoldenFrames(t *testing.T) {
	for i, tc := range []struct {
		got []byte
		hex string
	}{
		{ // An error reply has no body.
			AppendReply(nil, ReplyHeader{Xid: 5, Zxid: 0x20, Err: ErrNoNode}, nil),
			`00000010 00000005 0000000000000020 ffffff9b`,
		},
		{ // A ping reply.
			AppendReply(nil, ReplyHeader{Xid: XidPing, Zxid: 0x21}, nil),
			`00000010 fffffffe 0000000000000021 00000000`,
		},
		{ // sync echoes the path.
			AppendReply([]byte{0xaa}, ReplyHeader{Xid: 6, Zxid: 0x22}, &SyncResponse{Path: "/a"}),
			`aa 00000016 00000006 0000000000000022 00000000 00000002 2f61`,
		},
		{ // A notification: xid -1, zxid -1 (3.8), err 0, then WatcherEvent.
			AppendEvent(nil, WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/a"}),
			`0000001e ffffffff ffffffffffffffff 00000000 00000003 00000003 00000002 2f61`,
		},
		{
			AppendFrame([]byte{1}, []byte{2, 3}),
			`01 00000002 0203`,
		},
	} {
		if want := unhex(t, tc.hex); string(tc.got) != string(want) {
			t.Errorf("%d: % x\nwant % x", i, tc.got, want)
		}
	}
}
