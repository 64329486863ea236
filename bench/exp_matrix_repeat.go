package bench

import (
	"fmt"
	"slices"
	"strings"
)

// A matrix run more than once (--repeat N). On a shared 2-core machine one run's ratio of a row
// moves by a third or more from run to run, for ZooKeeper's numbers as much as for Corral's
// (docs/benchmarks.md, "How much one run says"), so a single run can put a row on either side
// of a threshold. With --repeat the whole matrix runs N times, each run exactly as a single
// one (fresh ensembles per part, both targets measured row by row, side by side); the summary
// then gives each row's median per target, the median of the runs' ratios (each run's ratio
// compares numbers measured seconds apart on the same machine, which is what a ratio is for),
// and every run's ratio, so the spread is in plain sight. A run that failed a row leaves that
// run's ratio out of the row. Rows of one run carry its number in MatrixRow.Rep.

// matrixReps returns the runs present in rows, in order: [0] for a matrix run once.
func matrixReps(rows []MatrixRow) []int {
	var reps []int
	for _, r := range rows {
		if !slices.Contains(reps, r.Rep) {
			reps = append(reps, r.Rep)
		}
	}
	slices.Sort(reps)
	if len(reps) == 0 {
		reps = []int{0}
	}
	return reps
}

// repeated reports whether rows come from more than one run of the matrix.
func repeated(rows []MatrixRow) bool { return len(matrixReps(rows)) > 1 }

// findRepRow returns a target's row of one run (MatrixRow.Rep).
func findRepRow(rows []MatrixRow, target string, servers, row, rep int) (MatrixRow, bool) {
	for _, r := range rows {
		if r.Target == target && r.Servers == servers && r.Row == row && r.Rep == rep {
			return r, true
		}
	}
	return MatrixRow{}, false
}

// rowRatio is one run's ratio of a row (> 1: the second target did better); false when either
// target has no value.
func rowRatio(s matrixSpec, first, second MatrixRow) (float64, bool) {
	a, b := okValue(first), okValue(second)
	if a <= 0 || b <= 0 {
		return 0, false
	}
	if s.lowerBetter {
		return a / b, true
	}
	return b / a, true
}

// runRatios returns a row's ratio in each run where both targets measured it, in run order.
func runRatios(rows []MatrixRow, names []string, n int, s matrixSpec) []float64 {
	if len(names) != 2 {
		return nil
	}
	var out []float64
	for _, rep := range matrixReps(rows) {
		a, okA := findRepRow(rows, names[0], n, s.row, rep)
		b, okB := findRepRow(rows, names[1], n, s.row, rep)
		if !okA || !okB {
			continue
		}
		if r, ok := rowRatio(s, a, b); ok {
			out = append(out, r)
		}
	}
	return out
}

// medianRow returns a target's row with the median of its runs' values (and of row 1's p99),
// its errors summed; false when no run measured it. A row every run failed keeps the first
// failure.
func medianRow(rows []MatrixRow, target string, n, row int) (MatrixRow, bool) {
	var runs []MatrixRow
	for _, r := range rows {
		if r.Target == target && r.Servers == n && r.Row == row {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return MatrixRow{}, false
	}
	var vals, p99s []float64
	var errs int64
	for _, r := range runs {
		if r.Err != "" {
			continue
		}
		vals = append(vals, r.Value)
		p99s = append(p99s, r.P99Ms)
		errs += r.Errors
	}
	if len(vals) == 0 {
		return runs[0], true
	}
	m := runs[0]
	m.Err, m.Value, m.P99Ms, m.Errors = "", median(vals), median(p99s), errs
	return m, true
}

// median of v (the mean of the middle two for an even count); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratiosText lists ratios as the table shows them: "1.16×, 1.49×, 1.73×".
func ratiosText(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	parts := make([]string, len(v))
	for i, r := range v {
		parts[i] = fmt.Sprintf("%.2f×", r)
	}
	return strings.Join(parts, ", ")
}

// repeatedCounts says how many rows reach the 1.5× target by their median ratio and in every
// run.
func repeatedCounts(rows []MatrixRow, names []string, n int, specs []matrixSpec) string {
	var byMedian, every, measured int
	for _, s := range specs {
		rs := runRatios(rows, names, n, s)
		if len(rs) == 0 {
			continue
		}
		measured++
		if median(rs) >= matrixTarget {
			byMedian++
		}
		if slices.Min(rs) >= matrixTarget {
			every++
		}
	}
	return fmt.Sprintf("Rows at %.1f× or more: %d of %d by the median of the runs' ratios, %d of %d in every run.\n\n",
		matrixTarget, byMedian, measured, every, measured)
}
