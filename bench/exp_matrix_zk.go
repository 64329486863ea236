package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// The matrix drives its synchronous and single-session rows with go-zookeeper, the client real
// Go programs use, rather than Corral's own pipelined client: one blocking call per goroutine,
// concurrent calls on one *zk.Conn pipelined by go-zookeeper itself (one write per request, replies
// matched by xid). This file holds that load: sessions, a windowed closed loop, a fixed amount
// of work, and the RSS of the server processes.

// zkSessionTimeout is the session timeout every go-zookeeper session asks for (as the other
// experiments' sessions).
const zkSessionTimeout = 10 * time.Second

// zkDialTimeout bounds how long a go-zookeeper session may take to be established; go-zookeeper
// itself retries forever.
const zkDialTimeout = 30 * time.Second

// zkStopGrace is how long a windowed load waits for its blocked calls to return after the window
// before it closes the sessions under them.
const zkStopGrace = 10 * time.Second

type quietZKLogger struct{}

func (quietZKLogger) Printf(string, ...any) {}

// dialZK opens a go-zookeeper session with addr (only that server, so that sessions spread
// evenly instead of by go-zookeeper's shuffle) and waits until the session is established.
// bufSize > 0 bounds go-zookeeper's two per-connection buffers (1.5 MiB each by default), for
// rows that hold thousands of sessions. The caller closes the session.
func dialZK(ctx context.Context, addr string, bufSize int) (*zk.Conn, error) {
	var (
		c   *zk.Conn
		ev  <-chan zk.Event
		err error
	)
	if bufSize > 0 {
		c, ev, err = zk.Connect([]string{addr}, zkSessionTimeout, zk.WithLogger(quietZKLogger{}),
			zk.WithMaxBufferSize(bufSize), zk.WithMaxConnBufferSize(bufSize))
	} else {
		c, ev, err = zk.Connect([]string{addr}, zkSessionTimeout, zk.WithLogger(quietZKLogger{}))
	}
	if err != nil {
		return nil, fmt.Errorf("go-zookeeper: %s: %w", addr, err)
	}
	tm := time.NewTimer(zkDialTimeout)
	defer tm.Stop()
	for {
		select {
		case e, ok := <-ev:
			if !ok {
				c.Close()
				return nil, fmt.Errorf("go-zookeeper: %s: connection closed before a session was established", addr)
			}
			switch e.State {
			case zk.StateHasSession:
				return c, nil
			case zk.StateExpired, zk.StateAuthFailed:
				c.Close()
				return nil, fmt.Errorf("go-zookeeper: %s: %v", addr, e.State)
			}
		case <-tm.C:
			c.Close()
			return nil, fmt.Errorf("go-zookeeper: no session with %s within %v", addr, zkDialTimeout)
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
	}
}

// dialZKMany opens n go-zookeeper sessions, session i with server i mod len(addrs), 16 at a time.
// On failure it closes the ones it opened.
func dialZKMany(ctx context.Context, addrs []string, n int) ([]*zk.Conn, error) {
	conns := make([]*zk.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			conns[i], errs[i] = dialZK(ctx, addrs[i%len(addrs)], 0)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeZK(conns)
		return nil, err
	}
	return conns, nil
}

// closeZK closes sessions in parallel (nil entries are skipped); go-zookeeper's Close only
// queues closeSession, fails the calls still waiting, and lets the session's goroutines end.
// Closing twice is harmless.
func closeZK(conns []*zk.Conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
	}
	wg.Wait()
}

// zkOp is one blocking call of a go-zookeeper load by worker w; it returns the op kind
// (kindRead, kindWrite, kindCreate) to record the latency under.
type zkOp func(w int) (kind int, err error)

// zkStats is one worker's measurements; only its worker touches it until the workers stopped.
type zkStats struct {
	hist    [numKinds]*Hist
	ok      [numKinds]int64
	errs    int64
	errText string
}

func newZKStats(n int) []zkStats {
	st := make([]zkStats, n)
	for i := range st {
		for k := range st[i].hist {
			st[i].hist[k] = NewHist()
		}
	}
	return st
}

// record adds one finished call that started at start and ended at end (offsets from the load's
// origin); only calls ending inside [from, to) count.
func (s *zkStats) record(kind int, start, end, from, to time.Duration, err error) {
	if err != nil {
		s.errs++
		if s.errText == "" {
			s.errText = err.Error()
		}
		return
	}
	if end >= from && end < to {
		s.hist[kind].Record(end - start)
		s.ok[kind]++
	}
}

// merge sums the workers' stats into a LoadResult over window.
func mergeZKStats(st []zkStats, window time.Duration) *LoadResult {
	res := &LoadResult{Window: window, WindowSec: window.Seconds(), Latency: map[string]Summary{}}
	var ok [numKinds]int64
	for k := range numKinds {
		h := NewHist()
		for i := range st {
			h.Merge(st[i].hist[k])
			ok[k] += st[i].ok[k]
		}
		if h.Count() > 0 {
			res.Latency[kindNames[k]] = h.Summary()
		}
		res.Ops += ok[k]
	}
	for i := range st {
		res.Errors += st[i].errs
		if res.ErrorSample == "" {
			res.ErrorSample = st[i].errText
		}
	}
	if secs := window.Seconds(); secs > 0 {
		res.OpsPerSec = float64(res.Ops) / secs
		res.ReadsPerSec = float64(ok[kindRead]) / secs
		res.WritesPerSec = float64(ok[kindWrite]+ok[kindCreate]) / secs
	}
	return res
}

