package session

import (
	"bytes"
	"fmt"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

func apply(t *testing.T, tb *Table, idx uint64, cmd []byte) uint64 {
	t.Helper()
	r, err := tb.Update(sm.Entry{Index: idx, Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	return r.Value
}

// TestTableLifecycle walks a session through create, touch, ownership move, a refused and an
// accepted expiry, and cleanup, checking the results and the changes reported to the server.
func TestTableLifecycle(t *testing.T) {
	var changes []Change
	tb := NewTable(func(c Change) { changes = append(changes, c) })
	pw := bytes.Repeat([]byte{7}, 16)
	for i, tc := range []struct {
		cmd  []byte
		want uint64
	}{
		0: {EncodeCreate(Entry{ID: 10, Passwd: pw, Timeout: 4000, Owner: 1, LastSeen: 1000}), ResultOK},
		1: {EncodeCreate(Entry{ID: 10, Passwd: pw, Timeout: 4000, Owner: 2, LastSeen: 1000}), ResultExists},
		2: {EncodeTouch(1, 3000, []int64{10, 99}), ResultOK},
		3: {EncodeClose(10, 6999, true), ResultAlive},       // deadline 3000+4000 not passed
		4: {EncodeTakeOver(2, 5000, []int64{10}), ResultOK}, // moved to server 2
		5: {EncodeClose(10, 9001, true), ResultOK},          // 5000+4000 < 9001: expired
		6: {EncodeTouch(2, 9500, []int64{10}), ResultOK},    // closing sessions are not revived
		7: {EncodeClose(10, 9600, false), ResultClosing},
		8: {EncodeCleaned(10), ResultOK},
		9: {EncodeCleaned(10), ResultNotFound},
	} {
		if got := apply(t, tb, uint64(i+1), tc.cmd); got != tc.want {
			t.Fatalf("#%d: result %d, want %d", i, got, tc.want)
		}
	}
	want := fmt.Sprint([]Change{{ID: 10, Owner: 2, OwnerWas: 1}, {ID: 10, Owner: 2, OwnerWas: 2, Closing: true}})
	if got := fmt.Sprint(changes); got != want {
		t.Fatalf("changes %s, want %s", got, want)
	}
	if _, ok := tb.Get(10); ok {
		t.Fatal("cleaned session still present")
	}
}

func TestTableSnapshotRoundTrip(t *testing.T) {
	tb := NewTable(nil)
	for i := int64(1); i <= 5; i++ {
		apply(t, tb, uint64(i), EncodeCreate(Entry{ID: i << 40, Passwd: []byte{byte(i)}, Timeout: int32(i * 1000), Owner: uint64(i), LastSeen: i}))
	}
	apply(t, tb, 6, EncodeClose(3<<40, 100, false))
	var buf bytes.Buffer
	if err := tb.SaveSnapshot(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	tb2 := NewTable(nil)
	if err := tb2.RecoverFromSnapshot(bytes.NewReader(buf.Bytes()), nil, nil); err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprint(tb.List()), fmt.Sprint(tb2.List()); a != b {
		t.Fatalf("snapshot changed the table:\n%s\n%s", a, b)
	}
}

func TestTableRejectsMalformed(t *testing.T) {
	tb := NewTable(nil)
	for i, cmd := range [][]byte{nil, {cmdCreate, 1, 2}, {cmdTouch, 0}, {cmdClose}, {cmdCleaned, 1}, {99}} {
		if _, err := tb.Update(sm.Entry{Index: uint64(i + 1), Cmd: cmd}); err == nil {
			t.Errorf("#%d: malformed command %v accepted", i, cmd)
		}
	}
}

// TestTouchDoesNotTakeOwnership: an activity report never moves a session; only TakeOver does
// (a late report from the old server must not take a moved session back).
func TestTouchDoesNotTakeOwnership(t *testing.T) {
	var changes []Change
	tb := NewTable(func(c Change) { changes = append(changes, c) })
	apply(t, tb, 1, EncodeCreate(Entry{ID: 7, Timeout: 1000, Owner: 1, LastSeen: 10, Passwd: []byte("p")}))
	apply(t, tb, 2, EncodeTakeOver(2, 20, []int64{7}))
	apply(t, tb, 3, EncodeTouch(1, 30, []int64{7})) // the old server's late report
	e, ok := tb.Get(7)
	if !ok || e.Owner != 2 || e.LastSeen != 30 {
		t.Fatalf("after take-over by 2 and a late report by 1: %+v", e)
	}
	if len(changes) != 1 || changes[0].Owner != 2 || changes[0].OwnerWas != 1 {
		t.Fatalf("changes %+v, want one move 1 -> 2", changes)
	}
}
