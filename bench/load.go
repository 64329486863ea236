package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// Mode is what a load issues.
type Mode int

const (
	// ModeReadWrite issues getData/setData on the client's own pre-created znode, reads with
	// probability ReadPct/100 (the paper's Figure 5 workload).
	ModeReadWrite Mode = iota
	// ModeCreate issues create, then on its completion an asynchronous delete of the new node
	// and the next create (the paper's Table 2 workload).
	ModeCreate
)

// Op kinds recorded by the load.
const (
	kindRead = iota
	kindWrite
	kindCreate
	kindClose // matrix row 14: closeSession
	numKinds
)

var kindNames = [numKinds]string{"read", "write", "create", "close"}

// Workload describes one load run. Clients sessions are spread round-robin over Addrs; each
// keeps up to Outstanding requests in flight (the paper: at least 100).
type Workload struct {
	Addrs       []string
	Clients     int
	Outstanding int
	ReadPct     float64
	DataSize    int
	Groups      int // ModeReadWrite: the per-client znodes are spread over this many top-level subtrees
	Mode        Mode
	CreateRoot  string // ModeCreate: parent of the created nodes
	// Rate, when positive, paces the load to this many ops/s in total (open loop, at most
	// Outstanding in flight per client; requests that cannot be sent are counted as Missed).
	// Zero runs closed-loop at saturation.
	Rate     float64
	Warmup   time.Duration
	Duration time.Duration // the measured window, after Warmup
	Bucket   time.Duration // timeline bucket width (default 100 ms)
	// During, if set, runs from the start of the load until it returns or the load ends (its
	// ctx is then cancelled); t0 is the load's time origin (failover events).
	During func(ctx context.Context, t0 time.Time)
	// WaitDuring keeps the load running past Warmup+Duration until During has returned, plus
	// Tail, so that a schedule slowed down by slow restarts still runs to its end (at most
	// twice Warmup+Duration more).
	WaitDuring bool
	Tail       time.Duration
	Session    client.Options
	// Label is shown on the progress line.
	Label string
}

// LoadResult is what a load run measured. Rates and latencies cover the measured window; the
// timeline covers the whole run from its start.
type LoadResult struct {
	Window       time.Duration      `json:"-"`
	WindowSec    float64            `json:"window_s"`
	Ops          int64              `json:"ops"`
	OpsPerSec    float64            `json:"ops_per_s"`
	ReadsPerSec  float64            `json:"reads_per_s"`
	WritesPerSec float64            `json:"writes_per_s"`
	Latency      map[string]Summary `json:"latency"`
	Errors       int64              `json:"errors"`
	Reconnects   int64              `json:"reconnects"`
	Missed       int64              `json:"missed"`
	CPU          CPUUse             `json:"cpu"`
	Timeline     *Timeline          `json:"-"`
	ErrorSample  string             `json:"error_sample,omitempty"`
}

// nodePath is client i's znode: /bench when groups <= 1, else /bench-GG. Top-level subtrees are
// the unit Corral's mount table places on shards, so spreading the clients' znodes over several
// lets a sharded ensemble spread the writes.
func groupDir(groups, i int) string {
	if groups <= 1 {
		return "/bench"
	}
	return fmt.Sprintf("/bench-%02d", i%groups)
}

func nodePath(groups, i int) string { return groupDir(groups, i) + "/c" + strconv.Itoa(i) }

