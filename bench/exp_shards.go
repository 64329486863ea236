package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/corral/corral/internal/corralproc"
)

// ShardsPoint is one point of the shards experiment.
type ShardsPoint struct {
	Target       string  `json:"target"`
	Servers      int     `json:"servers"`
	Shards       int     `json:"shards"`
	ApplyDelayMs float64 `json:"apply_delay_ms"`
	ReadPct      float64 `json:"read_pct"`
	OpsPerSec    float64 `json:"ops_per_s"`
	WritesPerSec float64 `json:"writes_per_s"`
	Write        Summary `json:"write_latency"`
	Errors       int64   `json:"errors"`
	CPU          CPUUse  `json:"cpu"`
}

// checkDelayBinary fails the experiment before its first run when --delay is asked of a Corral
// the benchmark starts and its binary is a production build, which ignores the apply delay
// knob.
func checkDelayBinary(ctx context.Context, e *env) error {
	for _, t := range e.targets {
		if t.Name() != "corral" || !t.Managed() {
			continue
		}
		bin, err := FindCorralBinary(e.cfg.CorralBin)
		if err != nil {
			return err
		}
		if err := corralproc.CheckTestingBinary(ctx, bin); err != nil {
			return fmt.Errorf("bench: --delay: %w", err)
		}
	}
	return nil
}

func runShards(ctx context.Context, e *env) error {
	n := e.cfg.Sizes[0]
	delays := []time.Duration{0}
	if e.cfg.Delay > 0 {
		delays = append(delays, e.cfg.Delay)
		if err := checkDelayBinary(ctx, e); err != nil {
			return err
		}
	}
	var pts []ShardsPoint
	for _, t := range e.targets {
		type cfgPoint struct {
			shards int
			delay  time.Duration
		}
		var cfgs []cfgPoint
		if t.Sharded() && t.Managed() {
			for _, d := range delays {
				for _, s := range e.cfg.Shards {
					cfgs = append(cfgs, cfgPoint{s, d})
				}
			}
		} else {
			// One replication group: the reference line. No delay can be injected.
			cfgs = []cfgPoint{{1, 0}}
		}
		for _, cp := range cfgs {
			shape := Shape{Servers: n, Shards: cp.shards, ApplyDelay: cp.delay}
			err := e.withCluster(ctx, t, shape, func(c Cluster) error {
				if err := e.prepareAndWarm(ctx, t, c); err != nil {
					return err
				}
				label := fmt.Sprintf("%s x%d, %d shards", t.Name(), n, cp.shards)
				if cp.delay > 0 {
					label += fmt.Sprintf(", delay %v", cp.delay)
				}
				e.prog.Stage("%s", label)
				res, err := RunLoad(ctx, e.workload(c.Addrs(), e.cfg.ReadPct, label), e.prog)
				if err != nil {
					return err
				}
				p := ShardsPoint{Target: t.Name(), Servers: n, Shards: cp.shards, ApplyDelayMs: float64(cp.delay) / 1e6,
					ReadPct: e.cfg.ReadPct, OpsPerSec: res.OpsPerSec, WritesPerSec: res.WritesPerSec,
					Write: res.Latency["write"], Errors: res.Errors, CPU: res.CPU}
				pts = append(pts, p)
				e.prog.Logf("%-40s %8.0f writes/s  p99 %6s ms  generator %.2f cores", label, p.WritesPerSec,
					msStr(p.Write.P99Ms), p.CPU.GenCores)
				return nil
			})
			if err != nil {
				e.fail(t, fmt.Sprintf("shards=%d delay=%v", cp.shards, cp.delay), err)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	return e.reportShards(pts)
}

func (e *env) reportShards(pts []ShardsPoint) error {
	var rows [][]string
	for _, p := range pts {
		rows = append(rows, []string{p.Target, itoa(p.Servers), itoa(p.Shards), ff(p.ApplyDelayMs, 3), ff(p.ReadPct, 0),
			ff(p.OpsPerSec, 1), ff(p.WritesPerSec, 1), ff(p.Write.P50Ms, 3), ff(p.Write.P99Ms, 3), fi(p.Errors),
			ff(p.CPU.GenCores, 3)})
	}
	header := []string{"target", "servers", "shards", "apply_delay_ms", "read_pct", "ops_per_s", "writes_per_s",
		"write_p50_ms", "write_p99_ms", "errors", "gen_cores"}
	if err := e.writeCSV("shards.csv", header, rows); err != nil {
		return err
	}
	if err := e.writeJSON("shards.json", pts); err != nil {
		return err
	}
	var fig figure
	fig.title = fmt.Sprintf("Write throughput vs. shards, %d servers, %.0f%% reads", e.cfg.Sizes[0], e.cfg.ReadPct)
	fig.xlabel, fig.ylabel = "shards (corral.shards)", "writes per second"
	maxShards := 1.0
	for _, s := range e.cfg.Shards {
		maxShards = max(maxShards, float64(s))
	}
	fig.xmin, fig.xmax = fptr(0), fptr(maxShards+0.5)
	type key struct {
		target string
		delay  float64
	}
	var order []key
	byKey := map[key]*series{}
	for _, p := range pts {
		if p.Target == "zookeeper" || p.Target == "external" {
			fig.hlines = append(fig.hlines, hline{y: p.WritesPerSec, label: p.Target + " (one group)", target: p.Target})
			continue
		}
		k := key{p.Target, p.ApplyDelayMs}
		s, ok := byKey[k]
		if !ok {
			name := p.Target
			if p.ApplyDelayMs > 0 {
				name += fmt.Sprintf(", applyDelay %.3g ms", p.ApplyDelayMs)
			}
			s = &series{name: name, target: p.Target, points: true, dashed: p.ApplyDelayMs > 0}
			byKey[k] = s
			order = append(order, k)
		}
		s.xs = append(s.xs, float64(p.Shards))
		s.ys = append(s.ys, p.WritesPerSec)
	}
	for _, k := range order {
		fig.series = append(fig.series, *byKey[k])
	}
	if err := e.writePlot("shards.png", fig); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Write throughput vs. shards, %d servers\n\n![shards](shards.png)\n\n", e.cfg.Sizes[0])
	if e.cfg.Delay > 0 {
		fmt.Fprintf(&b, "**An apply delay was injected** in the dashed series: every replica spent %v per applied write op (a test knob of a corraltesting build), which makes each shard's commit latency-bound so that added shards can overlap their commits even on few cores. Apache ZooKeeper has no such knob and runs without it.\n\n", e.cfg.Delay)
	}
	rows = nil
	for _, p := range pts {
		d := "none"
		if p.ApplyDelayMs > 0 {
			d = ff(p.ApplyDelayMs, 3) + " ms"
		}
		rows = append(rows, []string{p.Target, itoa(p.Shards), d, kops(p.WritesPerSec), msStr(p.Write.P50Ms), msStr(p.Write.P99Ms),
			ff(p.CPU.GenCores, 2)})
	}
	b.WriteString(mdTable([]string{"target", "shards", "apply delay", "writes/s", "p50 ms", "p99 ms", "gen cores"}, rows))
	e.section(b.String())
	return nil
}
