package session

import (
	"testing"
	"time"
)

// BenchmarkLeaderScan compares the meta leader's per-check scan of 9,000 live sessions:
// Due (one read lock, nothing copied but the due sessions) against List plus Seen per session,
// the scan before it.
func BenchmarkLeaderScan(b *testing.B) {
	tb := NewTable(nil)
	now := time.Unix(100, 0)
	tb.now = func() time.Time { return now }
	for i := 1; i <= 9000; i++ {
		apply(b, tb, uint64(i), EncodeCreate(Entry{ID: int64(i), Timeout: 10_000, Owner: 1, Passwd: make([]byte, 16)}))
	}
	at := now.Add(time.Second)
	b.Run("Due", func(b *testing.B) {
		for b.Loop() {
			if _, overdue := tb.Due(at, now); len(overdue) != 0 {
				b.Fatal("overdue")
			}
		}
	})
	b.Run("List+Seen", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, e := range tb.List() {
				last := now
				if s, ok := tb.Seen(e.ID); ok && s.After(last) {
					last = s
				}
				if at.Sub(last) > time.Duration(e.Timeout)*time.Millisecond {
					n++
				}
			}
			if n != 0 {
				b.Fatal("overdue")
			}
		}
	})
}
