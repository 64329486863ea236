package bench

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// reportMatrix writes matrix.csv, matrix.json and, per ensemble size, the summary's tables:
// one line per row with the targets side by side and the ratio (> 1: the second target, Corral
// in a `both` run, better), then the details behind each number; with two targets also
// matrix.png, the ratios against the 1.5× target (plotMatrix).
func (e *env) reportMatrix(rows []MatrixRow) error {
	header := []string{"target", "servers", "shards", "row", "name", "client", "metric", "value", "p99_ms", "ops",
		"seconds", "ops_per_s", "read_p50_ms", "read_p99_ms", "write_p50_ms", "write_p99_ms", "create_p50_ms",
		"create_p99_ms", "errors", "gen_cores", "machine_busy", "gen_share", "rss_before_kb", "rss_after_kb", "note",
		"error", "rep"}
	var csvRows [][]string
	for _, r := range rows {
		rd, wr, cr := r.Latency["read"], r.Latency["write"], r.Latency["create"]
		csvRows = append(csvRows, []string{r.Target, itoa(r.Servers), itoa(r.Shards), itoa(r.Row), r.Name, r.Client,
			r.Metric, ff(r.Value, 4), ff(r.P99Ms, 3), fi(r.Ops), ff(r.Seconds, 3), ff(r.OpsPerSec, 1),
			ff(rd.P50Ms, 3), ff(rd.P99Ms, 3), ff(wr.P50Ms, 3), ff(wr.P99Ms, 3), ff(cr.P50Ms, 3), ff(cr.P99Ms, 3),
			fi(r.Errors), ff(r.CPU.GenCores, 3), ff(r.CPU.MachineBusy, 3), ff(r.CPU.GenShare, 3),
			joinInts(r.RSSBeforeKB), joinInts(r.RSSAfterKB), r.Note, r.Err, itoa(r.Rep)})
	}
	if err := e.writeCSV("matrix.csv", header, csvRows); err != nil {
		return err
	}
	if err := e.writeJSON("matrix.json", rows); err != nil {
		return err
	}
	names := e.targetNames()
	for _, n := range e.cfg.Sizes {
		md := e.matrixSection(rows, names, n)
		png, err := e.plotMatrix(rows, names, n)
		if err != nil {
			return err
		}
		if png != "" {
			md += fmt.Sprintf("\n![ratio per row, %d servers](%s)\n", n, png)
		}
		e.section(md)
	}
	return nil
}

