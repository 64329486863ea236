package bench

import (
	"context"
	"fmt"
	"strings"
)

// ThroughputPoint is one data point of the throughput experiment.
type ThroughputPoint struct {
	Target       string  `json:"target"`
	Servers      int     `json:"servers"`
	Shards       int     `json:"shards"`
	ReadPct      float64 `json:"read_pct"`
	Clients      int     `json:"clients"`
	Outstanding  int     `json:"outstanding"`
	OpsPerSec    float64 `json:"ops_per_s"`
	ReadsPerSec  float64 `json:"reads_per_s"`
	WritesPerSec float64 `json:"writes_per_s"`
	Read         Summary `json:"read_latency"`
	Write        Summary `json:"write_latency"`
	Errors       int64   `json:"errors"`
	CPU          CPUUse  `json:"cpu"`
	Err          string  `json:"error,omitempty"`
}

// paperFig5 holds the ZooKeeper paper's saturated throughput (ops/s) by servers and read %
// (Table 1 for 0/100 %, Figure 5 read off the plot otherwise; see
// shared/reference/performance-anchors.md §1.2–1.3). 2010 hardware: dual-core Xeons, 250 clients.
var paperFig5 = map[int]map[float64]float64{
	3:  {0: 21000, 50: 38000, 90: 70000, 100: 87000},
	5:  {0: 18000, 50: 34000, 100: 165000},
	7:  {0: 14000, 50: 28500, 100: 257000},
	9:  {0: 12000, 50: 24000, 90: 87000, 100: 296000},
	13: {0: 8000, 50: 16300, 90: 60500, 100: 460000},
}

