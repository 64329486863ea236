package shard

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/corral/corral/wire"
)

func multiOf(ops ...wire.MultiOp) wire.MultiRequest { return wire.MultiRequest{Ops: ops} }

func mCreate(path string, data []byte, flags int32) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpCreate, Create: &wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags}}
}

func mDelete(path string, version int32) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: path, Version: version}}
}

func mSet(path string, data []byte, version int32) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpSetData, SetData: &wire.SetDataRequest{Path: path, Data: data, Version: version}}
}

func mCheck(path string, version int32) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpCheck, Check: &wire.CheckVersionRequest{Path: path, Version: version}}
}

// fuzzSeedPrepares are the seeds of FuzzDecodeTxnPrepare.
func fuzzSeedPrepares() []TxnPrepare {
	return []TxnPrepare{
		{ID: 1},
		{ID: 0xfeedface12345678, Anchor: 3, Deadline: 1_700_000_003_000, Internal: true,
			Multi: multiOf(mCreate("/x", []byte("d"), 0), mDelete("/y", 2), mSet("/a", nil, -1), mCheck("/a", 0)),
			Roles: []TxnRole{RoleParent, RoleNode, RoleFull, RoleNone}},
		{ID: 7, Anchor: 1, Deadline: -1,
			Multi: multiOf(wire.MultiOp{Op: wire.OpCreateTTL, CreateTTL: &wire.CreateTTLRequest{Path: "/t", ACL: wire.OpenACLUnsafe, Flags: wire.FlagPersistentWithTTL, TTL: 100}}),
			Roles: []TxnRole{RoleNode}},
		{ID: 77, Anchor: 2, Deadline: 1_700_000_002_000, Cut: true}, // a backup's cut (version 4)
	}
}

// fuzzSeedReplies are the seeds of FuzzDecodeTxnReply.
func fuzzSeedReplies() []TxnReply {
	return []TxnReply{
		{Outcome: TxnBusy},
		{Outcome: TxnFailed, FailIndex: -1, FailErr: wire.ErrMarshallingError},
		{Outcome: TxnFailed, FailIndex: 2, FailErr: wire.ErrNoAuth},
		{Outcome: TxnPrepared, Floor: 1 << 40, Results: []wire.MultiResult{{}, {Op: wire.OpCreate, Path: "/x"},
			{Op: wire.OpCreate2, Path: "/y", Stat: wire.Stat{Czxid: 1 << 20, Mzxid: 1<<20 | 3, Ctime: 5, Mtime: -5, Version: 1, Cversion: -1,
				Aversion: 2, EphemeralOwner: 0x55, DataLength: 3, NumChildren: 4, Pzxid: 9}},
			{Op: wire.OpDelete}, {Op: wire.OpCheck}, {Op: wire.OpGetData, Data: []byte{}, Children: []string{"a", ""}}}},
		{Outcome: TxnCommitted, Zxid: 1<<30 | 2, Results: []wire.MultiResult{}},
		{Outcome: TxnAborted},
	}
}

// fuzzSeedTxnOps are the seeds of FuzzDecodeTxnOps (commit, abort and resolve bodies).
func fuzzSeedTxnOps() [][]byte {
	return [][]byte{
		(&TxnCommit{ID: 9, Zxid: 1<<40 | 7, Time: 1_700_000_000_000}).AppendTo(nil),
		(&TxnAbort{ID: 1<<64 - 1}).AppendTo(nil),
		(&TxnResolve{ID: 12}).AppendTo(nil),
	}
}

func prepareBytes(p TxnPrepare) []byte { return p.AppendTo(nil) }

func FuzzDecodeTxnPrepare(f *testing.F) {
	for _, p := range fuzzSeedPrepares() {
		f.Add(p.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeTxnPrepare(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedTxn) {
				t.Fatalf("error does not wrap ErrMalformedTxn: %v", err)
			}
			return
		}
		// The wire codec normalises some values (a boolean byte, null vectors), so compare
		// the re-encodings.
		enc := prepareBytes(p)
		again, err := DecodeTxnPrepare(enc)
		if err != nil || !bytes.Equal(prepareBytes(again), enc) {
			t.Fatalf("round trip: %v", err)
		}
		// Preparing and committing whatever decodes must not panic.
		s := NewState(StateConfig{OwnsRoot: true, ExtendedTypes: true})
		s.Apply(&Batch{Proposer: 1, Seq: 1, Control: true, Ops: []Op{{Code: OpTxnPrepare, Body: data},
			{Code: OpTxnCommit, Body: (&TxnCommit{ID: p.ID, Zxid: 1 << 30}).AppendTo(nil)}}})
	})
}

