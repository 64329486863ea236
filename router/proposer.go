package router

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral/corral/shard"
)

// ProposeFunc hands one encoded batch to a shard's Raft group without waiting for it, and
// returns a function that waits until this server has applied it and returns the entry's result
// bytes. The proposer calls ProposeFunc in batch order from one goroutine, so batches enter the
// Raft log in that order unless one is dropped; it calls the returned wait function from
// another goroutine. Failures (from either) are classified:
//   - ErrRetryable (wrapped): the entry was certainly not appended (no leader, busy, dropped);
//   - ErrStopped (wrapped): the shard or server is closing;
//   - any other error: the outcome is unknown (e.g. a timeout), re-proposing the same batch is
//     safe because the shard deduplicates it.
type ProposeFunc func(ctx context.Context, cmd []byte) (wait func() ([]byte, error), err error)

// SyncPropose adapts a blocking propose-and-wait function to ProposeFunc (tests, simple shards).
func SyncPropose(f func(ctx context.Context, cmd []byte) ([]byte, error)) ProposeFunc {
	return func(ctx context.Context, cmd []byte) (func() ([]byte, error), error) {
		return func() ([]byte, error) { return f(ctx, cmd) }, nil
	}
}

// errLeaderChanged is what a wait returns when LeaderChanged cancelled its epoch (the
// ProposeFunc's wait returns the context's error, wrapped or not).
var errLeaderChanged = context.Canceled

// ErrRetryable marks a proposal failure after which the batch was certainly not applied.
var ErrRetryable = errors.New("router: retryable proposal failure")

// Request is one operation submitted to a Proposer. Done is called exactly once, from a
// proposer goroutine; it must not block.
type Request struct {
	Op   shard.Op
	Done func(res shard.OpResult, err error)

	// Where the request went (guarded by the proposer's mu): taps asked for while it is
	// queued, then its batch and index once cut; settled once Done is due.
	taps    []func(*shard.View)
	seq     uint64
	batchID uint64
	index   int
	queued  bool
	settled bool
}

// ProposerOptions tune batching and pipelining.
type ProposerOptions struct {
	MaxBatchOps   int           // ops per Raft entry (default 512)
	MaxBatchBytes int           // encoded bytes per Raft entry (default 1 MiB)
	MaxInFlight   int           // batches proposed and not yet applied (default 32)
	IdleReset     time.Duration // a proposer idle this long takes a new id (default 1h)
	Log           *slog.Logger
	Now           func() time.Time
	Metrics       *Metrics
	// Control marks every batch as a control batch (cross-shard transaction steps), which a
	// shard applies even while a prepared transaction blocks it.
	Control bool
	// Quota, if set, gives each batch's Quota (shard.Batch.Quota) when the batch is cut.
	Quota func() shard.QuotaMode
	// Taps, if set, is this server's registry of views between the ops of the proposed
	// batches (shard.Taps), shared with its replica of the shard; Tap needs it.
	Taps *shard.Taps
}

