package router

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/shard"
)

// readFixture is a router over two shards whose local replicas lag: each shard has committed
// batches this server has not applied yet, which a catch-up round (the sync function) applies
// and publishes, as a ReadIndex round followed by the apply of the entries it waited for would.
// "/" lives on shard 2, "/b" on shard 3.
type readFixture struct {
	r      *Router
	mu     sync.Mutex
	states map[uint64]*shard.State
	behind map[uint64][]*shard.Batch // committed, not applied here
	rounds map[uint64]int
	seq    map[uint64]uint64                    // the last batch seq of each shard's proposer 1
	fail   error                                // a round's result when not nil
	onSync func(ctx context.Context, id uint64) // called at the start of a round
}

func newReadFixture(t *testing.T) *readFixture {
	f := &readFixture{
		r:      New([]uint64{2, 3}, []uint8{1, 2}, PlaceSingle, nil),
		states: map[uint64]*shard.State{2: shard.NewState(shard.StateConfig{Tag: 1, OwnsRoot: true, Root: "/"}), 3: shard.NewState(shard.StateConfig{Tag: 2, OwnsRoot: true})}, // a tree with "/" to create "/b" in
		behind: map[uint64][]*shard.Batch{}, rounds: map[uint64]int{}, seq: map[uint64]uint64{},
	}
	f.r.SetMounts([]Mount{{Path: "/", ShardID: 2}, {Path: "/b", ShardID: 3}})
	f.r.SetSync(func(ctx context.Context, id uint64) error {
		f.mu.Lock()
		f.rounds[id]++
		hook, fail := f.onSync, f.fail
		f.mu.Unlock()
		if hook != nil {
			hook(ctx, id)
		}
		if fail != nil {
			return fail
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, b := range f.behind[id] {
			f.apply(t, id, b)
		}
		f.behind[id] = nil
		return nil
	})
	f.write(t, 2, 1000, "/x", true)
	f.write(t, 3, 1000, "/b", true)
	return f
}

// write creates path on shard id with a batch of time ms; applied here at once or only
// committed (applied by the next catch-up round of the shard). A shard's batches apply in the
// order they are written, so a test does not write an applied batch after a committed one.
func (f *readFixture) write(t *testing.T, id uint64, ms int64, path string, applied bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq[id]++
	b := &shard.Batch{Proposer: 1, Seq: f.seq[id], Time: ms, Ops: []shard.Op{createOp(path)}}
	if applied {
		f.apply(t, id, b)
		return
	}
	f.behind[id] = append(f.behind[id], b)
}

func (f *readFixture) apply(t *testing.T, id uint64, b *shard.Batch) {
	res, events := f.states[id].Apply(b)
	if len(res.Results) != 1 || res.Results[0].Err != 0 {
		t.Fatalf("shard %d: batch %d did not apply cleanly: %+v", id, b.Seq, res)
	}
	f.r.Applied(id, f.states[id].View(id), events)
}

func (f *readFixture) roundsOf(id uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rounds[id]
}

// zxidAt is the zxid a write of shard 2 at ms would have: what a session saw there.
func zxidAt(ms int64) int64 { return ms<<12<<8 | 1 }

// TestReadRules checks what testdata/reads.txt does not show of router/read.go, with the local
// replicas lagging: the returned view, the errors of an unserved path and of a failed catch-up,
// the catch-up limit, and
// the registration lock a registered read holds until its caller unlocks.
func TestReadRules(t *testing.T) {
	bound := func(seen int64) ReadBound { return ReadBound{Seen: seen, Timeout: 10 * time.Second} }
	exists := func(path string, found *bool) func(*Shard, *shard.View) {
		return func(_ *Shard, v *shard.View) { _, *found = v.Get(path) }
	}

	t.Run("the returned view is the one read", func(t *testing.T) {
		f := newReadFixture(t)
		f.write(t, 3, 2000, "/b/y", false)
		var read *shard.View
		_, v, err := f.r.Read("/b/y", bound(zxidAt(3000)), func(_ *Shard, v *shard.View) { read = v })
		if err != nil || v != read || v != f.r.Shard(3).View() {
			t.Fatalf("returned %p, read %p, published %p (err %v)", v, read, f.r.Shard(3).View(), err)
		}
	})
	t.Run("a path no shard serves is an error, not a read", func(t *testing.T) {
		r := New([]uint64{2}, []uint8{1}, PlaceSingle, nil)
		r.SetMounts(nil) // not even "/": no shard serves anything
		read := func(*Shard, *shard.View) { t.Error("read ran without a shard") }
		if _, _, err := r.Read("/a", bound(0), read); !errors.Is(err, ErrNoShard) {
			t.Fatalf("Read: %v, want ErrNoShard", err)
		}
		if _, _, _, err := r.ReadRegistered("/a", bound(0), read); !errors.Is(err, ErrNoShard) {
			t.Fatalf("ReadRegistered: %v, want ErrNoShard", err)
		}
	})
	t.Run("a failed catch-up names its shard", func(t *testing.T) {
		f := newReadFixture(t)
		f.write(t, 3, 2000, "/b/y", false)
		f.fail = errors.New("no quorum")
		_, _, err := f.r.Read("/b/y", bound(zxidAt(3000)), func(*Shard, *shard.View) { t.Error("read ran after a failed catch-up") })
		var cu *CatchUpError
		if !errors.As(err, &cu) || cu.Shard.ID != 3 || !errors.Is(err, f.fail) {
			t.Fatalf("err %v, want a CatchUpError of shard 3 with the round's error", err)
		}
	})
	t.Run("a catch-up waits no longer than its limit", func(t *testing.T) {
		f := newReadFixture(t)
		f.write(t, 3, 2000, "/b/y", false)
		release := make(chan struct{})
		defer close(release)
		f.onSync = func(context.Context, uint64) { <-release } // a replica cut off: the round hangs
		b := bound(zxidAt(3000))
		b.Limit = limitFunc(func(sh *Shard) time.Duration {
			if sh.ID == 3 {
				return 50 * time.Millisecond
			}
			return 0
		})
		start := time.Now()
		_, _, err := f.r.Read("/b/y", b, func(*Shard, *shard.View) { t.Error("read ran after a failed catch-up") })
		var cu *CatchUpError
		if !errors.As(err, &cu) || cu.Shard.ID != 3 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want shard 3's catch-up to time out", err)
		}
		if waited := time.Since(start); waited > 5*time.Second {
			t.Fatalf("waited %v for a hanging round with a 50 ms limit and a 10 s timeout", waited)
		}
	})
	t.Run("a registered read holds the registration lock until unlock", func(t *testing.T) {
		f := newReadFixture(t)
		var found bool
		_, _, unlock, err := f.r.ReadRegistered("/b", bound(0), exists("/b", &found))
		if err != nil || !found {
			t.Fatalf("found %v, err %v", found, err)
		}
		published := make(chan struct{})
		go func() {
			f.write(t, 3, 3000, "/b/later", true) // publishes under the registration lock
			close(published)
		}()
		select {
		case <-published:
			t.Fatal("a change was published while a registered read held the lock")
		case <-time.After(50 * time.Millisecond):
		}
		unlock()
		<-published
	})
}

type limitFunc func(sh *Shard) time.Duration

func (f limitFunc) CatchUpLimit(sh *Shard) time.Duration { return f(sh) }
