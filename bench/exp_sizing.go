package bench

import (
	"context"
	"fmt"
	"strings"
)

// runSizing measures every ensemble size × shard count twice: unthrottled (capacity) and paced
// at the target rate (achieved rate and p99 there), then recommends per target.
func runSizing(ctx context.Context, e *env) error {
	req := Requirement{TargetOps: e.cfg.TargetOps, P99: e.cfg.P99, Tolerance: 0.05, MinServers: e.cfg.MinServers}
	var pts []SizingPoint
	for _, t := range e.targets {
		shardsList := []int{1}
		if t.Sharded() && t.Managed() {
			shardsList = e.cfg.Shards
		}
		sizes := e.cfg.Sizes
		if !t.Managed() {
			sizes = []int{len(e.cfg.Servers)}
		}
		for _, n := range sizes {
			for _, sh := range shardsList {
				p := SizingPoint{Target: t.Name(), Servers: n, Shards: sh, TargetOps: req.TargetOps}
				err := e.withCluster(ctx, t, Shape{Servers: n, Shards: sh}, func(c Cluster) error {
					if err := e.prepareAndWarm(ctx, t, c); err != nil {
						return err
					}
					label := fmt.Sprintf("%s x%d, %d shards", t.Name(), n, sh)
					e.prog.Stage("%s: capacity", label)
					res, err := RunLoad(ctx, e.workload(c.Addrs(), e.cfg.ReadPct, label+" capacity"), e.prog)
					if err != nil {
						return err
					}
					p.CapacityOps, p.CapacityP99 = res.OpsPerSec, overallP99(res)
					e.prog.Stage("%s: at %.0f ops/s", label, req.TargetOps)
					w := e.workload(c.Addrs(), e.cfg.ReadPct, label+" paced")
					w.Rate = req.TargetOps
					res, err = RunLoad(ctx, w, e.prog)
					if err != nil {
						return err
					}
					p.AchievedOps, p.P99Ms, p.GenCores = res.OpsPerSec, overallP99(res), res.CPU.GenCores
					v := Judge(p, req)
					e.prog.Logf("%-32s capacity %8.0f ops/s | at target: %8.0f ops/s, p99 %6s ms → %s", label,
						p.CapacityOps, p.AchievedOps, msStr(p.P99Ms), v.Reason)
					return nil
				})
				if err != nil {
					p.Err = firstLine(err.Error())
					e.fail(t, fmt.Sprintf("sizing %d servers, %d shards", n, sh), err)
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
				pts = append(pts, p)
			}
		}
	}
	recs := Recommend(pts, req)
	return e.reportSizing(pts, recs, req)
}

// overallP99 is the larger of the read and write p99 (the bound applies to every request).
func overallP99(r *LoadResult) float64 {
	v := 0.0
	for _, s := range r.Latency {
		v = max(v, s.P99Ms)
	}
	return v
}

func (e *env) reportSizing(pts []SizingPoint, recs []Recommendation, req Requirement) error {
	var rows [][]string
	for _, p := range pts {
		rows = append(rows, []string{p.Target, itoa(p.Servers), itoa(p.Shards), ff(p.TargetOps, 0), ff(p.AchievedOps, 1),
			ff(p.P99Ms, 3), ff(p.CapacityOps, 1), ff(p.CapacityP99, 3), ff(p.GenCores, 3), p.Err})
	}
	header := []string{"target", "servers", "shards", "target_ops", "achieved_ops", "p99_ms", "capacity_ops",
		"capacity_p99_ms", "gen_cores", "error"}
	if err := e.writeCSV("sizing.csv", header, rows); err != nil {
		return err
	}
	if err := e.writeJSON("sizing.json", map[string]any{
		"requirement":     map[string]any{"read_pct": e.cfg.ReadPct, "target_ops": req.TargetOps, "p99_ms": float64(req.P99) / 1e6, "data_size": e.cfg.DataSize, "min_servers": req.MinServers},
		"points":          pts,
		"recommendations": recs,
	}); err != nil {
		return err
	}
	var fig figure
	fig.title = fmt.Sprintf("Capacity by configuration, %.0f%% reads, %d-byte data", e.cfg.ReadPct, e.cfg.DataSize)
	fig.xlabel, fig.ylabel = "shards", "ops/s (unthrottled)"
	type key struct {
		target  string
		servers int
	}
	var order []key
	byKey := map[key]*series{}
	maxShards := 1.0
	for _, p := range pts {
		if p.Err != "" {
			continue
		}
		k := key{p.Target, p.Servers}
		s, ok := byKey[k]
		if !ok {
			s = &series{name: fmt.Sprintf("%s, %d servers", p.Target, p.Servers), target: p.Target, points: true,
				dashed: p.Target == "zookeeper"}
			byKey[k] = s
			order = append(order, k)
		}
		s.xs = append(s.xs, float64(p.Shards))
		s.ys = append(s.ys, p.CapacityOps)
		maxShards = max(maxShards, float64(p.Shards))
	}
	for _, k := range order {
		fig.series = append(fig.series, *byKey[k])
	}
	fig.xmin, fig.xmax = fptr(0), fptr(maxShards+0.5)
	fig.hlines = append(fig.hlines, hline{y: req.TargetOps, label: fmt.Sprintf("target %.0f ops/s", req.TargetOps), target: "target"})
	if err := e.writePlot("sizing.png", fig); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Sizing: %.0f ops/s at %.0f%% reads, %d-byte data, p99 ≤ %v, at least %d servers\n\n![sizing](sizing.png)\n\n",
		req.TargetOps, e.cfg.ReadPct, e.cfg.DataSize, req.P99, req.MinServers)
	for _, r := range recs {
		verdict := "no recommendation"
		if r.Found {
			verdict = fmt.Sprintf("**%d servers, %d shards**", r.Best.Servers, r.Best.Shards)
		}
		fmt.Fprintf(&b, "- %s: %s — %s\n", r.Target, verdict, r.Reason)
	}
	b.WriteString("\n")
	rows = nil
	for _, r := range recs {
		for _, v := range r.Verdicts {
			p := v.Point
			ok := "no"
			if v.Meets {
				ok = "yes"
			}
			rows = append(rows, []string{p.Target, itoa(p.Servers), itoa(p.Shards), kops(p.AchievedOps), msStr(p.P99Ms),
				kops(p.CapacityOps), ok, v.Reason})
		}
	}
	b.WriteString(mdTable([]string{"target", "servers", "shards", "achieved ops/s", "p99 ms", "capacity ops/s", "meets", "why"}, rows))
	b.WriteString("\nEvery configuration runs on this one machine, so more servers share the same cores: on a 2-core machine larger ensembles measure slower than they would on their own machines.\n")
	e.section(b.String())
	return nil
}
