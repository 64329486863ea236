package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// FailoverEvent is one fault injected (or observed) during the failover timeline.
type FailoverEvent struct {
	Target string  `json:"target"`
	AtSec  float64 `json:"at_s"`
	Code   string  `json:"code"` // the label on the plot
	Event  string  `json:"event"`
	Server int     `json:"server"` // 0-based index, -1 when not about one server
	Err    string  `json:"error,omitempty"`
}

// FailoverRun is one target's timeline.
type FailoverRun struct {
	Target     string          `json:"target"`
	Servers    int             `json:"servers"`
	Shards     int             `json:"shards"`
	ReadPct    float64         `json:"read_pct"`
	BucketSec  float64         `json:"bucket_s"`
	Rates      []float64       `json:"ops_per_s"` // per bucket from the start of the load
	Events     []FailoverEvent `json:"events"`
	BaselineOp float64         `json:"baseline_ops_per_s"`
	Outages    []OutageReport  `json:"outages"`
	// LongestZeroSec is the longest stretch of consecutive buckets without a completed op
	// anywhere in the timeline after the warm-up (the outage reports look only after each
	// kill), starting at LongestZeroAtSec.
	LongestZeroSec   float64 `json:"longest_zero_s"`
	LongestZeroAtSec float64 `json:"longest_zero_at_s"`
	Errors           int64   `json:"errors"`
	Reconnects       int64   `json:"reconnects"`
	CPU              CPUUse  `json:"cpu"`
	Err              string  `json:"error,omitempty"`
}

// OutageReport summarises the dip after a kill.
type OutageReport struct {
	Event       string  `json:"event"`
	AtSec       float64 `json:"at_s"`
	ZeroSec     float64 `json:"zero_s"`    // time with no completed op (in the 5 s after)
	Below50Sec  float64 `json:"below50_s"` // longest stretch under half the baseline
	MinOpsPerS  float64 `json:"min_ops_per_s"`
	RecoverySec float64 `json:"recovery_s"` // until back at ≥ half the baseline; -1: not within the 5 s examined
	ElectionSec float64 `json:"election_s"` // leader kills: until srvr names a new leader
}

// The schedule, as fractions of the timeline: like Figure 8's first events (a follower fails
// and recovers, then the leader fails and recovers).
const (
	atFollowerKill    = 0.15
	atFollowerRestart = 0.30
	atLeaderKill      = 0.50
	atLeaderRestart   = 0.70
)

// outageWindow is how long after a kill the dip is examined.
const outageWindow = 5 * time.Second