func (o *ProposerOptions) fill() {
	if o.MaxBatchOps <= 0 {
		o.MaxBatchOps = 512
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = 1 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 32
	}
	if o.IdleReset <= 0 {
		o.IdleReset = time.Hour
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
}

// Proposer batches requests for one shard into Raft entries and pipelines up to MaxInFlight of
// them. Requests submitted earlier are applied no later than requests submitted after them.
type Proposer struct {
	shardID uint64
	propose ProposeFunc
	opts    ProposerOptions

	mu struct {
		sync.Mutex
		queue    []*Request
		bytes    int
		inFlight []*inflight // proposed and not yet settled, in seq order
		stopped  bool
		id       uint64
		seq      uint64
		lastUsed time.Time
		// epoch is the context proposals are made under; LeaderChanged cancels it so that
		// waits on proposals a dead leader may have lost end at once and are re-proposed.
		epoch     context.Context
		cancel    context.CancelFunc
		repropose bool // LeaderChanged asked the loop to propose the in-flight batches again
		// held counts Hold calls not yet released: while it is positive no batch is cut.
		held int
		// drained, while a Hold waits for the batches in flight, is closed when none is left.
		drained chan struct{}
	}
	proposed atomic.Uint64 // batches cut (each counted once, however often it is proposed)
	wake     chan struct{}
	obs      proposerObservers
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// NewProposer starts a proposer for shardID. Stop it with Stop.
func NewProposer(shardID uint64, propose ProposeFunc, opts ProposerOptions) *Proposer {
	opts.fill()
	p := &Proposer{shardID: shardID, propose: propose, opts: opts, wake: make(chan struct{}, 1)}
	label := strconv.FormatUint(shardID, 10)
	if opts.Control {
		label += "-control"
	}
	p.obs = proposerObservers{
		batchOps:   opts.Metrics.batchOps.WithLabelValues(label),
		latency:    opts.Metrics.latency.WithLabelValues(label),
		retryable:  opts.Metrics.retries.WithLabelValues(label, "retryable"),
		unknown:    opts.Metrics.retries.WithLabelValues(label, "unknown"),
		outOfOrder: opts.Metrics.retries.WithLabelValues(label, "out_of_order"),
		blocked:    opts.Metrics.retries.WithLabelValues(label, "blocked"),
		queue:      opts.Metrics.queueDepth.WithLabelValues(label),
	}
	p.ctx, p.stop = context.WithCancel(context.Background())
	p.mu.id = newProposerID()
	p.mu.epoch, p.mu.cancel = context.WithCancel(p.ctx)
	p.wg.Add(1)
	go p.loop()
	return p
}

func newProposerID() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// Submit queues a request. It never blocks; after Stop, Done is called with ErrStopped.
func (p *Proposer) Submit(r *Request) { p.SubmitAll(r) }

// SubmitAll queues requests in order at once: no batch is cut between them, so they travel in
// one Raft entry unless it would pass MaxBatchOps or MaxBatchBytes. It never blocks; after
// Stop, each Done is called with ErrStopped.
func (p *Proposer) SubmitAll(rs ...*Request) {
	p.mu.Lock()
	if p.mu.stopped {
		p.mu.Unlock()
		for _, r := range rs {
			r.Done(shard.OpResult{}, ErrStopped)
		}
		return
	}
	for _, r := range rs {
		r.queued = true
		p.mu.queue = append(p.mu.queue, r)
		p.mu.bytes += len(r.Op.Body) + 64
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Tap asks for a view of this server's replica right after r applied and before any batch
// proposed after this call (shard.Taps): fn gets it (on some goroutine, possibly before Tap
// returns; it must not block), or nil when r's batch settled without this replica applying it
// (r's Done then follows). Tap returns false, and never calls fn, when r has settled already,
// r was not submitted here, or the proposer has no Taps.
func (p *Proposer) Tap(r *Request, fn func(*shard.View)) bool {
	if p.opts.Taps == nil {
		return false
	}
	p.mu.Lock()
	switch {
	case r.settled || (r.seq == 0 && !r.queued):
		p.mu.Unlock()
		return false
	case r.queued:
		r.taps = append(r.taps, fn)
		p.mu.Unlock()
		return true
	}
	id, seq, i := r.batchID, r.seq, r.index
	p.mu.Unlock()
	// Outside mu (fn may run here). Settled first makes this false.
	return p.opts.Taps.Tap(id, seq, i, fn)
}

// LeaderChanged tells the proposer that the shard's leader changed. Proposals in flight may have
// been lost with the old leader; rather than wait for their timeout, the proposer proposes them
// again (the shard deduplicates them). It does not block.
func (p *Proposer) LeaderChanged() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped {
		return
	}
	p.mu.cancel()
	p.mu.epoch, p.mu.cancel = context.WithCancel(p.ctx)
	p.mu.repropose = true
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Proposed returns how many batches the proposer has cut since it started: what this server
// added to the shard's log, each batch counted once however often it was proposed.
func (p *Proposer) Proposed() uint64 { return p.proposed.Load() }

// Hold stops the proposer from cutting batches (requests queue up meanwhile) and waits until
// no batch of it is in flight: every batch proposed before is settled, which for a batch that
// applied means this server's replica applied it. It returns a release function, which must be
// called exactly once and lets the queued requests go, and whether the proposer drained before
// ctx ended (when not, the proposer is still held until release). Holds nest.
func (p *Proposer) Hold(ctx context.Context) (release func(), drained bool) {
	p.mu.Lock()
	p.mu.held++
	var wait chan struct{}
	if len(p.mu.inFlight) > 0 {
		if p.mu.drained == nil {
			p.mu.drained = make(chan struct{})
		}
		wait = p.mu.drained
	}
	p.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			p.mu.Lock()
			p.mu.held--
			p.mu.Unlock()
			select {
			case p.wake <- struct{}{}:
			default:
			}
		})
	}
	if wait == nil {
		return release, true
	}
	select {
	case <-wait:
		return release, true
	case <-ctx.Done():
		return release, false
	case <-p.ctx.Done():
		return release, false
	}
}

// requestRepropose asks the loop to propose every unsettled batch again (coalesced).
func (p *Proposer) requestRepropose() {
	p.mu.Lock()
	p.mu.repropose = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// errOutOfOrder: the shard refused a batch because an earlier one of this proposer is missing.
var errOutOfOrder = errors.New("router: batch out of order")

// errBlocked: the shard refused a batch while it held a prepared cross-shard transaction.
var errBlocked = errors.New("router: shard blocked by a prepared transaction")

// reproposeInFlight proposes every unsettled batch again, in seq order, so they re-enter the
// new leader's log in order at once (rather than one Raft round after another). Called by the
// loop after LeaderChanged.
func (p *Proposer) reproposeInFlight() {
	p.mu.Lock()
	if !p.mu.repropose {
		p.mu.Unlock()
		return
	}
	p.mu.repropose = false
	batches := append([]*inflight(nil), p.mu.inFlight...)
	ctx := p.mu.epoch
	p.mu.Unlock()
	for _, b := range batches {
		b.install(p.propose(ctx, b.cmd))
	}
}

func (p *Proposer) epoch() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.epoch
}

// Pending returns the number of queued, not yet proposed requests.
func (p *Proposer) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.queue)
}

