package panelplot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Point is one sample of a series.
type Point struct {
	T time.Time
	V float64
}

// Series is one line of a panel.
type Series struct {
	Name   string
	Points []Point
}

// Panel is one graph: a title, the unit of its Y axis and its lines.
type Panel struct {
	Title, Unit string
	Series      []Series
}

// Marker is a moment drawn as a dashed vertical line on every panel, such as "member killed".
type Marker struct {
	At    time.Time
	Label string
}

// Figure is panels stacked over one time axis, in seconds since Start; StartLabel, when set,
// names that moment on the axis. Samples further apart than MaxGap (when set) are not joined:
// a series that was absent for a while (Prometheus's range queries return no sample for it) is
// drawn as separate segments, not as a line through the time it did not exist.
type Figure struct {
	Title      string
	Start      time.Time
	StartLabel string
	MaxGap     time.Duration
	Panels     []Panel
	Markers    []Marker
}

// Size of the image: the width, and the height of one panel.
const (
	width       = 8 * vg.Inch
	panelHeight = 2 * vg.Inch
)

// WritePNG draws f and writes it as a PNG.
func WritePNG(f Figure, w io.Writer) error {
	if len(f.Panels) == 0 {
		return errors.New("panelplot: a figure without panels")
	}
	rows := make([][]*plot.Plot, len(f.Panels))
	for i, p := range f.Panels {
		pl, err := f.panelPlot(p, i == 0, i == len(f.Panels)-1)
		if err != nil {
			return fmt.Errorf("panel %q: %w", p.Title, err)
		}
		rows[i] = []*plot.Plot{pl}
	}
	img := vgimg.New(width, panelHeight*vg.Length(len(f.Panels))+vg.Inch/2)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	title := plot.DefaultFont
	title.Size = vg.Points(14)
	style := draw.TextStyle{Color: color.Black, Font: title, Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	dc.FillText(style, vg.Point{X: width / 2, Y: dc.Max.Y - vg.Points(6)}, f.Title)
	tiles := draw.Tiles{Rows: len(f.Panels), Cols: 1, PadTop: vg.Inch / 2, PadBottom: vg.Points(4),
		PadLeft: vg.Points(4), PadRight: vg.Points(10), PadY: vg.Points(10)}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// legendRoom is the share of the time axis added on the right of the data, where the legend
// goes without covering a line.
const legendRoom = 0.3

// panelPlot builds one panel's plot; only the top panel names the markers, only the bottom one
// the time axis.
func (f Figure) panelPlot(p Panel, top, bottom bool) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.Y.Label.Text = p.Unit
	if bottom {
		at := f.Start.UTC().Format("15:04:05 UTC")
		if f.StartLabel != "" {
			at = f.StartLabel + " (" + at + ")"
		}
		pl.X.Label.Text = "seconds since " + at
	}
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), math.Inf(-1)
	first, last := math.Inf(1), math.Inf(-1)
	for i, s := range p.Series {
		if len(s.Points) == 0 {
			continue
		}
		for j, seg := range f.segments(s.Points) {
			xys := make(plotter.XYs, len(seg))
			for k, pt := range seg {
				xys[k] = plotter.XY{X: pt.T.Sub(f.Start).Seconds(), Y: pt.V}
				lo, hi = math.Min(lo, pt.V), math.Max(hi, pt.V)
				first, last = math.Min(first, xys[k].X), math.Max(last, xys[k].X)
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("series %q: %w", s.Name, err)
			}
			// Gauges hold their value until the next sample.
			line.StepStyle = plotter.PostStep
			line.Color = plotutil.Color(i)
			line.Width = vg.Points(1.5)
			pl.Add(line)
			if j == 0 {
				pl.Legend.Add(s.Name, line)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return nil, errors.New("no samples")
	}
	lo, hi = padded(lo, hi)
	pl.Y.Min, pl.Y.Max = lo, hi
	pl.X.Min, pl.X.Max = first, last+(last-first)*legendRoom
	for i, m := range f.Markers {
		x := m.At.Sub(f.Start).Seconds()
		line, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
		if err != nil {
			return nil, err
		}
		line.Color = color.Gray{Y: 90}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(2 + 2*float64(i))}
		pl.Add(line)
		if top {
			pl.Legend.Add(m.Label, line)
		}
	}
	return pl, nil
}

// segments splits points where two samples are further apart than f.MaxGap.
func (f Figure) segments(points []Point) [][]Point {
	var out [][]Point
	start := 0
	for i := 1; i <= len(points); i++ {
		if i == len(points) || (f.MaxGap > 0 && points[i].T.Sub(points[i-1].T) > f.MaxGap) {
			out = append(out, points[start:i])
			start = i
		}
	}
	return out
}

// padded widens [lo, hi] so that a line at either bound is not drawn on the frame, and a
// constant series gets a range.
func padded(lo, hi float64) (float64, float64) {
	pad := (hi - lo) * 0.1
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.1, 0.5)
	}
	return lo - pad, hi + pad
}

// FromMatrix turns a range query's answer into series named by name, sorted by name so that a
// series keeps its colour from run to run.
func FromMatrix(m model.Matrix, name func(model.Metric) string) []Series {
	out := make([]Series, 0, len(m))
	for _, ss := range m {
		s := Series{Name: name(ss.Metric)}
		for _, v := range ss.Values {
			s.Points = append(s.Points, Point{T: v.Timestamp.Time(), V: float64(v.Value)})
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
