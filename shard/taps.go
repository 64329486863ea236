package shard

import "sync"

// Taps lets the server that proposed a batch read this replica's state right after one of the
// batch's ops, before any later batch is applied: a read a client pipelined behind its own
// write is answered from the state just after that write, while the client's next writes are
// already proposed (docs/design.md §8, "Reads parked behind writes").
//
// The proposer registers every batch it cuts (Register) before it proposes it, and drops it
// once the batch settled (Settled). Any goroutine may ask for a view after op i of a registered
// batch (Tap). The replica's apply goroutine (replica.Machine.Update) reports each batch it
// applies (BeginUpdate, then Apply) and each view it publishes (PublishedView). A tap is answered exactly once, with:
//   - the view right after op i, taken on the apply goroutine, when the tap came before the
//     batch was applied;
//   - the view published at the end of the Update that applied the batch, when the tap came
//     while that Update was running;
//   - the last published view, when the batch had been applied and published already;
//   - nil, when the batch settled without this replica applying it (its outcome came from
//     elsewhere: a duplicate after a snapshot, an error): the reader cannot be answered in order.
//
// Invariant: the view a tap gets holds op i of the batch and no batch that was proposed after
// the tap was asked for. (Before the apply: the view is taken between op i and op i+1. During
// the Update: its entries were fixed before it started, which was before the tap. After: later
// proposals are not applied yet, or were proposed before the tap.) So a reader that taps its
// session's latest write before the session proposes anything else sees that write and none of
// the session's later ones.
//
// Taps are per replica and local: nothing about them is replicated or affects apply.
type Taps struct {
	mu        sync.Mutex
	batches   map[tapKey]*tapBatch
	update    uint64 // Updates begun
	published uint64 // Updates whose view is published
	last      *View  // the last published view
	atPublish []func(*View)
}

type tapKey struct{ proposer, seq uint64 }

type tapBatch struct {
	applied uint64 // the Update that applied the batch; 0: not applied here yet
	taps    map[int][]func(*View)
}

// NewTaps returns an empty registry, for one shard's replica and its proposer on one server.
func NewTaps() *Taps { return &Taps{batches: make(map[tapKey]*tapBatch)} }

// Register records a batch about to be proposed; taps may then be asked for its ops.
func (t *Taps) Register(proposer, seq uint64) {
	t.mu.Lock()
	t.batches[tapKey{proposer, seq}] = &tapBatch{}
	t.mu.Unlock()
}

// Tap asks for a view after op i of batch (proposer, seq); fn gets it, possibly before Tap
// returns, on this goroutine or the apply goroutine, never under a lock of Taps. fn must not
// block. Tap returns false (and never calls fn) when the batch is not registered: it settled.
func (t *Taps) Tap(proposer, seq uint64, i int, fn func(*View)) bool {
	t.mu.Lock()
	b := t.batches[tapKey{proposer, seq}]
	switch {
	case b == nil:
		t.mu.Unlock()
		return false
	case b.applied == 0:
		if b.taps == nil {
			b.taps = make(map[int][]func(*View))
		}
		b.taps[i] = append(b.taps[i], fn)
		t.mu.Unlock()
	case b.applied > t.published:
		t.atPublish = append(t.atPublish, fn)
		t.mu.Unlock()
	default:
		v := t.last
		t.mu.Unlock()
		fn(v)
	}
	return true
}

// Settled drops a batch once its proposer has its outcome; taps still waiting get nil.
func (t *Taps) Settled(proposer, seq uint64) {
	t.mu.Lock()
	k := tapKey{proposer, seq}
	b := t.batches[k]
	delete(t.batches, k)
	t.mu.Unlock()
	if b == nil {
		return
	}
	for _, fns := range b.taps {
		for _, fn := range fns {
			fn(nil)
		}
	}
}

// BeginUpdate is called by the apply goroutine before an Update applies its entries.
func (t *Taps) BeginUpdate() {
	t.mu.Lock()
	t.update++
	t.mu.Unlock()
}

// applying is called by the apply goroutine before it applies batch (proposer, seq) with status
// BatchApplied. It returns the function to call after each op, with ok false when the op did
// not take effect in this state (a write sent back to another shard); nil when no tap waits
// for the batch. The batch counts as applied from now on: a tap asked for from here on is
// answered at the Update's publish; the returned function answers the taps asked for before.
func (t *Taps) applying(proposer, seq uint64, view func() *View) func(i int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.batches[tapKey{proposer, seq}]
	if b == nil || b.applied != 0 {
		return nil
	}
	b.applied = t.update
	taps := b.taps
	b.taps = nil
	if len(taps) == 0 {
		return nil
	}
	return func(i int, ok bool) {
		fns := taps[i]
		if len(fns) == 0 {
			return
		}
		var v *View
		if ok {
			v = view()
		}
		for _, fn := range fns {
			fn(v)
		}
	}
}

// PublishedView is called by the apply goroutine with the view it publishes at the end of an
// Update (and after Open and snapshot recovery).
func (t *Taps) PublishedView(v *View) {
	t.mu.Lock()
	t.published = t.update
	t.last = v
	fns := t.atPublish
	t.atPublish = nil
	t.mu.Unlock()
	for _, fn := range fns {
		fn(v)
	}
}
