package shard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corral/corral/internal/transcript"
	"github.com/corral/corral/wire"
)

// fuzzSeedBatches are the seeds of FuzzDecodeBatch (also written to testdata/fuzz by -rewrite).
func fuzzSeedBatches() []Batch {
	return []Batch{
		{},
		{Proposer: 1, Seq: 1, Time: 1700000000000},
		{Proposer: 0xdeadbeef, Seq: 42, Time: -1, Ops: []Op{
			opCreate("/a", []byte("x"), 0),
			{Session: 7, Auth: []wire.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "u:h"}}, Code: wire.OpSetData,
				Body: encode(&wire.SetDataRequest{Path: "/a", Data: []byte{}, Version: -1}), MinZxid: 1 << 40},
			{Code: wire.OpCloseSession, Session: -5},
			{Code: wire.OpMulti, Body: []byte{}},
		}},
		{Proposer: 3, Seq: 2, Time: 5, Control: true, Ops: []Op{
			{Code: OpTxnPrepare, Session: 9, MinZxid: 1 << 30, Body: (&TxnPrepare{ID: 4, Anchor: 1,
				Multi: wire.MultiRequest{Ops: []wire.MultiOp{{Op: wire.OpDelete, Delete: &wire.DeleteRequest{Path: "/x", Version: -1}}}},
				Roles: []TxnRole{RoleParent}}).AppendTo(nil)},
			{Code: OpTxnCommit, Body: (&TxnCommit{ID: 4, Zxid: 1 << 40, Time: 5}).AppendTo(nil)},
		}},
	}
}

func fuzzSeedResults() []BatchResult {
	return []BatchResult{
		{Status: BatchOutOfOrder},
		{Status: BatchDuplicateUnknown},
		{Status: BatchApplied, Results: []OpResult{{Zxid: 1 << 8}, {Err: wire.ErrNoNode, Zxid: 2<<8 | 3}, {Zxid: 3 << 8, Body: []byte{}}}},
		{Status: BatchDuplicate, Results: []OpResult{{Zxid: 9, Body: encode(&wire.CreateResponse{Path: "/x"})}}},
		{Status: BatchBlocked},
	}
}

func FuzzDecodeBatch(f *testing.F) {
	for _, b := range fuzzSeedBatches() {
		f.Add(b.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedBatch) {
				t.Fatalf("error does not wrap ErrMalformedBatch: %v", err)
			}
			return
		}
		again, err := DecodeBatch(b.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(normBatch(b), normBatch(again)) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, b, again)
		}
		// Applying whatever decodes must not panic either.
		s := NewState(StateConfig{OwnsRoot: true, ExtendedTypes: true})
		s.Apply(&b)
	})
}

func FuzzDecodeBatchResult(f *testing.F) {
	for _, r := range fuzzSeedResults() {
		f.Add(r.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeBatchResult(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedResult) {
				t.Fatalf("error does not wrap ErrMalformedResult: %v", err)
			}
			return
		}
		again, err := DecodeBatchResult(r.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(r, again) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, r, again)
		}
	})
}

// normBatch makes decoded batches comparable (empty and nil Auth decode alike).
func normBatch(b Batch) Batch {
	for i := range b.Ops {
		if len(b.Ops[i].Auth) == 0 {
			b.Ops[i].Auth = nil
		}
	}
	return b
}

func TestCodecRoundTrip(t *testing.T) {
	for i, b := range fuzzSeedBatches() {
		got, err := DecodeBatch(b.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(normBatch(got), normBatch(b)) {
			t.Errorf("%d: batch round trip: %v\n%+v\n%+v", i, err, got, b)
		}
	}
	for i, r := range fuzzSeedResults() {
		got, err := DecodeBatchResult(r.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("%d: result round trip: %v", i, err)
		}
	}
	// every strict prefix of a valid encoding is rejected, and so are trailing bytes
	enc := fuzzSeedBatches()[2].AppendTo(nil)
	for n := 0; n < len(enc); n++ {
		if _, err := DecodeBatch(enc[:n]); err == nil {
			t.Fatalf("prefix of %d bytes accepted", n)
		}
	}
	if _, err := DecodeBatch(append(enc, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	// a count larger than the input is rejected before allocating
	huge := []byte{batchVersion, 1, 1, 2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := DecodeBatch(huge); !errors.Is(err, ErrMalformedBatch) {
		t.Fatalf("huge count: %v", err)
	}
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/<target>/seed<i> from the seed lists (with
// -rewrite), in the current encodings. The files named v<N>-seed<i> hold the same seeds in an
// earlier version of the encoding (batch version 2, prepare version 4), which the decoders still
// read; -rewrite leaves them.
func TestWriteFuzzSeeds(t *testing.T) {
	if !transcript.Rewriting() {
		t.Skip("run with -rewrite to regenerate the seed corpus")
	}
	write := func(target string, i int, data []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%d", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range fuzzSeedBatches() {
		write("FuzzDecodeBatch", i, b.AppendTo(nil))
	}
	write("FuzzDecodeBatch", 99, []byte{batchVersion, 1, 1, 2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	for i, r := range fuzzSeedResults() {
		write("FuzzDecodeBatchResult", i, r.AppendTo(nil))
	}
	write("FuzzDecodeBatchResult", 99, []byte{resultVersion, 9})
	for i, p := range fuzzSeedPrepares() {
		write("FuzzDecodeTxnPrepare", i, p.AppendTo(nil))
	}
	for i, r := range fuzzSeedReplies() {
		write("FuzzDecodeTxnReply", i, r.AppendTo(nil))
	}
	for i, b := range fuzzSeedTxnOps() {
		write("FuzzDecodeTxnOps", i, b)
	}
}
