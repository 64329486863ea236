package bench

import (
	"fmt"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// matrixTarget is the ratio every row of the matrix is to reach (issue "every row >= 1.5x").
const matrixTarget = 1.5

// matrixRatios returns, for a run of two targets, each row's ratio (> 1: the second target did
// better, as in the summary's table) in row order, with the row numbers; a row without a value
// on either target is left out. For a matrix run several times (--repeat) it is the median of
// the runs' ratios.
func (e *env) matrixRatios(rows []MatrixRow, names []string, n int) (rowNums []int, ratios []float64) {
	if len(names) != 2 {
		return nil, nil
	}
	for _, s := range e.matrixRows() {
		rs := runRatios(rows, names, n, s)
		if len(rs) == 0 {
			continue
		}
		rowNums = append(rowNums, s.row)
		ratios = append(ratios, median(rs))
	}
	return rowNums, ratios
}

// plotMatrix draws a two-target run's ratios as one bar per row, with parity (1×) and the
// target (1.5×) as horizontal lines, and returns the file's name ("" when there is nothing to
// draw: one target, or no row with a ratio).
func (e *env) plotMatrix(rows []MatrixRow, names []string, n int) (string, error) {
	rowNums, ratios := e.matrixRatios(rows, names, n)
	if len(ratios) == 0 {
		return "", nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s / %s per matrix row, %d servers (> 1: %s better)",
		displayName(names[1]), displayName(names[0]), n, displayName(names[1]))
	if reps := matrixReps(rows); len(reps) > 1 {
		p.Title.Text += fmt.Sprintf(", median of %d runs", len(reps))
	}
	p.X.Label.Text = "row"
	p.Y.Label.Text = "ratio"
	p.Add(plotter.NewGrid())
	bars, err := plotter.NewBarChart(plotter.Values(ratios), vg.Points(18))
	if err != nil {
		return "", err
	}
	bars.Color = targetColor(names[1], 0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	labels := make([]string, len(rowNums))
	top := matrixTarget
	for i, r := range rowNums {
		labels[i] = strconv.Itoa(r)
		top = max(top, ratios[i])
	}
	p.NominalX(labels...)
	p.Y.Min, p.Y.Max = 0, top*1.1
	for i, h := range []hline{{y: 1, label: "parity (1×)", target: "paper"}, {y: matrixTarget, label: "target (1.5×)", target: "target"}} {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: h.y}, {X: float64(len(ratios)) - 0.5, Y: h.y}})
		if err != nil {
			return "", err
		}
		l.Color = targetColor(h.target, 0)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		if i == 0 {
			l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(h.label, l)
	}
	p.Legend.Top, p.Legend.Left = true, true
	png, err := encodePNG(p, 9*vg.Inch, 4*vg.Inch)
	if err != nil {
		return "", err
	}
	name := "matrix.png"
	if len(e.cfg.Sizes) > 1 {
		name = fmt.Sprintf("matrix-%d.png", n)
	}
	return name, e.writeFile(name, png)
}