func runThroughput(ctx context.Context, e *env) error {
	var pts []ThroughputPoint
	for _, n := range e.cfg.Sizes {
		for _, t := range e.targets {
			shape := e.shape(n)
			err := e.withCluster(ctx, t, shape, func(c Cluster) error {
				if err := e.prepareAndWarm(ctx, t, c); err != nil {
					return err
				}
				for _, r := range e.cfg.ReadPcts {
					label := fmt.Sprintf("%s x%d %3.0f%% reads", t.Name(), n, r)
					e.prog.Stage("%s", label)
					res, err := RunLoad(ctx, e.workload(c.Addrs(), r, label), e.prog)
					if err != nil {
						return fmt.Errorf("%.0f%% reads: %w", r, err)
					}
					p := ThroughputPoint{
						Target: t.Name(), Servers: n, ReadPct: r, Clients: e.cfg.Clients,
						Outstanding: e.cfg.Outstanding, OpsPerSec: res.OpsPerSec, ReadsPerSec: res.ReadsPerSec,
						WritesPerSec: res.WritesPerSec, Read: res.Latency["read"], Write: res.Latency["write"],
						Errors: res.Errors, CPU: res.CPU,
					}
					if t.Sharded() {
						p.Shards = shape.Shards
					}
					pts = append(pts, p)
					e.prog.Logf("%-34s %9.0f ops/s  read p99 %6s ms  write p99 %6s ms  generator %.2f cores (%.0f%% of busy CPU)",
						label, p.OpsPerSec, msStr(p.Read.P99Ms), msStr(p.Write.P99Ms), p.CPU.GenCores, 100*p.CPU.GenShare)
				}
				return nil
			})
			if err != nil {
				e.fail(t, fmt.Sprintf("throughput with %d servers", n), err)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	return e.reportThroughput(pts)
}

func (e *env) reportThroughput(pts []ThroughputPoint) error {
	header := []string{"target", "servers", "shards", "read_pct", "clients", "outstanding", "ops_per_s",
		"reads_per_s", "writes_per_s", "read_p50_ms", "read_p99_ms", "read_p999_ms", "write_p50_ms",
		"write_p99_ms", "write_p999_ms", "errors", "gen_cores", "machine_busy", "gen_share"}
	var rows [][]string
	for _, p := range pts {
		rows = append(rows, []string{p.Target, itoa(p.Servers), itoa(p.Shards), ff(p.ReadPct, 0),
			itoa(p.Clients), itoa(p.Outstanding), ff(p.OpsPerSec, 1), ff(p.ReadsPerSec, 1), ff(p.WritesPerSec, 1),
			ff(p.Read.P50Ms, 3), ff(p.Read.P99Ms, 3), ff(p.Read.P999Ms, 3),
			ff(p.Write.P50Ms, 3), ff(p.Write.P99Ms, 3), ff(p.Write.P999Ms, 3),
			fi(p.Errors), ff(p.CPU.GenCores, 3), ff(p.CPU.MachineBusy, 3), ff(p.CPU.GenShare, 3)})
	}
	if err := e.writeCSV("throughput.csv", header, rows); err != nil {
		return err
	}
	if err := e.writeJSON("throughput.json", pts); err != nil {
		return err
	}
	// Figure 5: throughput vs % reads, one curve per target and size.
	var fig figure
	fig.title = "Saturated throughput vs. read ratio (paper Figure 5)"
	fig.xlabel, fig.ylabel = "% read requests", "operations per second"
	fig.xmin, fig.xmax = fptr(-2), fptr(102)
	type key struct {
		target  string
		servers int
	}
	var keys []key
	byKey := map[key][]ThroughputPoint{}
	for _, p := range pts {
		k := key{p.Target, p.Servers}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	for _, k := range keys {
		s := series{name: fmt.Sprintf("%s, %d servers", k.target, k.servers), target: k.target, points: true,
			dashed: k.target == "zookeeper"}
		for _, p := range byKey[k] {
			s.xs = append(s.xs, p.ReadPct)
			s.ys = append(s.ys, p.OpsPerSec)
		}
		fig.series = append(fig.series, s)
	}
	if err := e.writePlot("throughput.png", fig); err != nil {
		return err
	}

	// Summary: one table per size, ZooKeeper and Corral side by side, the paper beside.
	var b strings.Builder
	b.WriteString("## Throughput (Table 1, Figure 5)\n\n![throughput](throughput.png)\n\n")
	names := e.targetNames()
	for _, n := range e.cfg.Sizes {
		fmt.Fprintf(&b, "### %d servers\n\n", n)
		header := []string{"% reads"}
		for _, t := range names {
			header = append(header, t+" ops/s", t+" read p99 ms", t+" write p99 ms", t+" gen CPU")
		}
		if len(names) == 2 {
			header = append(header, names[1]+"/"+names[0])
		}
		header = append(header, "paper (2010)")
		var rows [][]string
		for _, r := range e.cfg.ReadPcts {
			row := []string{ff(r, 0)}
			var vals []float64
			for _, t := range names {
				p, ok := findTP(pts, t, n, r)
				if !ok {
					row = append(row, "not measured", "", "", "")
					vals = append(vals, 0)
					continue
				}
				row = append(row, kops(p.OpsPerSec), msStr(p.Read.P99Ms), msStr(p.Write.P99Ms),
					fmt.Sprintf("%.2f cores", p.CPU.GenCores))
				vals = append(vals, p.OpsPerSec)
			}
			if len(names) == 2 {
				row = append(row, ratio(vals[1], vals[0]))
			}
			if v, ok := paperFig5[n][r]; ok {
				row = append(row, kops(v))
			} else {
				row = append(row, "")
			}
			rows = append(rows, row)
		}
		b.WriteString(mdTable(header, rows))
		b.WriteString("\n")
	}
	b.WriteString("gen CPU: the load generator's own CPU (user+system) over the window, in cores; compare with the machine's core count to judge whether the generator limited the run.\n")
	e.section(b.String())
	return nil
}

func findTP(pts []ThroughputPoint, target string, servers int, r float64) (ThroughputPoint, bool) {
	for _, p := range pts {
		if p.Target == target && p.Servers == servers && p.ReadPct == r {
			return p, true
		}
	}
	return ThroughputPoint{}, false
}

func (e *env) targetNames() []string {
	var out []string
	for _, t := range e.targets {
		out = append(out, t.Name())
	}
	return out
}
