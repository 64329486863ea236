package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// CreatePoint is one row of Table 2.
type CreatePoint struct {
	Target        string  `json:"target"`
	Servers       int     `json:"servers"`
	Shards        int     `json:"shards"`
	Workers       int     `json:"workers"`
	Creates       int64   `json:"creates"`
	CreatesPerSec float64 `json:"creates_per_s"`
	Latency       Summary `json:"latency"`
	Errors        int64   `json:"errors"`
	CPU           CPUUse  `json:"cpu"`
}

// paperTable2 is the paper's Table 2 (creates/s) by servers and workers.
var paperTable2 = map[int]map[int]float64{
	3: {1: 776, 10: 2074, 20: 2740},
	5: {1: 748, 10: 1832, 20: 2336},
	7: {1: 758, 10: 1572, 20: 1934},
	9: {1: 711, 10: 1540, 20: 1890},
}

const createRoot = "/bench-create"

func runCreate(ctx context.Context, e *env) error {
	n := e.cfg.Sizes[0]
	var pts []CreatePoint
	for _, t := range e.targets {
		shape := e.shape(n)
		err := e.withCluster(ctx, t, shape, func(c Cluster) error {
			if err := ensureNode(ctx, c.Addrs(), createRoot); err != nil {
				return err
			}
			if e.cfg.ClusterWarmup > 0 {
				e.prog.Stage("%s: warming up (%v, not recorded)", t.Name(), e.cfg.ClusterWarmup)
				w := e.workload(c.Addrs(), 0, t.Name()+" warm-up")
				w.Mode, w.CreateRoot = ModeCreate, createRoot
				w.Clients, w.Outstanding, w.Warmup, w.Duration = max(e.cfg.Workers[len(e.cfg.Workers)-1], 1), 1, 0, e.cfg.ClusterWarmup
				if _, err := RunLoad(ctx, w, e.prog); err != nil {
					return fmt.Errorf("warm-up: %w", err)
				}
			}
			for _, wn := range e.cfg.Workers {
				label := fmt.Sprintf("%s x%d create, %d workers", t.Name(), n, wn)
				e.prog.Stage("%s", label)
				w := e.workload(c.Addrs(), 0, label)
				w.Mode, w.CreateRoot = ModeCreate, createRoot
				w.Clients, w.Outstanding = wn, e.cfg.Outstanding
				res, err := RunLoad(ctx, w, e.prog)
				if err != nil {
					return fmt.Errorf("%d workers: %w", wn, err)
				}
				p := CreatePoint{Target: t.Name(), Servers: n, Workers: wn, Creates: res.Ops,
					CreatesPerSec: res.OpsPerSec, Latency: res.Latency["create"], Errors: res.Errors, CPU: res.CPU}
				if t.Sharded() {
					p.Shards = shape.Shards
				}
				pts = append(pts, p)
				e.prog.Logf("%-36s %8.0f creates/s  mean %6s ms  p99 %6s ms", label, p.CreatesPerSec,
					msStr(p.Latency.MeanMs), msStr(p.Latency.P99Ms))
			}
			return nil
		})
		if err != nil {
			e.fail(t, "create", err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return e.reportCreate(pts)
}

// ensureNode creates path (persistent, empty) unless it exists.
func ensureNode(ctx context.Context, addrs []string, path string) error {
	c, err := client.Dial(ctx, addrs, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, _, err := c.Create(cctx, path, nil, wire.FlagPersistent, nil); err != nil && !errors.Is(err, wire.ErrNodeExists) {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	return nil
}

func (e *env) reportCreate(pts []CreatePoint) error {
	var rows [][]string
	for _, p := range pts {
		rows = append(rows, []string{p.Target, itoa(p.Servers), itoa(p.Shards), itoa(p.Workers), fi(p.Creates),
			ff(p.CreatesPerSec, 1), ff(p.Latency.MeanMs, 3), ff(p.Latency.P50Ms, 3), ff(p.Latency.P99Ms, 3),
			ff(p.Latency.P999Ms, 3), fi(p.Errors), ff(p.CPU.GenCores, 3)})
	}
	header := []string{"target", "servers", "shards", "workers", "creates", "creates_per_s", "mean_ms", "p50_ms",
		"p99_ms", "p999_ms", "errors", "gen_cores"}
	if err := e.writeCSV("create.csv", header, rows); err != nil {
		return err
	}
	if err := e.writeJSON("create.json", pts); err != nil {
		return err
	}
	var fig figure
	fig.title = "Create throughput, one synchronous create per worker (paper Table 2)"
	fig.xlabel, fig.ylabel = "workers", "creates per second"
	fig.series = append(fig.series, seriesByTarget(pts, func(p CreatePoint) (string, int, float64, float64) {
		return p.Target, p.Servers, float64(p.Workers), p.CreatesPerSec
	})...)
	if ref, ok := paperTable2[e.cfg.Sizes[0]]; ok {
		s := series{name: fmt.Sprintf("paper (2010), %d servers", e.cfg.Sizes[0]), target: "paper", points: true, dashed: true}
		for _, w := range []int{1, 10, 20} {
			s.xs = append(s.xs, float64(w))
			s.ys = append(s.ys, ref[w])
		}
		fig.series = append(fig.series, s)
	}
	if err := e.writePlot("create.png", fig); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Create latency (Table 2), %d servers\n\n![create](create.png)\n\n", e.cfg.Sizes[0])
	b.WriteString("Each worker issues a create of a 1 KiB node, waits for it, sends an asynchronous delete of the new node and starts the next create.\n\n")
	names := e.targetNames()
	header = []string{"workers"}
	for _, t := range names {
		header = append(header, t+" creates/s", t+" mean ms", t+" p99 ms")
	}
	if len(names) == 2 {
		header = append(header, names[1]+"/"+names[0])
	}
	header = append(header, "paper creates/s")
	rows = nil
	for _, w := range e.cfg.Workers {
		row := []string{itoa(w)}
		var vals []float64
		for _, t := range names {
			var found *CreatePoint
			for i := range pts {
				if pts[i].Target == t && pts[i].Workers == w {
					found = &pts[i]
				}
			}
			if found == nil {
				row = append(row, "not measured", "", "")
				vals = append(vals, 0)
				continue
			}
			row = append(row, ff(found.CreatesPerSec, 0), msStr(found.Latency.MeanMs), msStr(found.Latency.P99Ms))
			vals = append(vals, found.CreatesPerSec)
		}
		if len(names) == 2 {
			row = append(row, ratio(vals[1], vals[0]))
		}
		if v, ok := paperTable2[e.cfg.Sizes[0]][w]; ok {
			row = append(row, ff(v, 0))
		} else {
			row = append(row, "")
		}
		rows = append(rows, row)
	}
	b.WriteString(mdTable(header, rows))
	b.WriteString("\nPaper: one worker's throughput implies 1.2 ms mean latency with 3 servers, 1.4 ms with 9.\n")
	e.section(b.String())
	return nil
}
