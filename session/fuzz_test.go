package session

import (
	"bytes"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

// FuzzTableUpdate: no command, however malformed, panics the table; a command that is accepted
// leaves a table whose snapshot round-trips.
func FuzzTableUpdate(f *testing.F) {
	f.Add(EncodeCreate(Entry{ID: 1, Passwd: make([]byte, 16), Timeout: 4000, Owner: 1, LastSeen: 5}))
	f.Add(EncodeTouch(2, 10, []int64{1, 2, 3}))
	f.Add(EncodeClose(1, 20, true))
	f.Add(EncodeCleaned(1))
	f.Fuzz(func(t *testing.T, cmd []byte) {
		tb := NewTable(nil)
		tb.Update(sm.Entry{Index: 1, Cmd: EncodeCreate(Entry{ID: 1, Passwd: []byte{1}, Timeout: 10, Owner: 1})})
		if _, err := tb.Update(sm.Entry{Index: 2, Cmd: cmd}); err != nil {
			return
		}
		var buf bytes.Buffer
		if err := tb.SaveSnapshot(&buf, nil, nil); err != nil {
			t.Fatal(err)
		}
		tb2 := NewTable(nil)
		if err := tb2.RecoverFromSnapshot(&buf, nil, nil); err != nil {
			t.Fatalf("snapshot of an accepted state does not load: %v", err)
		}
		if len(tb2.List()) != len(tb.List()) {
			t.Fatal("snapshot lost sessions")
		}
	})
}