func (e *env) matrixSection(rows []MatrixRow, names []string, n int) string {
	cfg := e.cfg
	var b strings.Builder
	plural := "s"
	if n == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "## The everyday matrix, %d server%s\n\n", n, plural)
	fmt.Fprintf(&b, "Clients: each row names its client. go-zookeeper is %s: blocking calls, one goroutine per call in flight, "+
		"concurrent calls on one session pipelined by go-zookeeper itself (rows 3-7: as many goroutines per session as requests in flight; "+
		"rows 8-10: one `*zk.Conn`, with server 1, shared by %d goroutines). "+
		"\"corral client\" is Corral's pipelined client (`client/`, as `throughput`), used where go-zookeeper's own CPU would be the limit (`--mixed-client`). "+
		"%d-byte values unless said; per row a %v warm-up and a %v window (rows 10, 12 and 14: the total time; row 13: %v held idle). "+
		"Rows 1-9 ran on one ensemble per target, rows 10-14 on a second, fresh one (rows 12-14 on the same sessions, one target after the other); the targets' ensembles ran side by side, "+
		"each row was measured on every target before the next row, and the ensemble not being measured was paused (SIGSTOP) "+
		"and continued before its own row, which started once every server served a session and a write on every shard. "+
		"Corral: corral.shards=%d, hash placement (as `corral local`); both targets: globalOutstandingLimit=2000, maxClientCnxns=0.\n\n",
		goZKVersion(), cfg.SessionInflight, cfg.DataSize, cfg.Warmup, cfg.Duration, idleHold(cfg), cfg.CorralShards)
	reps := matrixReps(rows)
	many := len(reps) > 1
	if many {
		fmt.Fprintf(&b, "The matrix ran %d times, each run as described (fresh ensembles, the targets side by side row by row). "+
			"Each target's cell is the median of its runs (row 1: the median p50 / the median p99), the ratio the median of the runs' ratios, "+
			"and the last column every run's ratio in run order; a run that failed a row has no ratio there.\n\n", len(reps))
	}
	header := []string{"row"}
	for _, t := range names {
		if many {
			header = append(header, displayName(t)+", median")
		} else {
			header = append(header, displayName(t))
		}
	}
	two := len(names) == 2
	if two {
		header = append(header, fmt.Sprintf("ratio (>1: %s better)", displayName(names[1])))
		if many {
			header = append(header, "each run's ratio")
		}
	}
	var table [][]string
	for _, s := range e.matrixRows() {
		line := []string{fmt.Sprintf("%d. %s", s.row, s.label(cfg))}
		if c := s.clientOf(cfg); c != clientNone {
			line[0] += " [" + clientName(c) + "]"
		}
		for _, t := range names {
			// A single run's row is its own median.
			if r, ok := medianRow(rows, t, n, s.row); ok {
				line = append(line, matrixCell(s, r))
			} else {
				line = append(line, "not measured")
			}
		}
		if two {
			rs := runRatios(rows, names, n, s)
			if len(rs) == 0 {
				line = append(line, "–")
			} else {
				line = append(line, fmt.Sprintf("%.2f×", median(rs)))
			}
			if many {
				line = append(line, ratiosText(rs))
			}
		}
		table = append(table, line)
	}
	b.WriteString(mdTable(header, table))
	b.WriteString("\nThroughput rows count completed operations per second of the window; ratios: throughput Corral/ZooKeeper, " +
		"latency, seconds and KB ZooKeeper/Corral, so > 1 always means Corral did better.\n\n")
	if many && two {
		b.WriteString(repeatedCounts(rows, names, n, e.matrixRows()))
	}

	b.WriteString("### Details\n\n")
	var det [][]string
	var notes []string
	for _, s := range e.matrixRows() {
		for _, rep := range reps {
			for _, t := range names {
				r, ok := findRepRow(rows, t, n, s.row, rep)
				if !ok {
					continue
				}
				who := displayName(t)
				if many {
					who = fmt.Sprintf("%s, run %d", who, rep)
				}
				if r.Err != "" {
					det = append(det, []string{itoa(s.row), who, clientName(r.Client), "failed: " + mdEscape(firstLine(r.Err)),
						"", "", "", "", ""})
					continue
				}
				det = append(det, []string{itoa(s.row), who, clientName(r.Client), fi(r.Ops), ff(r.Seconds, 2),
					latencyText(r), fi(r.Errors), ff(r.CPU.GenCores, 2), ff(100*r.CPU.MachineBusy, 0) + " %"})
				if r.Note != "" {
					notes = append(notes, fmt.Sprintf("- row %d, %s: %s", s.row, who, r.Note))
				}
				if r.ErrorSample != "" {
					notes = append(notes, fmt.Sprintf("- row %d, %s: first error: %s", s.row, who,
						mdEscape(r.ErrorSample)))
				}
			}
		}
	}
	b.WriteString(mdTable([]string{"row", "target", "client", "ops", "seconds", "p50 / p99 ms", "errors",
		"generator cores", "machine busy"}, det))
	b.WriteString("\nops: operations counted in the window (rows 10, 12 and 14: all; row 13: the sessions held); seconds: the window or the total; " +
		"generator cores: the benchmark process's own CPU (user+system) over the window, on a machine with " +
		fmt.Sprintf("%d cores", runtime.NumCPU()) + "; machine busy: all of the machine's CPUs. Row 12's latency is open a session + create, row 14's a close " +
		"(go-zookeeper waits at most 1 s for its reply: a close that took longer counts as an error).\n")
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	return b.String()
}

// matrixCell formats a row's value for the main table.
func matrixCell(s matrixSpec, r MatrixRow) string {
	if r.Err != "" {
		return "failed"
	}
	var v string
	switch s.unit {
	case "ms":
		v = msStr(r.Value) + " / " + msStr(r.P99Ms) + " ms"
	case "/s":
		v = kops(r.Value) + "/s"
	case "s":
		if r.Value < 10 {
			v = ff(r.Value, 2) + " s"
		} else {
			v = ff(r.Value, 1) + " s"
		}
	case "KB":
		v = ff(r.Value, 2) + " KB"
	case "cores":
		v = ff(r.Value, 2) + " cores"
	default:
		v = ff(r.Value, 2)
	}
	if r.Errors > 0 {
		v += fmt.Sprintf(" (%d errors)", r.Errors)
	}
	return v
}

// okValue is the row's value for a ratio: 0 (no ratio) when it failed.
func okValue(r MatrixRow) float64 {
	if r.Err != "" {
		return 0
	}
	return r.Value
}

// latencyText is "kind p50 / p99" for each op kind the row recorded.
func latencyText(r MatrixRow) string {
	var parts []string
	for _, k := range kindNames {
		if l, ok := r.Latency[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %s / %s", k, msStr(l.P50Ms), msStr(l.P99Ms)))
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

func displayName(target string) string {
	switch target {
	case "zookeeper":
		return "ZooKeeper"
	case "corral":
		return "Corral"
	}
	return target
}

func clientName(c string) string {
	if c == clientCorral {
		return "corral client"
	}
	return c
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func joinInts(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fi(x)
	}
	return strings.Join(parts, ";")
}

// goZKVersion names the go-zookeeper module this binary was built with.
func goZKVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/go-zookeeper/zk" {
				return "go-zookeeper " + d.Version
			}
		}
	}
	return "go-zookeeper"
}
