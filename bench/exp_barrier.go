package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// BarrierPoint is one cell of Table 3.
type BarrierPoint struct {
	Target         string  `json:"target"`
	Servers        int     `json:"servers"`
	Shards         int     `json:"shards"`
	Clients        int     `json:"clients"`
	Barriers       int     `json:"barriers"`
	Seconds        float64 `json:"seconds"`
	BarriersPerSec float64 `json:"barriers_per_s"`
	Ops            int64   `json:"ops"`
	OpsPerSec      float64 `json:"ops_per_s"`
	ReadShare      float64 `json:"read_share"`
	CPU            CPUUse  `json:"cpu"`
	Err            string  `json:"error,omitempty"`
}

// paperTable3 is the paper's Table 3 (seconds) by barriers and clients.
var paperTable3 = map[int]map[int]float64{
	200:  {50: 9.4, 100: 19.8, 200: 41.0},
	400:  {50: 16.4, 100: 34.1, 200: 62.0},
	800:  {50: 28.9, 100: 55.9, 200: 112.1},
	1600: {50: 54.0, 100: 102.7, 200: 234.4},
}

func runBarrier(ctx context.Context, e *env) error {
	n := e.cfg.Sizes[0]
	var pts []BarrierPoint
	for _, t := range e.targets {
		shape := e.shape(n)
		err := e.withCluster(ctx, t, shape, func(c Cluster) error {
			for _, nc := range e.cfg.BarrierN {
				label := fmt.Sprintf("%s x%d barrier, %d clients × %d", t.Name(), n, nc, e.cfg.Rounds)
				e.prog.Stage("%s", label)
				p, err := runDoubleBarrier(ctx, c.Addrs(), nc, e.cfg.Rounds, e.prog, label)
				if err != nil {
					return fmt.Errorf("%d clients: %w", nc, err)
				}
				p.Target, p.Servers = t.Name(), n
				if t.Sharded() {
					p.Shards = shape.Shards
				}
				pts = append(pts, p)
				e.prog.Logf("%-40s %7.2f s  %7.0f barriers/s  %8.0f ops/s (%.0f%% reads)", label, p.Seconds,
					p.BarriersPerSec, p.OpsPerSec, 100*p.ReadShare)
			}
			return nil
		})
		if err != nil {
			e.fail(t, "barrier", err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return e.reportBarrier(pts)
}

// barrierClient is one participant: its own session and the watch events it has not consumed.
type barrierClient struct {
	c           *client.Conn
	name        string
	reads, ops  *atomic.Int64
	pendingPath map[string]bool // paths with an event received but not yet waited for
}

// runDoubleBarrier runs the ZooKeeper recipe's double barrier: every client enters barrier b,
// then leaves it, for rounds barriers in a row; it measures the time from the start until the
// last client left the last barrier.
func runDoubleBarrier(ctx context.Context, addrs []string, clients, rounds int, prog *Progress, label string) (BarrierPoint, error) {
	p := BarrierPoint{Clients: clients, Barriers: rounds}
	root := fmt.Sprintf("/bench-barrier-%d", time.Now().UnixNano())
	if err := ensureNode(ctx, addrs, root); err != nil {
		return p, err
	}
	// Pre-create the barrier nodes, pipelined.
	setup, err := client.Dial(ctx, addrs, client.Options{})
	if err != nil {
		return p, err
	}
	var wg sync.WaitGroup
	var setupErr atomic.Value
	wg.Add(rounds)
	for r := 0; r < rounds; r++ {
		setup.CreateAsync(fmt.Sprintf("%s/b%d", root, r), nil, wire.FlagPersistent, nil, func(_ string, _ wire.Stat, err error) {
			if err != nil && !errors.Is(err, wire.ErrNodeExists) {
				setupErr.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	setup.Close()
	if v := setupErr.Load(); v != nil {
		return p, v.(error)
	}
	var reads, ops atomic.Int64
	cs := make([]*barrierClient, clients)
	defer func() {
		for _, bc := range cs {
			if bc != nil {
				bc.c.Close()
			}
		}
	}()
	for i := range cs {
		c, err := client.Dial(ctx, rotate(addrs, i), client.Options{SessionTimeout: 10 * time.Second})
		if err != nil {
			return p, fmt.Errorf("client %d: %w", i, err)
		}
		cs[i] = &barrierClient{c: c, name: fmt.Sprintf("p%05d", i), reads: &reads, ops: &ops, pendingPath: map[string]bool{}}
	}
	var done atomic.Int64
	prog.Track(label+" (barriers)", done.Load)
	defer prog.Track("", nil)
	rctx, cancel := context.WithTimeout(ctx, time.Duration(rounds+30)*10*time.Second)
	defer cancel()
	a := sampleCPU()
	start := time.Now()
	errs := make(chan error, clients)
	for i, bc := range cs {
		go func() {
			for r := 0; r < rounds; r++ {
				b := fmt.Sprintf("%s/b%d", root, r)
				if err := bc.enter(rctx, b, clients); err != nil {
					errs <- fmt.Errorf("client %d entering %s: %w", i, b, err)
					cancel()
					return
				}
				if err := bc.leave(rctx, b); err != nil {
					errs <- fmt.Errorf("client %d leaving %s: %w", i, b, err)
					cancel()
					return
				}
				if i == 0 {
					done.Add(1)
				}
			}
			errs <- nil
		}()
	}
	var firstErr error
	for range cs {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	elapsed := time.Since(start)
	p.CPU = cpuBetween(a, sampleCPU())
	if firstErr != nil {
		return p, firstErr
	}
	p.Seconds = elapsed.Seconds()
	p.BarriersPerSec = float64(rounds) / p.Seconds
	p.Ops = ops.Load()
	p.OpsPerSec = float64(p.Ops) / p.Seconds
	if p.Ops > 0 {
		p.ReadShare = float64(reads.Load()) / float64(p.Ops)
	}
	return p, nil
}

// enter: watch for b/ready, create my ephemeral node, and if all clients are there create
// b/ready, else wait for it.
func (bc *barrierClient) enter(ctx context.Context, b string, n int) error {
	ready := b + "/ready"
	ok, _, err := bc.c.Exists(ctx, ready, true)
	bc.count(true)
	if err != nil {
		return err
	}
	if _, _, err := bc.c.Create(ctx, b+"/"+bc.name, nil, wire.FlagEphemeral, nil); err != nil {
		return err
	}
	bc.count(false)
	if ok {
		return nil
	}
	kids, _, err := bc.c.Children(ctx, b, false)
	bc.count(true)
	if err != nil {
		return err
	}
	if len(procNodes(kids)) >= n {
		_, _, err := bc.c.Create(ctx, ready, nil, wire.FlagPersistent, nil)
		bc.count(false)
		if err != nil && !errors.Is(err, wire.ErrNodeExists) {
			return err
		}
		return nil
	}
	return bc.waitEvent(ctx, ready)
}

// leave: the lowest node waits for the highest to go; the others delete themselves and wait for
// the lowest to go, until no process node is left.
func (bc *barrierClient) leave(ctx context.Context, b string) error {
	mine := b + "/" + bc.name
	deleted := false
	for {
		kids, _, err := bc.c.Children(ctx, b, false)
		bc.count(true)
		if err != nil {
			return err
		}
		ps := procNodes(kids)
		if len(ps) == 0 {
			return nil
		}
		present := false
		for _, k := range ps {
			if k == bc.name {
				present = true
			}
		}
		if len(ps) == 1 && present {
			err := bc.c.Delete(ctx, mine, -1)
			bc.count(false)
			if err != nil && !errors.Is(err, wire.ErrNoNode) {
				return err
			}
			return nil
		}
		var wait string
		if present && ps[0] == bc.name {
			wait = b + "/" + ps[len(ps)-1]
		} else {
			if present && !deleted {
				err := bc.c.Delete(ctx, mine, -1)
				bc.count(false)
				if err != nil && !errors.Is(err, wire.ErrNoNode) {
					return err
				}
				deleted = true
			}
			wait = b + "/" + ps[0]
		}
		ok, _, err := bc.c.Exists(ctx, wait, true)
		bc.count(true)
		if err != nil {
			return err
		}
		if ok {
			if err := bc.waitEvent(ctx, wait); err != nil {
				return err
			}
		}
	}
}

// waitEvent waits for a watch event on path; events on other paths (watches left from earlier
// steps) are remembered, so a later wait for them returns at once.
func (bc *barrierClient) waitEvent(ctx context.Context, path string) error {
	if bc.pendingPath[path] {
		delete(bc.pendingPath, path)
		return nil
	}
	for {
		select {
		case ev, ok := <-bc.c.Events():
			if !ok {
				return fmt.Errorf("session ended while waiting for %s: %w", path, bc.c.Err())
			}
			if ev.Type == wire.EventNone {
				continue
			}
			if ev.Path == path {
				return nil
			}
			bc.pendingPath[ev.Path] = true
		case <-ctx.Done():
			return fmt.Errorf("waiting for an event on %s: %w", path, ctx.Err())
		}
	}
}

func (bc *barrierClient) count(read bool) {
	bc.ops.Add(1)
	if read {
		bc.reads.Add(1)
	}
}

// procNodes returns the sorted participant names among a barrier's children.
func procNodes(kids []string) []string {
	out := make([]string, 0, len(kids))
	for _, k := range kids {
		if k != "ready" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (e *env) reportBarrier(pts []BarrierPoint) error {
	var rows [][]string
	for _, p := range pts {
		rows = append(rows, []string{p.Target, itoa(p.Servers), itoa(p.Shards), itoa(p.Clients), itoa(p.Barriers),
			ff(p.Seconds, 3), ff(p.BarriersPerSec, 2), fi(p.Ops), ff(p.OpsPerSec, 1), ff(p.ReadShare, 3),
			ff(p.CPU.GenCores, 3)})
	}
	header := []string{"target", "servers", "shards", "clients", "barriers", "seconds", "barriers_per_s", "ops",
		"ops_per_s", "read_share", "gen_cores"}
	if err := e.writeCSV("barrier.csv", header, rows); err != nil {
		return err
	}
	if err := e.writeJSON("barrier.json", pts); err != nil {
		return err
	}
	var fig figure
	fig.title = fmt.Sprintf("Double barrier: time for %d barriers (paper Table 3)", e.cfg.Rounds)
	fig.xlabel, fig.ylabel = "clients", "seconds"
	fig.series = append(fig.series, seriesByTarget(pts, func(p BarrierPoint) (string, int, float64, float64) {
		return p.Target, p.Servers, float64(p.Clients), p.Seconds
	})...)
	if ref, ok := paperTable3[e.cfg.Rounds]; ok {
		s := series{name: fmt.Sprintf("paper (2010), %d barriers", e.cfg.Rounds), target: "paper", points: true, dashed: true}
		for _, c := range []int{50, 100, 200} {
			s.xs = append(s.xs, float64(c))
			s.ys = append(s.ys, ref[c])
		}
		fig.series = append(fig.series, s)
	}
	if err := e.writePlot("barrier.png", fig); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Double barrier (Table 3), %d servers, %d barriers\n\n![barrier](barrier.png)\n\n", e.cfg.Sizes[0], e.cfg.Rounds)
	names := e.targetNames()
	header = []string{"clients"}
	for _, t := range names {
		header = append(header, t+" s", t+" barriers/s", t+" ops/s")
	}
	if len(names) == 2 {
		header = append(header, names[0]+"/"+names[1]+" time")
	}
	header = append(header, "paper s")
	rows = nil
	for _, nc := range e.cfg.BarrierN {
		row := []string{itoa(nc)}
		var vals []float64
		for _, t := range names {
			var found *BarrierPoint
			for i := range pts {
				if pts[i].Target == t && pts[i].Clients == nc {
					found = &pts[i]
				}
			}
			if found == nil {
				row = append(row, "not measured", "", "")
				vals = append(vals, 0)
				continue
			}
			row = append(row, ff(found.Seconds, 2), ff(found.BarriersPerSec, 1), kops(found.OpsPerSec))
			vals = append(vals, found.Seconds)
		}
		if len(names) == 2 {
			row = append(row, ratio(vals[0], vals[1]))
		}
		if v, ok := paperTable3[e.cfg.Rounds][nc]; ok {
			row = append(row, ff(v, 1))
		} else {
			row = append(row, "")
		}
		rows = append(rows, row)
	}
	b.WriteString(mdTable(header, rows))
	b.WriteString("\nPaper: barrier enter/leave at 1,950–3,100 barriers/s, i.e. 10,700–17,000 ZooKeeper ops/s at 4:1 reads to writes; time linear in barriers and clients.\n")
	e.section(b.String())
	return nil
}