func runFailover(ctx context.Context, e *env) error {
	n := e.cfg.Sizes[0]
	var runs []FailoverRun
	for _, t := range e.targets {
		if !t.Managed() {
			e.fail(t, "failover", fmt.Errorf("%w: the benchmark must start the servers to crash them (drop --servers)", ErrUnsupported))
			continue
		}
		shape := e.shape(n)
		err := e.withCluster(ctx, t, shape, func(c Cluster) error {
			if err := e.prepareAndWarm(ctx, t, c); err != nil {
				return err
			}
			run := FailoverRun{Target: t.Name(), Servers: n, ReadPct: e.cfg.ReadPct, BucketSec: e.cfg.Bucket.Seconds()}
			if t.Sharded() {
				run.Shards = shape.Shards
			}
			var evMu sync.Mutex
			w := e.workload(c.Addrs(), e.cfg.ReadPct, fmt.Sprintf("%s x%d failover", t.Name(), n))
			total := e.cfg.Warmup + e.cfg.Duration
			w.WaitDuring, w.Tail = true, e.cfg.Duration/5
			w.During = func(ctx context.Context, t0 time.Time) {
				add := func(code, what string, server int, err error) {
					ev := FailoverEvent{Target: t.Name(), AtSec: time.Since(t0).Seconds(), Code: code, Event: what, Server: server}
					if err != nil {
						ev.Err = err.Error()
					}
					evMu.Lock()
					run.Events = append(run.Events, ev)
					evMu.Unlock()
					e.prog.Logf("%s  t=%5.2fs  %s (server %d)%s", t.Name(), ev.AtSec, what, server+1, errSuffix(err))
				}
				runFailoverSchedule(ctx, c, t0.Add(e.cfg.Warmup), e.cfg.Duration, add)
			}
			e.prog.Stage("%s x%d: failover timeline (%v)", t.Name(), n, total)
			res, err := RunLoad(ctx, w, e.prog)
			if err != nil {
				return err
			}
			run.Rates = res.Timeline.Rates()
			run.Errors, run.Reconnects, run.CPU = res.Errors, res.Reconnects, res.CPU
			analyzeFailover(&run, res.Timeline, e.cfg.Warmup, e.cfg.Duration)
			runs = append(runs, run)
			return nil
		})
		if err != nil {
			e.fail(t, fmt.Sprintf("failover with %d servers", n), err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return e.reportFailover(runs)
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + firstLine(err.Error())
}

// runFailoverSchedule kills a follower, restarts it, kills the leader, watches for a new one,
// and restarts the old leader, at the fractions of the window [start, start+window) given above.
// Each step waits for the previous one (a restart returns once the server serves), so a slow
// restart shifts what follows. Restarts run to completion even when the load has ended, so that
// the cluster is whole again before it is stopped.
func runFailoverSchedule(ctx context.Context, c Cluster, start time.Time, window time.Duration,
	add func(code, what string, server int, err error)) {
	at := func(f float64) bool { return !sleepUntil(ctx, start.Add(time.Duration(f*float64(window)))) }
	restart := func(i int) error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		return c.Restart(rctx, i)
	}
	if !at(atFollowerKill) {
		return
	}
	follower := c.Follower(ctx)
	if follower >= 0 {
		add("1", describe(ctx, c, "follower killed", follower), follower, c.Kill(follower))
		at(atFollowerRestart)
		add("2", "follower restarted (serving)", follower, restart(follower))
	}
	if !at(atLeaderKill) {
		return
	}
	leader := c.Leader(ctx)
	if leader < 0 {
		add("3", "no leader found to kill", -1, fmt.Errorf("no server reports Mode: leader"))
		return
	}
	add("3", describe(ctx, c, "leader killed", leader), leader, c.Kill(leader))
	// Watch for the new leader (srvr Mode) while the schedule goes on.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for wctx.Err() == nil {
			if l := c.Leader(wctx); l >= 0 && l != leader {
				add("4", "new leader elected", l, nil)
				return
			}
			sleepUntil(wctx, time.Now().Add(20*time.Millisecond))
		}
	}()
	at(atLeaderRestart)
	add("5", "old leader restarted (serving)", leader, restart(leader))
	wg.Wait()
}

// recovery formats OutageReport.RecoverySec.
func recovery(sec float64) string {
	if sec < 0 {
		return fmt.Sprintf("not within %.0f s", outageWindow.Seconds())
	}
	return ff(sec, 1)
}

// describe adds what the cluster says about server i (Corral: how many shards it leads) to what.
func describe(ctx context.Context, c Cluster, what string, i int) string {
	if d, ok := c.(interface {
		Describe(context.Context, int) string
	}); ok {
		if s := d.Describe(ctx, i); s != "" {
			what += " (" + s + ")"
		}
	}
	return what
}

// analyzeFailover fills the baseline (mean rate from the end of the warm-up until the first
// kill) and the dip after each kill.
func analyzeFailover(run *FailoverRun, tl *Timeline, warmup, window time.Duration) {
	firstKill := time.Duration(atFollowerKill * float64(window))
	for _, ev := range run.Events {
		if ev.Code == "1" || ev.Code == "3" {
			firstKill = time.Duration(ev.AtSec * float64(time.Second))
			break
		}
	}
	run.BaselineOp = tl.Mean(warmup, firstKill)
	first := int(warmup / tl.Width)
	n, at := longestZeroRun(run.Rates, first)
	run.LongestZeroSec, run.LongestZeroAtSec = float64(n)*run.BucketSec, float64(at)*run.BucketSec
	var electedAt = map[int]float64{}
	for _, ev := range run.Events {
		if ev.Code == "4" {
			electedAt[4] = ev.AtSec
		}
	}
	for _, ev := range run.Events {
		if ev.Code != "1" && ev.Code != "3" {
			continue
		}
		at := time.Duration(ev.AtSec * float64(time.Second))
		o := tl.OutageAfter(at, outageWindow, run.BaselineOp, 0.5)
		r := OutageReport{Event: ev.Event, AtSec: ev.AtSec, ZeroSec: o.Zero.Seconds(), Below50Sec: o.Below.Seconds(),
			MinOpsPerS: o.MinRate, RecoverySec: o.Recovery.Seconds()}
		if ev.Code == "3" {
			if t, ok := electedAt[4]; ok {
				r.ElectionSec = t - ev.AtSec
			}
		}
		run.Outages = append(run.Outages, r)
	}
}