func FuzzDecodeTxnReply(f *testing.F) {
	for _, r := range fuzzSeedReplies() {
		f.Add(r.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeTxnReply(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedTxn) {
				t.Fatalf("error does not wrap ErrMalformedTxn: %v", err)
			}
			return
		}
		again, err := DecodeTxnReply(r.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(r, again) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, r, again)
		}
	})
}

func FuzzDecodeTxnOps(f *testing.F) {
	for _, b := range fuzzSeedTxnOps() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := DecodeTxnCommit(data); err == nil {
			if again, err := DecodeTxnCommit(c.AppendTo(nil)); err != nil || again != c {
				t.Fatalf("commit round trip: %v", err)
			}
		} else if !errors.Is(err, ErrMalformedTxn) {
			t.Fatal(err)
		}
		if a, err := DecodeTxnAbort(data); err == nil {
			if again, err := DecodeTxnAbort(a.AppendTo(nil)); err != nil || again != a {
				t.Fatalf("abort round trip: %v", err)
			}
		} else if !errors.Is(err, ErrMalformedTxn) {
			t.Fatal(err)
		}
		if r, err := DecodeTxnResolve(data); err == nil {
			if again, err := DecodeTxnResolve(r.AppendTo(nil)); err != nil || again != r {
				t.Fatalf("resolve round trip: %v", err)
			}
		} else if !errors.Is(err, ErrMalformedTxn) {
			t.Fatal(err)
		}
	})
}

func TestTxnCodecRoundTrip(t *testing.T) {
	for i, p := range fuzzSeedPrepares() {
		enc := p.AppendTo(nil)
		got, err := DecodeTxnPrepare(enc)
		if err != nil {
			t.Fatalf("%d: prepare: %v", i, err)
		}
		if got.ID != p.ID || got.Anchor != p.Anchor || got.Deadline != p.Deadline || got.Internal != p.Internal ||
			!reflect.DeepEqual(got.Roles, p.Roles) || len(got.Multi.Ops) != len(p.Multi.Ops) || !bytes.Equal(got.AppendTo(nil), enc) {
			t.Fatalf("%d: prepare round trip\n%+v\n%+v", i, got, p)
		}
		if len(p.Multi.Ops) > 0 && !reflect.DeepEqual(got.Multi.Ops[0], p.Multi.Ops[0]) {
			t.Fatalf("%d: first op %+v, want %+v", i, got.Multi.Ops[0], p.Multi.Ops[0])
		}
		for n := 0; n < len(enc); n++ {
			if _, err := DecodeTxnPrepare(enc[:n]); err == nil {
				t.Fatalf("%d: prefix of %d bytes accepted", i, n)
			}
		}
		if _, err := DecodeTxnPrepare(append(enc, 0)); err == nil {
			t.Fatalf("%d: trailing byte accepted", i)
		}
	}
	for i, r := range fuzzSeedReplies() {
		enc := r.AppendTo(nil)
		got, err := DecodeTxnReply(enc)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("%d: reply round trip: %v\n%+v\n%+v", i, err, got, r)
		}
		for n := 0; n < len(enc); n++ {
			if _, err := DecodeTxnReply(enc[:n]); err == nil {
				t.Fatalf("%d: reply prefix of %d bytes accepted", i, n)
			}
		}
	}
	if c, err := DecodeTxnCommit(fuzzSeedTxnOps()[0]); err != nil || c != (TxnCommit{ID: 9, Zxid: 1<<40 | 7, Time: 1_700_000_000_000}) {
		t.Fatalf("commit: %+v %v", c, err)
	}
	if a, err := DecodeTxnAbort(fuzzSeedTxnOps()[1]); err != nil || a.ID != 1<<64-1 {
		t.Fatalf("abort: %+v %v", a, err)
	}
	if r, err := DecodeTxnResolve(fuzzSeedTxnOps()[2]); err != nil || r.ID != 12 {
		t.Fatalf("resolve: %+v %v", r, err)
	}

	// Malformed records.
	badPrepares := map[string][]byte{
		"roles and ops differ":   (&TxnPrepare{ID: 1, Multi: multiOf(mCheck("/", -1)), Roles: nil}).AppendTo(nil),
		"unknown role":           (&TxnPrepare{ID: 1, Multi: multiOf(mCheck("/", -1)), Roles: []TxnRole{RoleParent + 1}}).AppendTo(nil),
		"bad multi":              (&TxnPrepare{ID: 1, Multi: multiOf(wire.MultiOp{Op: wire.OpPing}), Roles: []TxnRole{RoleFull}}).AppendTo(nil),
		"internal not a boolean": {txnCodecVersion, 1, 0, 0, 2, 0, 0},
		"wrong version":          {txnCodecVersion + 1, 1},
		"empty":                  {},
	}
	for name, b := range badPrepares {
		if _, err := DecodeTxnPrepare(b); !errors.Is(err, ErrMalformedTxn) {
			t.Errorf("prepare %s: accepted (%v)", name, err)
		}
	}
	badReplies := map[string][]byte{
		"unknown outcome": {txnCodecVersion, byte(TxnAborted + 1), 0, 0, 0, 0, 0},
		"zero outcome":    {txnCodecVersion, 0, 0, 0, 0, 0, 0},
		"huge results":    {txnCodecVersion, byte(TxnPrepared), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x0f},
		"wrong version":   {txnCodecVersion + 1, byte(TxnPrepared), 0, 0, 0, 0, 0},
		"empty":           {},
	}
	for name, b := range badReplies {
		if _, err := DecodeTxnReply(b); !errors.Is(err, ErrMalformedTxn) {
			t.Errorf("reply %s: accepted (%v)", name, err)
		}
	}
	for _, b := range [][]byte{{}, {txnCodecVersion}, {txnCodecVersion, 1, 0}, {2, 1}} {
		if _, err := DecodeTxnAbort(b); !errors.Is(err, ErrMalformedTxn) {
			t.Errorf("abort %x accepted", b)
		}
		if _, err := DecodeTxnCommit(b); !errors.Is(err, ErrMalformedTxn) {
			t.Errorf("commit %x accepted", b)
		}
	}
}