// Stop fails queued requests with ErrStopped, cancels in-flight proposals and waits for every
// goroutine the proposer started.
func (p *Proposer) Stop() {
	p.mu.Lock()
	p.mu.stopped = true
	q := p.mu.queue
	p.mu.queue = nil
	var taps []func(*shard.View)
	for _, r := range q {
		r.queued, r.settled = false, true
		taps = append(taps, r.taps...)
		r.taps = nil
	}
	p.mu.Unlock()
	p.stop()
	for _, fn := range taps {
		fn(nil)
	}
	for _, r := range q {
		r.Done(shard.OpResult{}, ErrStopped)
	}
	p.wg.Wait()
}

// attempt is one proposal of a batch. When the batch is proposed again in order after a leader
// change, next is closed and the batch's att points at the newer attempt.
type attempt struct {
	wait func() ([]byte, error)
	err  error // immediate failure of the proposal
	next chan struct{}
}

func (b *inflight) install(wait func() ([]byte, error), err error) {
	old := b.att.Swap(&attempt{wait: wait, err: err, next: make(chan struct{})})
	if old != nil {
		close(old.next)
	}
}

type proposerObservers struct {
	batchOps, latency                       prometheus.Observer
	retryable, unknown, outOfOrder, blocked prometheus.Counter
	queue                                   prometheus.Gauge
}

type inflight struct {
	id    uint64 // the proposer id the batch was cut under
	seq   uint64
	cmd   []byte
	att   atomic.Pointer[attempt] // the current proposal of this batch
	reqs  []*Request
	start time.Time
}

func (p *Proposer) loop() {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.wake:
		}
		p.reproposeInFlight()
		for {
			b := p.next()
			if b == nil {
				break
			}
			// Propose here, in batch order, so batches reach the log in seq order; waiting
			// for the outcome happens on the batch's own goroutine.
			b.install(p.propose(p.epoch(), b.cmd))
			p.wg.Add(1)
			go p.run(b)
		}
	}
}

// next cuts the next batch from the queue, or returns nil when the queue is empty or the
// pipeline is full (a settling batch wakes the loop again).
func (p *Proposer) next() *inflight {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped || p.mu.held > 0 || len(p.mu.queue) == 0 || len(p.mu.inFlight) >= p.opts.MaxInFlight {
		return nil
	}
	now := p.opts.Now()
	if len(p.mu.inFlight) == 0 && !p.mu.lastUsed.IsZero() && now.Sub(p.mu.lastUsed) > p.opts.IdleReset {
		// The shard forgets idle proposers; start over under a new id before it does.
		p.mu.id, p.mu.seq = newProposerID(), 0
	}
	p.mu.lastUsed = now
	n, size := 0, 0
	for n < len(p.mu.queue) && n < p.opts.MaxBatchOps {
		sz := len(p.mu.queue[n].Op.Body) + 64
		if n > 0 && size+sz > p.opts.MaxBatchBytes {
			break
		}
		size += sz
		n++
	}
	reqs := make([]*Request, n)
	copy(reqs, p.mu.queue[:n])
	rest := copy(p.mu.queue, p.mu.queue[n:])
	for i := rest; i < len(p.mu.queue); i++ {
		p.mu.queue[i] = nil
	}
	p.mu.queue = p.mu.queue[:rest]
	p.mu.bytes -= size
	p.mu.seq++
	b := shard.Batch{Proposer: p.mu.id, Seq: p.mu.seq, Time: now.UnixMilli(), Control: p.opts.Control, SessionFence: true, Ops: make([]shard.Op, n)}
	if p.opts.Quota != nil {
		b.Quota = p.opts.Quota()
	}
	for i, r := range reqs {
		b.Ops[i] = r.Op
		r.queued, r.batchID, r.seq, r.index = false, b.Proposer, b.Seq, i
	}
	if t := p.opts.Taps; t != nil {
		// Registered before it is proposed, so no apply can come first.
		t.Register(b.Proposer, b.Seq)
		for i, r := range reqs {
			for _, fn := range r.taps {
				t.Tap(b.Proposer, b.Seq, i, fn)
			}
			r.taps = nil
		}
	}
	p.proposed.Add(1)
	p.obs.batchOps.Observe(float64(n))
	p.obs.queue.Set(float64(len(p.mu.queue)))
	f := &inflight{id: p.mu.id, seq: p.mu.seq, start: now, cmd: b.AppendTo(make([]byte, 0, size+64)), reqs: reqs}
	p.mu.inFlight = append(p.mu.inFlight, f)
	return f
}

