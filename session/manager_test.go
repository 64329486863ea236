package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/format"
)

// fakeMeta applies commands directly to a table and reports leadership as told.
type fakeMeta struct {
	mu     sync.Mutex
	t      *Table
	idx    uint64
	leader bool
	closes int
	// holdCleaned, when set, keeps cleaned records from being proposed until it is closed (or
	// the proposal's context ends).
	holdCleaned chan struct{}
}

func (f *fakeMeta) Propose(ctx context.Context, cmd []byte) (uint64, error) {
	if cmd[0] == cmdCleaned && f.holdCleaned != nil {
		select {
		case <-f.holdCleaned:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.idx++
	if cmd[0] == cmdClose || cmd[0] == cmdExpire {
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
	tb.now = func() time.Time { return clock().Add(-10 * time.Second) } // heard long ago
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	meta := &fakeMeta{t: tb}
	for id := int64(1); id <= 5; id++ {
		meta.Propose(context.Background(), EncodeCreate(Entry{ID: id, Passwd: []byte{1}, Timeout: 2000, Owner: 2,
			LastSeen: now.Add(-10 * time.Second).UnixMilli()}))
	}
	var unfenced atomic.Int32
	m := &Manager{o: Options{Self: 1, Tick: time.Hour, Table: tb, Meta: meta, Now: clock,
		CloseOnShards: func(_ context.Context, _ int64, fence bool, _ uint64, _ Written) error {
			if !fence {
				unfenced.Add(1)
			}
			return nil
		}}}
	m.o.Log = discardLogger()
	m.mu.cleaning = map[int64]bool{}
	m.mu.active = map[int64]time.Time{}
	m.mu.heard = map[int64]time.Time{}
	m.mu.renewed = make(chan struct{})
	m.ctx, m.stop = context.WithCancel(context.Background())
	defer m.Stop()

	meta.leader = true
	m.leaderDuties() // takes over now: every session gets until now+2s
	advance(1500 * time.Millisecond)
	m.leaderDuties()
	if meta.closes != 0 || m.Expired() != 0 {
		t.Fatalf("%d sessions expired within the grace after a leader change (counted %d)", meta.closes, m.Expired())
	}
	advance(1 * time.Second)
	m.leaderDuties()
	m.wg.Wait()
	if meta.closes != 5 || m.Expired() != 5 {
		t.Fatalf("%d sessions expired after the grace (counted %d), want 5", meta.closes, m.Expired())
	}
	if n := unfenced.Load(); n != 0 {
		t.Fatalf("%d expired sessions were cleaned without the fence round", n)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestManager(tb *Table, meta *fakeMeta, clock func() time.Time) *Manager {
	m := &Manager{o: Options{Self: 1, Tick: time.Hour, Table: tb, Meta: meta, Now: clock, Log: discardLogger(),
		CloseOnShards: func(context.Context, int64, bool, uint64, Written) error { return nil }}, kick: make(chan struct{}, 1)}
	m.mu.cleaning = map[int64]bool{}
	m.mu.active = map[int64]time.Time{}
	m.mu.heard = map[int64]time.Time{}
	m.mu.renewed = make(chan struct{})
	m.ctx, m.stop = context.WithCancel(context.Background())
	return m
}

// TestTakeOverAnswersFromTheCommittedTable: a take-over of a session the committed table holds
// closing, or no longer holds, fails with ErrExpired, whatever the caller's view was; a
// successful one sets the lease basis to the moment the take-over started.
func TestTakeOverAnswersFromTheCommittedTable(t *testing.T) {
	tb := NewTable(nil)
	meta := &fakeMeta{t: tb}
	now := time.Unix(1000, 0)
	m := newTestManager(tb, meta, func() time.Time { return now })
	defer m.Stop()
	ctx := context.Background()
	meta.Propose(ctx, EncodeCreate(Entry{ID: 5, Passwd: []byte{1}, Timeout: 6000, Owner: 2}))
	meta.Propose(ctx, EncodeCreate(Entry{ID: 6, Passwd: []byte{1}, Timeout: 6000, Owner: 2}))
	epoch, err := m.TakeOver(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok, _ := m.Heard(5); !ok || !h.Equal(now) {
		t.Fatalf("lease basis after take-over: %v %v", h, ok)
	}
	// The epoch is the take-over's index, so every later take-over, by any server, has a
	// larger one.
	if epoch != tb.Applied() || epoch <= CreatedEpoch {
		t.Fatalf("take-over epoch %d, applied index %d", epoch, tb.Applied())
	}
	meta.Propose(ctx, EncodeTakeOver(3, now.UnixMilli(), []int64{5}))
	again, err := m.TakeOver(ctx, 5)
	if err != nil || again <= epoch {
		t.Fatalf("take-back: epoch %d (was %d), err %v", again, epoch, err)
	}
	meta.Propose(ctx, EncodeExpire(6, tb.Applied()))
	if _, err := m.TakeOver(ctx, 6); !errors.Is(err, ErrExpired) {
		t.Fatalf("take-over of an expired session: %v", err)
	}
	if _, err := m.TakeOver(ctx, 77); !errors.Is(err, ErrExpired) {
		t.Fatalf("take-over of an unknown session: %v", err)
	}
}

// TestRenewalMovesLeaseOnlyForLiveOwnedSessions: a committed activity report moves the lease
// basis to when each client was last heard, drops the lease of a session the report found
// closed or owned by another server, and gives none to a session whose connection here ended;
// HeardAll answers as Heard.
func TestRenewalMovesLeaseOnlyForLiveOwnedSessions(t *testing.T) {
	tb := NewTable(nil)
	meta := &fakeMeta{t: tb}
	now := time.Unix(1000, 0)
	m := newTestManager(tb, meta, func() time.Time { return now })
	defer m.Stop()
	ctx := context.Background()
	for id := int64(1); id <= 3; id++ {
		meta.Propose(ctx, EncodeCreate(Entry{ID: id, Passwd: []byte{1}, Timeout: 6000, Owner: 1}))
		m.setHeard(id, now)
	}
	meta.Propose(ctx, EncodeCreate(Entry{ID: 4, Passwd: []byte{1}, Timeout: 6000, Owner: 1}))
	meta.Propose(ctx, EncodeTakeOver(2, now.UnixMilli(), []int64{2}))
	meta.Propose(ctx, EncodeExpire(3, tb.Applied()))
	heardAt := now.Add(time.Second)
	now = heardAt
	for id := int64(1); id <= 4; id++ {
		m.Touch(id, now)
	}
	m.setHeard(4, now.Add(-time.Second))
	m.Forget(4) // its connection ended; a report already holding its activity must not revive the lease
	m.mu.active[4] = heardAt
	_, _, next := m.Heard(1)
	now = now.Add(200 * time.Millisecond)
	m.reportActivity()
	select {
	case <-next:
	default:
		t.Fatal("a confirmed report did not signal waiters")
	}
	if h, ok, _ := m.Heard(1); !ok || !h.Equal(heardAt) {
		t.Fatalf("session 1: %v %v, want %v", h, ok, heardAt)
	}
	for _, id := range []int64{2, 3, 4} {
		if _, ok, _ := m.Heard(id); ok {
			t.Fatalf("session %d keeps a lease after moving away, expiring or its connection ending", id)
		}
	}
	// HeardAll (the watchdog's one lock for every session) answers as Heard does.
	ids := []int64{1, 2, 3, 4, 5}
	at := make([]time.Time, len(ids))
	m.HeardAll(ids, at)
	for i, id := range ids {
		if h, ok, _ := m.Heard(id); !at[i].Equal(h) || at[i].IsZero() == ok {
			t.Errorf("HeardAll: session %d at %v, Heard says %v %v", id, at[i], h, ok)
		}
	}
}

// TestCloseFencesUnlessItsConnectionIsTheLatestOwner: a client's close ends the session on the
// data shards in one round only when the closing connection's epoch is the latest owner's in
// the table with the close applied; an older owner's close, a connection without an epoch, a
// session the table learned from a snapshot, and an expiry all take the fence round first. The
// shards the session wrote to (Written) reach the one round, never the fenced close (which goes
// to every shard).
func TestCloseFencesUnlessItsConnectionIsTheLatestOwner(t *testing.T) {
	tb := NewTable(nil)
	meta := &fakeMeta{t: tb}
	m := newTestManager(tb, meta, time.Now)
	defer m.Stop()
	fenced := map[int64]bool{}
	scopes := map[int64]Written{}
	m.o.CloseOnShards = func(_ context.Context, id int64, fence bool, _ uint64, w Written) error {
		fenced[id], scopes[id] = fence, w
		return nil
	}
	written := Written{Complete: true, Shards: []uint64{3}, Gen: 7}
	ctx := context.Background()
	for id := int64(1); id <= 5; id++ {
		meta.Propose(ctx, EncodeCreate(Entry{ID: id, Passwd: []byte{1}, Timeout: 6000, Owner: 1}))
	}
	if e, ok := tb.OwnerEpoch(1); !ok || e != CreatedEpoch {
		t.Fatalf("epoch of a created session: %d %v", e, ok)
	}
	e3, err := m.TakeOver(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := tb.OwnerEpoch(3); !ok || e != e3 {
		t.Fatalf("epoch after a take-over: %d %v, want %d", e, ok, e3)
	}
	for _, c := range []struct {
		id    int64
		epoch uint64
		fence bool
	}{
		{1, CreatedEpoch, false}, // the creating connection, never taken over
		{2, 0, true},             // no epoch (format level 1)
		{3, CreatedEpoch, true},  // the creating connection after a take-over by another
		{4, e3, true},            // an epoch that is not this session's
	} {
		if err := m.Close(ctx, c.id, c.epoch, written); err != nil {
			t.Fatal(err)
		}
		if fenced[c.id] != c.fence {
			t.Errorf("close of %d with epoch %d: fence %v, want %v", c.id, c.epoch, fenced[c.id], c.fence)
		}
		if got := scopes[c.id]; c.fence && got.Complete || !c.fence && !reflect.DeepEqual(got, written) {
			t.Errorf("close of %d with epoch %d (fence %v): shards %+v", c.id, c.epoch, c.fence, got)
		}
		waitCleaned(t, tb, c.id)
		if _, ok := tb.OwnerEpoch(c.id); ok {
			t.Errorf("epoch of cleaned session %d still known", c.id)
		}
	}
	// The latest owner's close after the take-over: one round.
	if e5, err := m.TakeOver(ctx, 5); err != nil {
		t.Fatal(err)
	} else if err := m.Close(ctx, 5, e5, Written{}); err != nil || fenced[5] {
		t.Errorf("latest owner's close: fence %v, %v", fenced[5], err)
	}
	// A table loaded from a snapshot knows no epochs.
	meta.Propose(ctx, EncodeCreate(Entry{ID: 6, Passwd: []byte{1}, Timeout: 6000, Owner: 1}))
	var snap bytes.Buffer
	if err := tb.SaveSnapshot(&snap, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := tb.RecoverFromSnapshot(&snap, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx, 6, CreatedEpoch, Written{}); err != nil || !fenced[6] {
		t.Errorf("close after a snapshot load: fence %v, %v", fenced[6], err)
	}
}

// gatedMeta holds a close command until the current gate is closed.
type gatedMeta struct {
	*fakeMeta
	gate func() <-chan struct{}
}

func (g gatedMeta) Propose(ctx context.Context, cmd []byte) (uint64, error) {
	if cmd[0] == cmdClose {
		select {
		case <-g.gate():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return g.fakeMeta.Propose(ctx, cmd)
}

// TestCloseOwnedRunsTheShardsWithTheMetaClose: from format level 7 a connection with an
// ownership epoch closes the data shards (ops conditional on that epoch) while its meta close
// is still uncommitted; when the table then names another owner, or a shard refused the
// conditional close, the fenced rounds follow on every shard; another failure of the shards'
// round is returned.
func TestCloseOwnedRunsTheShardsWithTheMetaClose(t *testing.T) {
	tb := NewTable(nil)
	meta := &fakeMeta{t: tb}
	m := newTestManager(tb, meta, time.Now)
	defer m.Stop()
	ctx := context.Background()
	meta.Propose(ctx, EncodeSetLevel(format.LevelCloseOwner))
	for id := int64(1); id <= 4; id++ {
		meta.Propose(ctx, EncodeCreate(Entry{ID: id, Passwd: []byte{1}, Timeout: 6000, Owner: 1}))
	}
	if _, err := m.TakeOver(ctx, 2); err != nil {
		t.Fatal(err)
	}
	type call struct {
		fence bool
		owner uint64
	}
	var mu sync.Mutex
	calls := map[int64][]call{}
	refuse := map[int64]error{3: ErrMovedAway, 4: errors.New("shard unavailable")}
	// Set once: the manager's background goroutines (recordCleaned) read them while the
	// cases run; each case gets a new gate.
	var gate chan struct{}
	m.o.Meta = gatedMeta{meta, func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return gate }}
	m.o.CloseOnShards = func(_ context.Context, id int64, fence bool, owner uint64, w Written) error {
		mu.Lock()
		calls[id] = append(calls[id], call{fence, owner})
		g := gate
		mu.Unlock()
		if !fence {
			close(g) // the meta close waits for this: the two run at the same time
			return refuse[id]
		}
		return nil
	}
	for _, c := range []struct {
		id      int64
		want    []call
		wantErr bool
	}{
		{1, []call{{false, CreatedEpoch}}, false},            // the latest owner: one round
		{2, []call{{false, CreatedEpoch}, {true, 0}}, false}, // taken over meanwhile: fenced after
		{3, []call{{false, CreatedEpoch}, {true, 0}}, false}, // a shard refused: fenced after
		{4, []call{{false, CreatedEpoch}}, true},             // the round failed: the error
	} {
		mu.Lock()
		gate = make(chan struct{})
		mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := m.Close(cctx, c.id, CreatedEpoch, Written{Complete: true, Shards: []uint64{3}})
		cancel()
		if (err != nil) != c.wantErr {
			t.Fatalf("close of %d: %v, want an error %v", c.id, err, c.wantErr)
		}
		mu.Lock()
		got := calls[c.id]
		mu.Unlock()
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("close of %d: shard rounds %+v, want %+v", c.id, got, c.want)
		}
		if e, ok := tb.Get(c.id); ok && !e.Closing {
			t.Errorf("session %d not closed in the table", c.id)
		}
	}
}

// waitCleaned waits until the session's cleaned record, which a close makes in the background,
// removed it from the table.
func waitCleaned(t *testing.T, tb *Table, id int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, ok := tb.Get(id); !ok {
			return
		}
	}
	t.Fatalf("session %d still in the table 5 s after its close", id)
}

// TestCloseRepliesBeforeTheCleanedRecord: a client's close returns once the session is closed
// on the meta shard and on the data shards; the record that its cleanup is done follows in the
// background (the session stays in the table, closing, until it lands), and Stop ends a record
// still pending.
func TestCloseRepliesBeforeTheCleanedRecord(t *testing.T) {
	tb := NewTable(nil)
	meta := &fakeMeta{t: tb, holdCleaned: make(chan struct{})}
	m := newTestManager(tb, meta, time.Now)
	var onShards []int64
	m.o.CloseOnShards = func(_ context.Context, id int64, _ bool, _ uint64, _ Written) error {
		onShards = append(onShards, id)
		return nil
	}
	ctx := context.Background()
	for id := int64(1); id <= 2; id++ {
		meta.Propose(ctx, EncodeCreate(Entry{ID: id, Passwd: []byte{1}, Timeout: 6000, Owner: 1}))
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close(ctx, 1, CreatedEpoch, Written{}) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the cleaned record")
	}
	if len(onShards) != 1 || onShards[0] != 1 {
		t.Fatalf("close returned before its data shards' round: %v", onShards)
	}
	if e, ok := tb.Get(1); !ok || !e.Closing {
		t.Fatalf("session 1 after its close, before the cleaned record: %+v %v, want closing", e, ok)
	}
	close(meta.holdCleaned)
	waitCleaned(t, tb, 1)

	meta.holdCleaned = make(chan struct{}) // never released: Stop must end the pending record
	if err := m.Close(ctx, 2, CreatedEpoch, Written{}); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { m.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not end a pending cleaned record")
	}
	if e, ok := tb.Get(2); !ok || !e.Closing {
		t.Fatalf("session 2 with its cleaned record never made: %+v %v, want closing (the meta leader cleans it up)", e, ok)
	}
}

// TestLeaderLeavesAClosingSessionToItsServer: the meta shard's leader does not clean up a
// session another server is closing (closed on the meta shard, its cleaned record not yet
// made) until it has been closing for closingGrace by the leader's clock; then it cleans it up
// with the fence round and records it cleaned. A session the leader expires is cleaned at once.
func TestLeaderLeavesAClosingSessionToItsServer(t *testing.T) {
	tb := NewTable(nil)
	meta := &fakeMeta{t: tb}
	now := time.Unix(1000, 0)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	tb.now = clock
	m := newTestManager(tb, meta, clock)
	defer m.Stop()
	var mu sync.Mutex
	cleaned := map[int64]bool{} // session -> fenced
	m.o.CloseOnShards = func(_ context.Context, id int64, fence bool, _ uint64, _ Written) error {
		mu.Lock()
		cleaned[id] = fence
		mu.Unlock()
		return nil
	}
	ctx := context.Background()
	meta.Propose(ctx, EncodeCreate(Entry{ID: 1, Passwd: []byte{1}, Timeout: 60_000, Owner: 2, LastSeen: now.UnixMilli()}))
	meta.Propose(ctx, EncodeClose(1, now.UnixMilli(), false)) // server 2 is closing it
	meta.leader = true
	for _, d := range []time.Duration{0, time.Second, closingGrace - time.Second - time.Millisecond} {
		advance(d)
		m.leaderDuties()
		m.wg.Wait()
		mu.Lock()
		_, done := cleaned[1]
		mu.Unlock()
		if done {
			t.Fatalf("the leader cleaned up a session closing for less than %v", closingGrace)
		}
	}
	advance(time.Millisecond)
	m.leaderDuties()
	m.wg.Wait()
	mu.Lock()
	fence, done := cleaned[1]
	mu.Unlock()
	if !done || !fence {
		t.Fatalf("after %v closing: cleaned %v, fenced %v; want a fenced cleanup", closingGrace, done, fence)
	}
	if _, ok := tb.Get(1); ok {
		t.Fatal("the leader's cleanup did not record the session cleaned")
	}
	if len(m.closingSeen) != 0 {
		m.leaderDuties()
		if len(m.closingSeen) != 0 {
			t.Fatalf("the leader still remembers %d closing sessions after they were cleaned", len(m.closingSeen))
		}
	}

	// Expired by the leader: cleaned at once.
	meta.Propose(ctx, EncodeCreate(Entry{ID: 2, Passwd: []byte{1}, Timeout: 2000, Owner: 2, LastSeen: now.UnixMilli()}))
	advance(time.Minute)
	m.leaderDuties()
	m.wg.Wait()
	mu.Lock()
	fence, done = cleaned[2]
	mu.Unlock()
	if !done || !fence {
		t.Fatalf("an expired session: cleaned %v, fenced %v; want a fenced cleanup at once", done, fence)
	}
}
