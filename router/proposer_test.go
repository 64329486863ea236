package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// fakeRaft applies batches to a real shard.State and injects the failures a Raft group can
// produce: a proposal dropped before it is appended, an entry applied but its result lost (the
// proposer sees a timeout), and entries reaching apply out of order.
type fakeRaft struct {
	mu      sync.Mutex
	st      *shard.State
	rng     *rand.Rand
	dropP   float64
	lostP   float64
	delayP  float64
	applied []string // paths created, in apply order
}

func (f *fakeRaft) propose(ctx context.Context, cmd []byte) ([]byte, error) {
	f.mu.Lock()
	r1, r2, r3 := f.rng.Float64(), f.rng.Float64(), f.rng.Float64()
	f.mu.Unlock()
	if r1 < f.dropP {
		return nil, fmt.Errorf("%w: dropped", ErrRetryable)
	}
	if r3 < f.delayP {
		time.Sleep(time.Millisecond) // lets later batches overtake this one
	}
	b, err := shard.DecodeBatch(cmd)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	res, _ := f.st.Apply(&b)
	if res.Status == shard.BatchApplied {
		for i, op := range b.Ops {
			if res.Results[i].Err == wire.ErrOK {
				var cr wire.CreateRequest
				cr.Decode(wire.NewDecoder(op.Body))
				f.applied = append(f.applied, cr.Path)
			}
		}
	}
	f.mu.Unlock()
	if r2 < f.lostP {
		return nil, errors.New("timeout") // applied, but the proposer does not know
	}
	return res.AppendTo(nil), nil
}

func createOp(path string) shard.Op {
	e := wire.NewEncoder(nil)
	(&wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe}).Encode(e)
	return shard.Op{Session: 1, Code: wire.OpCreate, Body: e.Bytes()}
}

// TestProposerExactlyOnceInOrder: under drops, lost results and reordering, every request is
// applied exactly once, in submission order, and completes with its own result.
func TestProposerExactlyOnceInOrder(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		f := &fakeRaft{st: shard.NewState(shard.StateConfig{Tag: 1, OwnsRoot: true}), rng: rand.New(rand.NewSource(seed)),
			dropP: 0.2, lostP: 0.1, delayP: 0.3}
		p := NewProposer(2, SyncPropose(f.propose), ProposerOptions{MaxBatchOps: 7, MaxInFlight: 4})
		const n = 400
		var wg sync.WaitGroup
		var mu sync.Mutex
		var unknown int
		for i := 0; i < n; i++ {
			wg.Add(1)
			path := fmt.Sprintf("/n%04d", i)
			p.Submit(&Request{Op: createOp(path), Done: func(res shard.OpResult, err error) {
				defer wg.Done()
				if errors.Is(err, ErrOutcomeUnknown) {
					mu.Lock()
					unknown++
					mu.Unlock()
					return
				}
				if err != nil || res.Err != wire.ErrOK {
					t.Errorf("seed %d: %s: %v %v", seed, path, res.Err, err)
				}
			}})
		}
		wg.Wait()
		p.Stop()
		if len(f.applied) != n {
			t.Fatalf("seed %d: applied %d creates, want %d", seed, len(f.applied), n)
		}
		for i, path := range f.applied {
			if want := fmt.Sprintf("/n%04d", i); path != want {
				t.Fatalf("seed %d: apply #%d is %s, want %s (submission order broken)", seed, i, path, want)
			}
		}
		if unknown > 0 {
			t.Fatalf("seed %d: %d requests reported unknown outcomes although results were cached", seed, unknown)
		}
	}
}

func TestProposerStopFailsQueued(t *testing.T) {
	block := make(chan struct{})
	p := NewProposer(2, SyncPropose(func(ctx context.Context, cmd []byte) ([]byte, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil, ErrStopped
	}), ProposerOptions{})
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		p.Submit(&Request{Op: createOp("/x"), Done: func(_ shard.OpResult, err error) { errs <- err }})
	}
	p.Stop()
	for i := 0; i < 3; i++ {
		if err := <-errs; !errors.Is(err, ErrStopped) {
			t.Fatalf("got %v, want ErrStopped", err)
		}
	}
	p.Submit(&Request{Op: createOp("/y"), Done: func(_ shard.OpResult, err error) { errs <- err }})
	if err := <-errs; !errors.Is(err, ErrStopped) {
		t.Fatalf("after stop: %v", err)
	}
	close(block)
}

