package session

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

// fakeMeta applies commands directly to a table and reports leadership as told.
type fakeMeta struct {
	mu     sync.Mutex
	t      *Table
	idx    uint64
	leader bool
	closes int
}

func (f *fakeMeta) Propose(_ context.Context, cmd []byte) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idx++
	if cmd[0] == cmdClose {
		f.closes++
	}
	r, err := f.t.Update(sm.Entry{Index: f.idx, Cmd: cmd})
	return r.Value, err
}
func (f *fakeMeta) Barrier(context.Context) error { return nil }
func (f *fakeMeta) IsLeader() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}

// TestNewLeaderGrantsFullTimeout: sessions whose last reported activity is older than their
// timeout (reports were lost while the meta shard had no leader) are not expired by a server
// that just became leader until a full timeout has passed since it took over; then they are.
func TestNewLeaderGrantsFullTimeout(t *testing.T) {
	tb := NewTable(nil)
	now := time.Unix(1000, 0)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	meta := &fakeMeta{t: tb}
	for id := int64(1); id <= 5; id++ {
		meta.Propose(context.Background(), EncodeCreate(Entry{ID: id, Passwd: []byte{1}, Timeout: 2000, Owner: 2,
			LastSeen: now.Add(-10 * time.Second).UnixMilli()}))
	}
	m := &Manager{o: Options{Self: 1, Tick: time.Hour, Table: tb, Meta: meta, Now: clock,
		CloseOnShards: func(context.Context, int64) error { return nil }}}
	m.o.Log = discardLogger()
	m.mu.cleaning = map[int64]bool{}
	m.mu.active = map[int64]struct{}{}
	m.ctx, m.stop = context.WithCancel(context.Background())
	defer m.Stop()

	meta.leader = true
	m.leaderDuties() // takes over now: every session gets until now+2s
	advance(1500 * time.Millisecond)
	m.leaderDuties()
	if meta.closes != 0 {
		t.Fatalf("%d sessions expired within the grace after a leader change", meta.closes)
	}
	advance(1 * time.Second)
	m.leaderDuties()
	m.wg.Wait()
	if meta.closes != 5 {
		t.Fatalf("%d sessions expired after the grace, want 5", meta.closes)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