// runZKWindow runs workers goroutines, each calling op in a closed loop (one call at a time),
// for warmup+duration, and measures the calls that end inside the window after warmup. After
// the window the workers finish their current call; if some call has not returned after
// zkStopGrace (or ctx ends), abort closes the sessions, which fails the calls still waiting.
// Every worker has returned when runZKWindow does.
func runZKWindow(ctx context.Context, prog *Progress, label string, workers int, warmup, duration time.Duration,
	op zkOp, abort func()) (*LoadResult, error) {
	st := newZKStats(workers)
	var (
		stop      atomic.Bool
		completed atomic.Int64
		wg        sync.WaitGroup
	)
	t0 := time.Now()
	from, to := warmup, warmup+duration
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &st[w]
			for !stop.Load() {
				start := time.Since(t0)
				kind, err := op(w)
				s.record(kind, start, time.Since(t0), from, to, err)
				if err == nil {
					completed.Add(1)
				} else if !stop.Load() {
					time.Sleep(time.Millisecond) // a broken session fails at once; do not spin
				}
			}
		}()
	}
	prog.Track(label, completed.Load)
	defer prog.Track("", nil)
	interrupted := sleepUntil(ctx, t0.Add(from))
	a := sampleCPU()
	if !interrupted {
		interrupted = sleepUntil(ctx, t0.Add(to))
	}
	b := sampleCPU()
	stop.Store(true)
	waitOrAbort(ctx, &wg, abort)
	if interrupted {
		return nil, ctx.Err()
	}
	// Calls count by when they ended, against the nominal window: a late wake-up on a busy
	// machine moves the CPU samples, not the window.
	res := mergeZKStats(st, duration)
	res.CPU = cpuBetween(a, b)
	return res, nil
}

// waitOrAbort waits for wg; after zkStopGrace, or at once when ctx has ended, it calls abort
// (which must make every blocked call return) and waits again.
func waitOrAbort(ctx context.Context, wg *sync.WaitGroup, abort func()) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if ctx.Err() == nil {
		grace := time.NewTimer(zkStopGrace)
		defer grace.Stop()
		select {
		case <-done:
			return
		case <-grace.C:
		case <-ctx.Done():
		}
	}
	abort()
	<-done
}

// zkJob is job i of a fixed amount of work, done by worker w; ctx ends when the run is aborted.
type zkJob func(ctx context.Context, w, i int) (kind int, err error)

// runZKCount has workers goroutines share n jobs (each takes the next index until all are
// taken) and measures the time from the start until the last job returned; every job counts.
// The run is aborted after limit (or when ctx ends): abort must make the blocked calls return.
// After limit it returns what was done so far with an error wrapping errGaveUp.
func runZKCount(ctx context.Context, prog *Progress, label string, workers, n int, limit time.Duration,
	job zkJob, abort func()) (*LoadResult, error) {
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	st := newZKStats(workers)
	var (
		next      atomic.Int64
		completed atomic.Int64
		wg        sync.WaitGroup
	)
	a := sampleCPU()
	t0 := a.at
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &st[w]
			for rctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				start := time.Since(t0)
				kind, err := job(rctx, w, i)
				s.record(kind, start, time.Since(t0), 0, 1<<62, err)
				if err == nil {
					completed.Add(1)
				}
			}
		}()
	}
	prog.Track(label, completed.Load)
	defer prog.Track("", nil)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-rctx.Done():
		abort()
		<-done
	}
	b := sampleCPU()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res := mergeZKStats(st, b.at.Sub(t0))
	res.CPU = cpuBetween(a, b)
	if rctx.Err() != nil {
		return res, fmt.Errorf("%w after %v with %d of %d done (%.0f/s)", errGaveUp, limit, res.Ops, n, res.OpsPerSec)
	}
	return res, nil
}

// errGaveUp marks a fixed amount of work that did not finish within its time limit.
var errGaveUp = errors.New("gave up")

// deleteNodes deletes each list of paths, in order, over a Corral client session of its own,
// at most 256 requests in flight per list; paths that do not exist are skipped. It is the
// matrix's housekeeping between rows, not a measurement.
func deleteNodes(ctx context.Context, addrs []string, lists [][]string) error {
	errs := make([]error, len(lists))
	var wg sync.WaitGroup
	for li, paths := range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[li] = deleteList(ctx, rotate(addrs, li), paths)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func deleteList(ctx context.Context, addrs []string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	c, err := client.Dial(ctx, addrs, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	sem := make(chan struct{}, 256)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for _, p := range paths {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err() // the deferred Close fails the deletes still in flight
		}
		wg.Add(1)
		c.DeleteAsync(p, -1, func(err error) {
			if err != nil && !errors.Is(err, wire.ErrNoNode) {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("deleting %s: %w", p, err)
				}
				mu.Unlock()
			}
			<-sem
			wg.Done()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }() // ends once every callback ran, which Close ensures
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}

// readRSS returns the resident set of process pid in KiB (VmRSS in /proc/<pid>/status).
func readRSS(pid int) (int64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("no process")
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fs := strings.Fields(v)
			if len(fs) != 2 || fs[1] != "kB" {
				return 0, fmt.Errorf("pid %d: unexpected VmRSS line %q", pid, sc.Text())
			}
			return strconv.ParseInt(fs[0], 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("pid %d: no VmRSS in /proc/%d/status", pid, pid)
}