// Prepare creates the group directories and one znode of size bytes per client (existing nodes
// are kept), pipelined over one session.
func Prepare(ctx context.Context, addrs []string, clients, groups, size int) error {
	c, err := client.Dial(ctx, addrs, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	data := make([]byte, size)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	cb := func(_ string, _ wire.Stat, err error) {
		if err != nil && !errors.Is(err, wire.ErrNodeExists) {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		wg.Done()
	}
	ng := max(groups, 1)
	wg.Add(min(ng, clients))
	for g := 0; g < ng && g < clients; g++ {
		c.CreateAsync(groupDir(groups, g), nil, wire.FlagPersistent, nil, cb)
	}
	wg.Wait()
	wg.Add(clients)
	for i := 0; i < clients; i++ {
		c.CreateAsync(nodePath(groups, i), data, wire.FlagPersistent, nil, cb)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if firstErr != nil {
		return fmt.Errorf("preparing znodes: %w", firstErr)
	}
	return nil
}

// loadRun is one running load.
type loadRun struct {
	w        Workload
	t0       time.Time
	from, to time.Duration // measured window, as offsets from t0
	data     []byte
	workers  []*worker
	stopping atomic.Bool
	missed   atomic.Int64
	ctx      context.Context
}

func (lr *loadRun) since() time.Duration { return time.Since(lr.t0) }

// worker is one client session and its Outstanding request slots.
type worker struct {
	lr   *loadRun
	id   int
	path string
	conn atomic.Pointer[client.Conn]

	mu struct {
		sync.Mutex
		free    []*slot
		hist    [numKinds]*Hist
		ok      [numKinds]int64
		tl      *Timeline
		errs    int64
		errText string
	}
	completed  atomic.Int64
	reconnects atomic.Int64
	slots      []*slot
}

// slot is one lane of outstanding requests: at most one request in flight. Its callbacks are
// bound once, so issuing allocates nothing; it carries its own start time and random state, so
// no ordering between lanes is assumed.
type slot struct {
	w      *worker
	id     int
	conn   *client.Conn
	start  time.Duration
	kind   int
	rng    *rand.Rand
	seq    int
	onGet  client.DataCallback
	onSet  client.StatCallback
	onMake client.CreateCallback
}

func (s *slot) getDone(data []byte, _ wire.Stat, err error) {
	if err == nil && len(data) != len(s.w.lr.data) {
		err = errShortRead
	}
	s.w.complete(s, err)
}

// errShortRead marks a getData reply whose data is not the size written: the server is wrong,
// and the op does not count.
var errShortRead = errors.New("bench: getData returned data of the wrong size")

func (s *slot) setDone(_ wire.Stat, err error) { s.w.complete(s, err) }
func (s *slot) makeDone(path string, _ wire.Stat, err error) {
	if err == nil {
		s.conn.DeleteAsync(path, -1, nil)
	}
	s.w.complete(s, err)
}

// RunLoad runs one workload: dials the sessions, runs Warmup+Duration, drains and closes.
// Nodes must have been prepared (Prepare) for ModeReadWrite.
func RunLoad(ctx context.Context, w Workload, prog *Progress) (*LoadResult, error) {
	if w.Bucket <= 0 {
		w.Bucket = 100 * time.Millisecond
	}
	if w.Clients <= 0 || w.Outstanding <= 0 || len(w.Addrs) == 0 {
		return nil, fmt.Errorf("bench: workload needs clients, outstanding and addresses")
	}
	lr := &loadRun{w: w, ctx: ctx, data: make([]byte, w.DataSize)}
	for i := range lr.data {
		lr.data[i] = byte('a' + i%26)
	}
	total := w.Warmup + w.Duration
	nb := int(total/w.Bucket) + 2
	if w.WaitDuring {
		nb = int(3*total/w.Bucket) + int(w.Tail/w.Bucket) + 2
	}
	for i := 0; i < w.Clients; i++ {
		wk := &worker{lr: lr, id: i, path: nodePath(w.Groups, i)}
		wk.mu.tl = NewTimeline(w.Bucket, nb)
		for k := range wk.mu.hist {
			wk.mu.hist[k] = NewHist()
		}
		for j := 0; j < w.Outstanding; j++ {
			s := &slot{w: wk, id: j, rng: rand.New(rand.NewPCG(uint64(i), uint64(j)))}
			s.onGet, s.onSet, s.onMake = s.getDone, s.setDone, s.makeDone
			wk.slots = append(wk.slots, s)
		}
		lr.workers = append(lr.workers, wk)
	}
	// Dial every session before the clock starts, spread round-robin.
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err := dialAll(dctx, lr)
	cancel()
	if err != nil {
		lr.closeAll()
		return nil, err
	}
	prog.Track(w.Label, lr.completed)
	defer prog.Track("", nil)

	lr.t0 = time.Now()
	lr.from, lr.to = w.Warmup, total
	if w.WaitDuring {
		lr.to = 1 << 62 // the window ends when the schedule does
	}
	runCtx, stopRun := context.WithCancel(ctx)
	var bg sync.WaitGroup
	for _, wk := range lr.workers {
		bg.Add(1)
		go func() { defer bg.Done(); wk.supervise(runCtx) }()
	}
	if w.Rate > 0 {
		for _, wk := range lr.workers {
			wk.mu.Lock()
			wk.mu.free = append(wk.mu.free[:0], wk.slots...)
			wk.mu.Unlock()
		}
		bg.Add(1)
		go func() { defer bg.Done(); lr.pace(runCtx) }()
	} else {
		for _, wk := range lr.workers {
			for _, s := range wk.slots {
				wk.issue(s)
			}
		}
	}
	var during sync.WaitGroup
	duringDone := make(chan struct{})
	if w.During != nil {
		during.Add(1)
		go func() { defer during.Done(); defer close(duringDone); w.During(runCtx, lr.t0) }()
	} else {
		close(duringDone)
	}
	var a, b cpuSample
	interrupted := sleepUntil(ctx, lr.t0.Add(w.Warmup))
	a = sampleCPU()
	if !interrupted {
		interrupted = sleepUntil(ctx, lr.t0.Add(total))
	}
	if w.WaitDuring && !interrupted {
		limit := time.NewTimer(time.Until(lr.t0.Add(3 * total)))
		select {
		case <-duringDone:
			interrupted = sleepUntil(ctx, time.Now().Add(w.Tail))
		case <-limit.C:
		case <-ctx.Done():
			interrupted = true
		}
		limit.Stop()
	}
	b = sampleCPU()
	elapsed := time.Since(lr.t0)
	lr.stopping.Store(true)
	stopRun()
	during.Wait()
	bg.Wait()
	lr.drain(5 * time.Second)
	lr.closeAll()
	if interrupted {
		return nil, ctx.Err()
	}
	res := lr.result(b.at.Sub(a.at))
	res.CPU = cpuBetween(a, b)
	if n := int(elapsed/w.Bucket) + 1; n < len(res.Timeline.Counts) {
		res.Timeline.Counts = res.Timeline.Counts[:n]
	}
	return res, nil
}

// sleepUntil sleeps until t; it reports whether ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() != nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return false
	case <-ctx.Done():
		return true
	}
}

func dialAll(ctx context.Context, lr *loadRun) error {
	var wg sync.WaitGroup
	errs := make([]error, len(lr.workers))
	sem := make(chan struct{}, 16)
	for i, wk := range lr.workers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := client.Dial(ctx, rotate(lr.w.Addrs, i), lr.w.Session)
			if err != nil {
				errs[i] = fmt.Errorf("client %d: %w", i, err)
				return
			}
			wk.conn.Store(c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// rotate returns addrs starting at index i mod len: client i prefers server i mod n and falls
// back to the next ones.
func rotate(addrs []string, i int) []string {
	n := len(addrs)
	out := make([]string, 0, n)
	for k := 0; k < n; k++ {
		out = append(out, addrs[(i+k)%n])
	}
	return out
}

func (lr *loadRun) completed() int64 {
	var n int64
	for _, wk := range lr.workers {
		n += wk.completed.Load()
	}
	return n
}

// issue sends the slot's next request on the worker's current session.
func (wk *worker) issue(s *slot) {
	c := wk.conn.Load()
	s.conn = c
	s.start = wk.lr.since()
	w := &wk.lr.w
	switch w.Mode {
	case ModeCreate:
		s.kind = kindCreate
		s.seq++
		path := w.CreateRoot + "/w" + strconv.Itoa(wk.id) + "-" + strconv.Itoa(s.id) + "-" + strconv.Itoa(s.seq)
		c.CreateAsync(path, wk.lr.data, wire.FlagPersistent, nil, s.onMake)
	default:
		if s.rng.Float64()*100 < w.ReadPct {
			s.kind = kindRead
			c.GetDataAsync(wk.path, false, s.onGet)
		} else {
			s.kind = kindWrite
			c.SetDataAsync(wk.path, wk.lr.data, -1, s.onSet)
		}
	}
}

// complete records a finished request and decides the slot's next step: reissue (closed loop),
// park it as free (paced load, stopping, or its session broke).
func (wk *worker) complete(s *slot, err error) {
	lr := wk.lr
	now := lr.since()
	wk.mu.Lock()
	if err == nil {
		wk.mu.tl.Add(now)
		if now >= lr.from && now < lr.to {
			wk.mu.hist[s.kind].Record(now - s.start)
			wk.mu.ok[s.kind]++
		}
	} else {
		wk.mu.errs++
		if wk.mu.errText == "" {
			wk.mu.errText = err.Error()
		}
	}
	lost := errors.Is(err, wire.ErrConnectionLoss)
	if lr.stopping.Load() || lr.w.Rate > 0 || (lost && s.conn == wk.conn.Load()) {
		wk.mu.free = append(wk.mu.free, s)
		wk.mu.Unlock()
		if err == nil {
			wk.completed.Add(1)
		}
		return
	}
	wk.mu.Unlock()
	if err == nil {
		wk.completed.Add(1)
	}
	wk.issue(s)
}

// supervise replaces the worker's session when it breaks (a killed server): it dials the next
// servers in turn (a new session; the benchmark keeps no session state) and restarts the parked
// slots, as the paper's clients switch servers when their connection breaks.
func (wk *worker) supervise(ctx context.Context) {
	lr := wk.lr
	for {
		c := wk.conn.Load()
		select {
		case <-c.Done():
		case <-ctx.Done():
			return
		}
		c.Close() // waits until every callback of the old session ran
		var nc *client.Conn
		for attempt := 1; nc == nil; attempt++ {
			if ctx.Err() != nil {
				return
			}
			dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			o := lr.w.Session
			o.DialTimeout = time.Second
			var err error
			nc, err = client.Dial(dctx, rotate(lr.w.Addrs, wk.id+attempt), o)
			cancel()
			if err != nil {
				nc = nil
				select {
				case <-time.After(50 * time.Millisecond):
				case <-ctx.Done():
					return
				}
			}
		}
		wk.reconnects.Add(1)
		wk.mu.Lock()
		wk.conn.Store(nc)
		var restart []*slot
		if lr.w.Rate <= 0 && !lr.stopping.Load() {
			restart, wk.mu.free = wk.mu.free, nil
		}
		wk.mu.Unlock()
		for _, s := range restart {
			wk.issue(s)
		}
	}
}

// pace issues requests at the workload's rate, round-robin over the workers' free slots, in
// 1 ms steps; a request due when its worker has no free slot is counted as missed.
func (lr *loadRun) pace(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	var sent int64
	next := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		due := int64(lr.w.Rate*time.Since(lr.t0).Seconds()) - sent
		for ; due > 0; due-- {
			sent++
			wk := lr.workers[next%len(lr.workers)]
			next++
			wk.mu.Lock()
			var s *slot
			if n := len(wk.mu.free); n > 0 && !lr.stopping.Load() {
				s = wk.mu.free[n-1]
				wk.mu.free = wk.mu.free[:n-1]
			}
			wk.mu.Unlock()
			if s == nil {
				lr.missed.Add(1)
				continue
			}
			wk.issue(s)
		}
	}
}

// drain waits until every slot is parked (all replies in) or the timeout passes.
func (lr *loadRun) drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		busy := 0
		for _, wk := range lr.workers {
			wk.mu.Lock()
			busy += len(wk.slots) - len(wk.mu.free)
			wk.mu.Unlock()
		}
		if busy == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (lr *loadRun) closeAll() {
	var wg sync.WaitGroup
	for _, wk := range lr.workers {
		if c := wk.conn.Load(); c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
	}
	wg.Wait()
}

func (lr *loadRun) result(window time.Duration) *LoadResult {
	hist := [numKinds]*Hist{}
	for k := range hist {
		hist[k] = NewHist()
	}
	var ok [numKinds]int64
	res := &LoadResult{Window: window, WindowSec: window.Seconds(), Latency: map[string]Summary{},
		Timeline: NewTimeline(lr.w.Bucket, 0), Missed: lr.missed.Load()}
	for _, wk := range lr.workers {
		wk.mu.Lock()
		for k := range hist {
			hist[k].Merge(wk.mu.hist[k])
			ok[k] += wk.mu.ok[k]
		}
		res.Timeline.Merge(wk.mu.tl)
		res.Errors += wk.mu.errs
		if res.ErrorSample == "" {
			res.ErrorSample = wk.mu.errText
		}
		wk.mu.Unlock()
		res.Reconnects += wk.reconnects.Load()
	}
	secs := window.Seconds()
	for k := range hist {
		res.Ops += ok[k]
		if hist[k].Count() > 0 {
			res.Latency[kindNames[k]] = hist[k].Summary()
		}
	}
	if secs > 0 {
		res.OpsPerSec = float64(res.Ops) / secs
		res.ReadsPerSec = float64(ok[kindRead]) / secs
		res.WritesPerSec = float64(ok[kindWrite]+ok[kindCreate]) / secs
	}
	return res
}
