package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/format"
)

// TestTableFormatLevel: announcements replace each other (a server started again on an older
// binary lowers its own), SetLevel only raises the active level, and a replica whose binary
// cannot read a level refuses to apply it.
func TestTableFormatLevel(t *testing.T) {
	tb := NewTable(nil)
	tb.supported = 3
	if tb.Level() != format.Level1 {
		t.Fatalf("a new table is at %v, want %v", tb.Level(), format.Level1)
	}
	apply(t, tb, 1, EncodeAnnounce(1, 3))
	apply(t, tb, 2, EncodeAnnounce(2, 3))
	apply(t, tb, 3, EncodeAnnounce(2, 2))
	if got, want := tb.Announced(), map[uint64]format.Level{1: 3, 2: 2}; !maps.Equal(got, want) {
		t.Fatalf("announced %v, want %v", got, want)
	}
	apply(t, tb, 4, EncodeSetLevel(2))
	apply(t, tb, 5, EncodeSetLevel(1))
	if tb.Level() != 2 {
		t.Fatalf("level %v after SetLevel 2 then 1, want 2", tb.Level())
	}
	_, err := tb.Update(sm.Entry{Index: 6, Cmd: EncodeSetLevel(4)})
	if !errors.Is(err, ErrLevel) {
		t.Fatalf("SetLevel beyond the binary: %v, want ErrLevel", err)
	}
	if tb.Level() != 2 {
		t.Fatalf("a refused SetLevel changed the level to %v", tb.Level())
	}
	for i, cmd := range [][]byte{{cmdAnnounce, 1}, {cmdSetLevel, 0, 0}} {
		if _, err := tb.Update(sm.Entry{Index: uint64(7 + i), Cmd: cmd}); !errors.Is(err, ErrMalformed) {
			t.Errorf("malformed %v: %v", cmd, err)
		}
	}
}

// TestTableSnapshotKeepsFormatLevel: the level and the announcements survive a snapshot, and a
// binary that cannot read the snapshot's level refuses it.
func TestTableSnapshotKeepsFormatLevel(t *testing.T) {
	tb := NewTable(nil)
	tb.supported = 2
	apply(t, tb, 1, EncodeAnnounce(7, 2))
	apply(t, tb, 2, EncodeAnnounce(3, 2))
	apply(t, tb, 3, EncodeSetLevel(2))
	apply(t, tb, 4, EncodeCreate(Entry{ID: 5 << 40, Passwd: []byte("pw"), Timeout: 4000, Owner: 3, LastSeen: 9}))
	var buf bytes.Buffer
	if err := tb.SaveSnapshot(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	tb2 := NewTable(nil)
	tb2.supported = 2
	if err := tb2.RecoverFromSnapshot(bytes.NewReader(buf.Bytes()), nil, nil); err != nil {
		t.Fatal(err)
	}
	if tb2.Level() != 2 || !maps.Equal(tb2.Announced(), tb.Announced()) {
		t.Fatalf("restored level %v announced %v, want 2 and %v", tb2.Level(), tb2.Announced(), tb.Announced())
	}
	if e, ok := tb2.Get(5 << 40); !ok || string(e.Passwd) != "pw" {
		t.Fatalf("session after restore: %v %+v", ok, e)
	}
	old := NewTable(nil)
	old.supported = 1
	if err := old.RecoverFromSnapshot(bytes.NewReader(buf.Bytes()), nil, nil); !errors.Is(err, ErrLevel) {
		t.Fatalf("a level-1 binary restored a level-2 snapshot: %v", err)
	}
}

// TestTableReadsVersion2Snapshot: a snapshot from before format levels loads at Level1 with
// no announcements.
func TestTableReadsVersion2Snapshot(t *testing.T) {
	b := []byte{snapshotMagic, 2}
	b = binary.BigEndian.AppendUint64(b, uint64(3<<56|5))
	b = binary.BigEndian.AppendUint32(b, 4000)
	b = binary.BigEndian.AppendUint64(b, 3)
	b = binary.BigEndian.AppendUint64(b, 1234)
	b = append(b, 0, 2, 'p', 'w')
	b = binary.BigEndian.AppendUint64(b, 77)
	tb := NewTable(nil)
	if err := tb.RecoverFromSnapshot(bytes.NewReader(b), nil, nil); err != nil {
		t.Fatal(err)
	}
	if e, ok := tb.Get(3<<56 | 5); !ok || e.Renewed != 77 || tb.Level() != format.Level1 || len(tb.Announced()) != 0 {
		t.Fatalf("%v %+v level %v announced %v", ok, e, tb.Level(), tb.Announced())
	}
}