func (e *env) reportFailover(runs []FailoverRun) error {
	var rows [][]string
	for _, r := range runs {
		for i, v := range r.Rates {
			rows = append(rows, []string{r.Target, itoa(r.Servers), ff(float64(i)*r.BucketSec, 2), ff(v, 1)})
		}
	}
	if err := e.writeCSV("failover.csv", []string{"target", "servers", "t_s", "ops_per_s"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, r := range runs {
		for _, ev := range r.Events {
			rows = append(rows, []string{ev.Target, ff(ev.AtSec, 3), ev.Code, ev.Event, itoa(ev.Server + 1), ev.Err})
		}
	}
	if err := e.writeCSV("failover-events.csv", []string{"target", "t_s", "code", "event", "server_myid", "error"}, rows); err != nil {
		return err
	}
	if err := e.writeJSON("failover.json", runs); err != nil {
		return err
	}
	var fig figure
	fig.title = fmt.Sprintf("Throughput under failures, %.0f%% reads, %v buckets (paper Figure 8)", e.cfg.ReadPct, e.cfg.Bucket)
	fig.xlabel, fig.ylabel = "seconds since start", "operations per second"
	for _, r := range runs {
		s := series{name: fmt.Sprintf("%s, %d servers", r.Target, r.Servers), target: r.Target, dashed: r.Target == "zookeeper"}
		for i, v := range r.Rates {
			s.xs = append(s.xs, float64(i)*r.BucketSec)
			s.ys = append(s.ys, v)
		}
		fig.series = append(fig.series, s)
		for _, ev := range r.Events {
			label := ev.Code
			if len(runs) > 1 {
				label = r.Target[:1] + ev.Code
			}
			fig.marks = append(fig.marks, mark{x: ev.AtSec, label: label, target: r.Target})
		}
	}
	if err := e.writePlot("failover.png", fig); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("## Failover (Figure 8)\n\n![failover](failover.png)\n\n")
	b.WriteString("Events: 1 follower killed (SIGKILL), 2 follower restarted and serving, 3 leader killed, 4 new leader reported by `srvr`, 5 old leader restarted and serving. ")
	b.WriteString("Clients whose server dies open a new session on the next server, as the paper's clients switch servers when their connection breaks.\n\n")
	header := []string{"target", "baseline ops/s", "kill", "at s", "zero-throughput s", "< 50 % s", "min ops/s", "back ≥ 50 % after s", "new leader after s"}
	rows = nil
	for _, r := range runs {
		for _, o := range r.Outages {
			el := "–"
			if o.ElectionSec > 0 {
				el = ff(o.ElectionSec, 2)
			}
			rows = append(rows, []string{r.Target, kops(r.BaselineOp), o.Event, ff(o.AtSec, 2), ff(o.ZeroSec, 1),
				ff(o.Below50Sec, 1), kops(o.MinOpsPerS), recovery(o.RecoverySec), el})
		}
	}
	b.WriteString(mdTable(header, rows))
	b.WriteString("\nPaper (5 servers, 30 % writes, 2010): leader election < 200 ms; one sampled point near zero at each leader failure, back above ≈45k ops/s within 2–3 samples; a follower failure costs about its share of reads.\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "\n%s: %d failed requests (connection loss), %d reconnects, generator %.2f cores; longest stretch without a completed operation anywhere in the timeline: %.1f s",
			r.Target, r.Errors, r.Reconnects, r.CPU.GenCores, r.LongestZeroSec)
		if r.LongestZeroSec > 0 {
			fmt.Fprintf(&b, " (from %.2f s)", r.LongestZeroAtSec)
		}
		b.WriteString(".\n")
	}
	e.section(b.String())
	return nil
}

// longestZeroRun returns the length and start index of the longest run of zero rates at or after
// index from.
func longestZeroRun(rates []float64, from int) (n, at int) {
	cur, start := 0, 0
	for i := max(from, 0); i < len(rates); i++ {
		if rates[i] != 0 {
			cur = 0
			continue
		}
		if cur == 0 {
			start = i
		}
		cur++
		if cur > n {
			n, at = cur, start
		}
	}
	return n, at
}
