package session

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

func apply(t testing.TB, tb *Table, idx uint64, cmd []byte) uint64 {
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
		3: {EncodeClose(10, 6999, true), ResultAlive},    // deadline 3000+4000 not passed
		4: {EncodeTakeOver(2, 5000, []int64{10}), 5},     // moved to server 2; epoch = index
		5: {EncodeClose(10, 9001, true), ResultOK},       // 5000+4000 < 9001: expired
		6: {EncodeTouch(2, 9500, []int64{10}), ResultOK}, // closing sessions are not revived
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
	for i, cmd := range [][]byte{nil, {cmdCreate, 1, 2}, {cmdTouch, 0}, {cmdClose}, {cmdCleaned, 1}, {cmdRenew, 0}, {cmdExpire, 1, 2}, {99}} {
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

// TestExpireLosesToLaterRenewal: an Expire decided on a table at index B closes the session
// only if no renewal (Renew, Touch, TakeOver) of it was applied after B; Renew moves LastSeen to
// the stamp minus each session's age and never revives a closing session.
func TestExpireLosesToLaterRenewal(t *testing.T) {
	tb := NewTable(nil)
	apply(t, tb, 1, EncodeCreate(Entry{ID: 7, Timeout: 1000, Owner: 1, LastSeen: 10, Passwd: []byte("p")}))
	apply(t, tb, 2, EncodeRenew(1, 5000, []Renewal{{ID: 7, Age: 1500 * time.Millisecond}, {ID: 99}}))
	if e, _ := tb.Get(7); e.LastSeen != 3500 || e.Renewed != 2 {
		t.Fatalf("after a renewal with age 1.5 s: %+v", e)
	}
	if got := apply(t, tb, 3, EncodeExpire(7, 1)); got != ResultAlive {
		t.Fatalf("expire decided at index 1, renewed at 2: result %d, want alive", got)
	}
	if got := apply(t, tb, 4, EncodeExpire(7, 3)); got != ResultOK {
		t.Fatalf("expire decided at index 3: result %d, want ok", got)
	}
	apply(t, tb, 5, EncodeRenew(1, 9000, []Renewal{{ID: 7}}))
	apply(t, tb, 6, EncodeTakeOver(1, 9000, []int64{7}))
	if e, _ := tb.Get(7); !e.Closing || e.Renewed != 2 {
		t.Fatalf("a closing session was renewed: %+v", e)
	}
	if got := apply(t, tb, 7, EncodeExpire(7, 6)); got != ResultClosing {
		t.Fatalf("second expire: %d", got)
	}
}

// TestSeenIsLocalApplyTimeMinusAge: the local fact the leader's expiry decision reads is this
// replica's clock at apply minus the reported age, never moving back.
func TestSeenIsLocalApplyTimeMinusAge(t *testing.T) {
	tb := NewTable(nil)
	now := time.Unix(100, 0)
	tb.now = func() time.Time { return now }
	apply(t, tb, 1, EncodeCreate(Entry{ID: 7, Timeout: 1000, Owner: 1, Passwd: []byte("p")}))
	now = now.Add(time.Second)
	apply(t, tb, 2, EncodeRenew(1, 0, []Renewal{{ID: 7, Age: 300 * time.Millisecond}}))
	if s, _ := tb.Seen(7); !s.Equal(time.Unix(100, 700e6)) {
		t.Fatalf("seen %v", s)
	}
	apply(t, tb, 3, EncodeRenew(1, 0, []Renewal{{ID: 7, Age: 5 * time.Second}}))
	if s, _ := tb.Seen(7); !s.Equal(time.Unix(100, 700e6)) {
		t.Fatalf("an older report moved seen back: %v", s)
	}
}

// TestTableReadsVersion1Snapshot: a snapshot written before Renewed existed (no header) loads,
// with Renewed 0.
func TestTableReadsVersion1Snapshot(t *testing.T) {
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(3<<56|5))
	b = binary.BigEndian.AppendUint32(b, 4000)
	b = binary.BigEndian.AppendUint64(b, 3)
	b = binary.BigEndian.AppendUint64(b, 1234)
	b = append(b, 0, 2, 'p', 'w')
	tb := NewTable(nil)
	if err := tb.RecoverFromSnapshot(bytes.NewReader(b), nil, nil); err != nil {
		t.Fatal(err)
	}
	e, ok := tb.Get(3<<56 | 5)
	if !ok || e.Timeout != 4000 || e.Owner != 3 || e.LastSeen != 1234 || string(e.Passwd) != "pw" || e.Renewed != 0 {
		t.Fatalf("%v %+v", ok, e)
	}
	if _, ok := tb.Seen(3<<56 | 5); !ok {
		t.Fatal("a loaded session has no local seen time")
	}
}

// TestTableDue: Due lists the closing sessions, and the live ones last heard (by Seen, or at
// since when that is later) more than their timeout before now, each sorted by id.
func TestTableDue(t *testing.T) {
	tb := NewTable(nil)
	now := time.Unix(100, 0)
	tb.now = func() time.Time { return now }
	for i, id := range []int64{9, 3, 5, 7} {
		apply(t, tb, uint64(i+1), EncodeCreate(Entry{ID: id, Timeout: 1000, Owner: 1, Passwd: []byte("p")}))
	}
	apply(t, tb, 5, EncodeClose(7, now.UnixMilli(), false))
	now = now.Add(900 * time.Millisecond)
	apply(t, tb, 6, EncodeRenew(1, 0, []Renewal{{ID: 5, Age: 0}})) // heard at 100.9
	at := time.Unix(101, 500e6)
	closing, overdue := tb.Due(at, time.Unix(0, 0))
	if !slices.Equal(closing, []int64{7}) || len(overdue) != 2 || overdue[0].ID != 3 || overdue[1].ID != 9 {
		t.Fatalf("closing %v, overdue %+v; want [7] and sessions 3 and 9", closing, overdue)
	}
	// A leader since 101 gives every session a full timeout from then.
	if _, overdue := tb.Due(at, time.Unix(101, 0)); len(overdue) != 0 {
		t.Fatalf("overdue %+v within the leader's grace", overdue)
	}
}