// TestBatchCodecControl: the Control and SessionFence flags survive the codec; a version 1
// batch (no flags byte) still decodes, as a client batch; unknown flags are refused.
func TestBatchCodecControl(t *testing.T) {
	b := Batch{Proposer: 5, Seq: 2, Time: 9, Control: true, Ops: []Op{{Code: OpTxnAbort, Body: (&TxnAbort{ID: 3}).AppendTo(nil)}}}
	got, err := DecodeBatch(b.AppendTo(nil))
	if err != nil || !reflect.DeepEqual(normBatch(got), b) {
		t.Fatalf("control batch: %v\n%+v", err, got)
	}
	v1 := []byte{1, 5, 2, 18, 1, 0, 4, 0, 0, 0} // version 1: proposer 5, seq 2, time 9, one op
	got, err = DecodeBatch(v1)
	if err != nil || got.Control || got.Proposer != 5 || got.Seq != 2 || got.Time != 9 || len(got.Ops) != 1 || got.Ops[0].Code != wire.OpDelete {
		t.Fatalf("version 1 batch: %v %+v", err, got)
	}
	f := Batch{Proposer: 5, Seq: 2, Time: 9, SessionFence: true, Ops: []Op{{Code: wire.OpDelete}}}
	if got, err := DecodeBatch(f.AppendTo(nil)); err != nil || !got.SessionFence || got.Control {
		t.Fatalf("fenced batch: %v %+v", err, got)
	}
	enc := b.AppendTo(nil)
	enc[4] = 4 // the flags byte
	if _, err := DecodeBatch(enc); !errors.Is(err, ErrMalformedBatch) {
		t.Fatalf("unknown batch flag: %v", err)
	}
	res := BatchResult{Status: BatchBlocked}
	if got, err := DecodeBatchResult(res.AppendTo(nil)); err != nil || got.Status != BatchBlocked {
		t.Fatalf("blocked result: %v %+v", err, got)
	}
	if _, err := DecodeBatchResult([]byte{resultVersion, byte(BatchBlocked + 1), 0}); !errors.Is(err, ErrMalformedResult) {
		t.Fatalf("unknown status: %v", err)
	}
}

// TestBatchResultAppendAllocatesOnce: a replica encodes a result for every batch it applies, so
// the encoding is sized up front instead of growing op by op.
func TestBatchResultAppendAllocatesOnce(t *testing.T) {
	res := BatchResult{Status: BatchApplied}
	for i := 0; i < 40; i++ {
		res.Results = append(res.Results, OpResult{Zxid: int64(i) << 20, Body: make([]byte, 80+i)})
	}
	if n := testing.AllocsPerRun(20, func() { _ = res.AppendTo(nil) }); n != 1 && !raceEnabled {
		t.Fatalf("AppendTo allocated %v times, want 1", n)
	}
	back, err := DecodeBatchResult(res.AppendTo(nil))
	if err != nil || len(back.Results) != 40 || back.Results[39].Zxid != 39<<20 || len(back.Results[39].Body) != 119 {
		t.Fatalf("round trip: %v, %+v", err, back.Results[len(back.Results)-1])
	}
}
