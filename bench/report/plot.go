package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot draws each table's bars as a grouped bar chart, one panel per
// table, stacked, into path (.svg or .png).
func Plot(r *Report, path string) error {
	var plots []*plot.Plot
	for _, t := range r.Tables {
		switch {
		case len(t.Bars) > 0:
			p, err := barChart(t)
			if err != nil {
				return err
			}
			plots = append(plots, p)
		case len(t.Lines) > 0:
			for _, l := range t.Lines {
				p, err := lineChart(t.Title, l)
				if err != nil {
					return err
				}
				plots = append(plots, p)
			}
		}
	}
	if len(plots) == 0 {
		return fmt.Errorf("plot: the %s suite has nothing to draw", r.Suite)
	}
	w, h := 9*vg.Inch, vg.Length(len(plots))*4*vg.Inch
	var c vg.CanvasWriterTo
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		c = vgsvg.New(w, h)
	case ".png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	default:
		return fmt.Errorf("plot: %s is neither .svg nor .png", path)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter}
	for i, p := range plots {
		p.Draw(tiles.At(dc, 0, i))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot: write %s: %w", path, err)
	}
	return f.Close()
}

// lineChart draws one series over time.
func lineChart(title string, l Line) (*plot.Plot, error) {
	pts := make(plotter.XYs, len(l.X))
	for i := range l.X {
		pts[i] = plotter.XY{X: l.X[i], Y: l.Y[i]}
	}
	p := plot.New()
	p.Title.Text = title + ": " + l.Name
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = l.Unit
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, fmt.Errorf("plot %s: %w", title, err)
	}
	line.Color = plotutil.Color(0)
	p.Add(line)
	return p, nil
}

func barChart(t *Table) (*plot.Plot, error) {
	var groups, series []string
	seenG, seenS := map[string]bool{}, map[string]bool{}
	unit := ""
	for _, b := range t.Bars {
		if !seenG[b.Group] {
			seenG[b.Group] = true
			groups = append(groups, b.Group)
		}
		if !seenS[b.Series] {
			seenS[b.Series] = true
			series = append(series, b.Series)
		}
		unit = b.Unit
	}
	p := plot.New()
	p.Title.Text = t.Title
	p.Y.Label.Text = unit
	p.Legend.Top = true
	width := vg.Points(float64(360) / float64(len(groups)*len(series)+1))
	for si, s := range series {
		vals := make(plotter.Values, len(groups))
		for gi, g := range groups {
			for _, b := range t.Bars {
				if b.Group == g && b.Series == s {
					vals[gi] = b.Value
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", t.Title, err)
		}
		bars.Color = plotutil.Color(si)
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(si-len(series)/2)
		p.Add(bars)
		p.Legend.Add(s, bars)
	}
	p.NominalX(groups...)
	return p, nil
}