// run proposes one batch until it is applied (or known to be unknown), then completes its
// requests. A batch the shard refused as out of order waits for its predecessor and retries.
func (p *Proposer) run(b *inflight) {
	defer p.wg.Done()
	results, err := p.settle(b)
	p.obs.latency.Observe(time.Since(b.start).Seconds())
	p.mu.Lock()
	for i, f := range p.mu.inFlight {
		if f == b {
			p.mu.inFlight = append(p.mu.inFlight[:i], p.mu.inFlight[i+1:]...)
			break
		}
	}
	if len(p.mu.inFlight) == 0 && p.mu.drained != nil {
		close(p.mu.drained)
		p.mu.drained = nil
	}
	for _, r := range b.reqs {
		r.settled = true
	}
	p.mu.Unlock()
	if t := p.opts.Taps; t != nil {
		t.Settled(b.id, b.seq)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	for i, r := range b.reqs {
		if err != nil {
			r.Done(shard.OpResult{}, err)
			continue
		}
		r.Done(results[i], nil)
	}
}

func (p *Proposer) settle(b *inflight) ([]shard.OpResult, error) {
	backoff := 5 * time.Millisecond
	if p.opts.Control {
		backoff = time.Millisecond
	}
	blockedWait := time.Millisecond
	a := b.att.Load()
	for {
		out, err := a.wait, a.err
		var data []byte
		if err == nil {
			data, err = out()
		}
		if err == nil {
			res, derr := shard.DecodeBatchResult(data)
			if derr != nil {
				return nil, derr
			}
			switch res.Status {
			case shard.BatchApplied, shard.BatchDuplicate:
				if len(res.Results) != len(b.reqs) {
					return nil, ErrOutcomeUnknown
				}
				return res.Results, nil
			case shard.BatchDuplicateUnknown:
				return nil, ErrOutcomeUnknown
			case shard.BatchOutOfOrder:
				// A predecessor is not applied yet (it was dropped, or overtaken).
				p.obs.outOfOrder.Inc()
				err = errOutOfOrder
			case shard.BatchBlocked:
				// The shard holds a prepared cross-shard transaction and applied nothing;
				// propose again (with the usual backoff) once it is likely resolved.
				p.obs.blocked.Inc()
				err = errBlocked
			default:
				return nil, ErrOutcomeUnknown
			}
		}
		if p.ctx.Err() != nil || errors.Is(err, ErrStopped) {
			return nil, ErrStopped
		}
		// Recovery is one mechanism for every failure: the loop proposes all unsettled batches
		// again, in seq order, so they re-enter the log in order at once; the shard
		// deduplicates the ones that had been applied. A newer attempt may already be there.
		switch {
		case errors.Is(err, errLeaderChanged):
			// LeaderChanged already asked the loop to propose again.
		case errors.Is(err, errOutOfOrder):
			p.requestRepropose()
		case errors.Is(err, errBlocked):
			select {
			case <-time.After(blockedWait):
				p.requestRepropose()
			case <-a.next:
			case <-p.ctx.Done():
				return nil, ErrStopped
			}
			blockedWait = min(2*blockedWait, 50*time.Millisecond)
		default:
			if errors.Is(err, ErrRetryable) {
				p.obs.retryable.Inc()
			} else {
				p.opts.Log.Debug("proposal outcome unknown, proposing again", "shard", p.shardID, "seq", b.seq, "err", err)
				p.obs.unknown.Inc()
			}
			select {
			case <-time.After(backoff):
				p.requestRepropose()
			case <-a.next:
			case <-p.ctx.Done():
				return nil, ErrStopped
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		}
		select {
		case <-a.next:
			a = b.att.Load()
		case <-p.ctx.Done():
			return nil, ErrStopped
		}
	}
}