func TestLookupLongestMount(t *testing.T) {
	r := New([]uint64{2, 3, 4}, []uint8{1, 2, 3}, PlaceSingle, nil)
	r.SetMounts([]Mount{{Path: "/", ShardID: 2}, {Path: "/kafka", ShardID: 3}, {Path: "/kafka/brokers", ShardID: 4}})
	for _, tc := range []struct {
		path string
		want uint64
	}{{"/", 2}, {"/kafka", 3}, {"/kafka/x", 3}, {"/kafkaesque", 2}, {"/kafka/brokers", 4}, {"/kafka/brokers/1", 4}, {"/zookeeper", 2}} {
		if got := r.Lookup(tc.path).ID; got != tc.want {
			t.Errorf("Lookup(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
}

// TestLastZxidIgnoresUnmountedShards: a shard that serves no subtree does not raise the zxid
// put in reply headers.
func TestLastZxidIgnoresUnmountedShards(t *testing.T) {
	r := New([]uint64{2, 3}, []uint8{1, 2}, PlaceSingle, nil)
	mk := func(tag uint8, now int64) *shard.View {
		st := shard.NewState(shard.StateConfig{Tag: tag, OwnsRoot: tag == 1})
		st.Apply(&shard.Batch{Proposer: 1, Seq: 1, Time: now, Ops: []shard.Op{createOp("/x")}})
		return st.View(uint64(tag) + 1)
	}
	mounted, unmounted := mk(1, 1000), mk(2, 5000)
	r.Applied(3, unmounted, nil)
	if z := r.LastZxid(); z != 0 {
		t.Fatalf("LastZxid = %x after an unmounted shard applied, want 0", z)
	}
	r.Applied(2, mounted, nil)
	if z := r.LastZxid(); z != mounted.Zxid() || z == 0 {
		t.Fatalf("LastZxid = %x, want %x", z, mounted.Zxid())
	}
	if unmounted.Zxid() <= mounted.Zxid() {
		t.Fatal("test setup: the unmounted shard should be ahead")
	}
}

// TestProposerHold: a hold cuts no batch, waits for the batches in flight to settle, and lets
// the queued requests go on release; a hold whose context ends first reports it did not drain.
func TestProposerHold(t *testing.T) {
	st := shard.NewState(shard.StateConfig{Tag: 1, OwnsRoot: true})
	gate := make(chan struct{})
	var mu sync.Mutex
	var proposals int
	propose := func(ctx context.Context, cmd []byte) ([]byte, error) {
		mu.Lock()
		proposals++
		mu.Unlock()
		<-gate
		b, err := shard.DecodeBatch(cmd)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		res, _ := st.Apply(&b)
		return res.AppendTo(nil), nil
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return proposals }
	p := NewProposer(2, SyncPropose(propose), ProposerOptions{})
	defer p.Stop()
	done := make(chan error, 2)
	submit := func(path string) {
		p.Submit(&Request{Op: createOp(path), Done: func(_ shard.OpResult, err error) { done <- err }})
	}
	submit("/a")
	for count() < 1 {
		time.Sleep(time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	release, drained := p.Hold(ctx)
	cancel()
	if drained {
		t.Fatal("Hold drained while a batch was still in flight")
	}
	release()

	type held struct {
		release func()
		drained bool
	}
	hc := make(chan held, 1)
	go func() {
		r, d := p.Hold(context.Background())
		hc <- held{r, d}
	}()
	time.Sleep(10 * time.Millisecond)
	submit("/b") // queued behind the hold
	select {
	case <-hc:
		t.Fatal("Hold returned while a batch was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	h := <-hc
	if !h.drained {
		t.Fatal("Hold did not drain after the batch in flight settled")
	}
	if err := <-done; err != nil {
		t.Fatalf("first request: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := count(); n != 1 || p.Proposed() != 1 {
		t.Fatalf("while held: %d proposals, Proposed %d; want 1 and 1", n, p.Proposed())
	}
	h.release()
	if err := <-done; err != nil {
		t.Fatalf("request queued during the hold: %v", err)
	}
	if n := count(); n != 2 || p.Proposed() != 2 {
		t.Fatalf("after release: %d proposals, Proposed %d; want 2 and 2", n, p.Proposed())
	}
}
