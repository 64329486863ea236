package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one curve of a figure.
type series struct {
	name   string
	target string // colours: one hue family per target
	xs, ys []float64
	points bool // draw glyphs at the data points
	dashed bool
}

// seriesByTarget groups points into one series per target (in first-seen order), as the
// paper's tables are drawn: glyphs at the points, ZooKeeper dashed.
func seriesByTarget[P any](pts []P, xy func(P) (target string, servers int, x, y float64)) []series {
	byT := map[string]*series{}
	var order []string
	for _, p := range pts {
		target, servers, x, y := xy(p)
		s, ok := byT[target]
		if !ok {
			s = &series{name: fmt.Sprintf("%s, %d servers", target, servers), target: target, points: true,
				dashed: target == "zookeeper"}
			byT[target] = s
			order = append(order, target)
		}
		s.xs = append(s.xs, x)
		s.ys = append(s.ys, y)
	}
	out := make([]series, 0, len(order))
	for _, t := range order {
		out = append(out, *byT[t])
	}
	return out
}

// mark is a vertical line with a short label (failover events).
type mark struct {
	x      float64
	label  string
	target string
}

// hline is a horizontal reference line (a target rate, a ZooKeeper reference).
type hline struct {
	y      float64
	label  string
	target string
}

// figure is a line chart in the shape of the paper's figures.
type figure struct {
	title, xlabel, ylabel string
	series                []series
	marks                 []mark
	hlines                []hline
	xmin, xmax            *float64
	width, height         vg.Length
}

// Palettes: ZooKeeper in warm colours, Corral in cool ones, so the two targets stay apart
// however many ensemble sizes a figure holds.
var palettes = map[string][]color.Color{
	"zookeeper": {rgb(0xd9, 0x5f, 0x02), rgb(0xa6, 0x76, 0x1d), rgb(0xe6, 0xab, 0x02), rgb(0x7f, 0x27, 0x04), rgb(0xe7, 0x29, 0x8a)},
	"corral":    {rgb(0x1f, 0x78, 0xb4), rgb(0x6a, 0x3d, 0x9a), rgb(0x33, 0xa0, 0x2c), rgb(0x08, 0x30, 0x6b), rgb(0x1b, 0x9e, 0x77)},
	"paper":     {rgb(0x66, 0x66, 0x66)},
	"target":    {rgb(0xcc, 0x00, 0x00)},
}

func rgb(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 255} }

// targetColor returns the i-th colour of target's palette.
func targetColor(target string, i int) color.Color {
	if p, ok := palettes[target]; ok {
		return p[i%len(p)]
	}
	return plotutil.Color(i)
}

// intTicks labels ticks without decimals (ops/s, seconds).
type intTicks struct{}

func (intTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// render draws the figure as PNG.
func (f figure) render() ([]byte, error) {
	p := plot.New()
	p.Title.Text = f.title
	p.X.Label.Text = f.xlabel
	p.Y.Label.Text = f.ylabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min = 0
	p.Y.Tick.Marker = intTicks{}
	p.X.Tick.Marker = intTicks{}
	ymax := 0.0
	shadeOf := map[string]int{}
	for _, s := range f.series {
		xys := make(plotter.XYs, len(s.xs))
		for i := range s.xs {
			xys[i].X, xys[i].Y = s.xs[i], s.ys[i]
			ymax = math.Max(ymax, s.ys[i])
		}
		if len(xys) == 0 {
			continue
		}
		col := targetColor(s.target, shadeOf[s.target])
		shadeOf[s.target]++
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = col
		l.Width = vg.Points(1.5)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		if s.points {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, err
			}
			sc.Color = col
			sc.Shape = plotutil.Shape(shadeOf[s.target] - 1)
			sc.Radius = vg.Points(2.5)
			p.Add(sc)
			p.Legend.Add(s.name, l, sc)
		} else {
			p.Legend.Add(s.name, l)
		}
	}
	for _, h := range f.hlines {
		ymax = math.Max(ymax, h.y)
	}
	top := ymax * 1.12
	if top <= 0 {
		top = 1
	}
	p.Y.Max = top
	if f.xmin != nil {
		p.X.Min = *f.xmin
	}
	if f.xmax != nil {
		p.X.Max = *f.xmax
	}
	for i, h := range f.hlines {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: h.y}, {X: p.X.Max, Y: h.y}})
		if err != nil {
			return nil, err
		}
		l.Color = targetColor(h.target, i)
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(h.label, l)
	}
	// Event marks: a dotted vertical line each, labels staggered so neighbours stay legible.
	sort.SliceStable(f.marks, func(i, j int) bool { return f.marks[i].x < f.marks[j].x })
	for i, m := range f.marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: 0}, {X: m.x, Y: top * 0.97}})
		if err != nil {
			return nil, err
		}
		l.Color = targetColor(m.target, 0)
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(l)
		lb, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: m.x, Y: top * (0.93 - 0.05*float64(i%3))}},
			Labels: []string{m.label},
		})
		if err != nil {
			return nil, err
		}
		p.Add(lb)
	}
	w, h := f.width, f.height
	if w == 0 {
		w, h = 9*vg.Inch, 5*vg.Inch
	}
	return encodePNG(p, w, h)
}

// encodePNG draws p as a w × h PNG.
func encodePNG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writePlot renders f into the run's directory.
func (e *env) writePlot(name string, f figure) error {
	b, err := f.render()
	if err != nil {
		return err
	}
	return e.writeFile(name, b)
}

func fptr(v float64) *float64 { return &v }
