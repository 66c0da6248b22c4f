package panelplot

import (
	"bytes"
	"fmt"
	"image/png"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestWritePNG draws two panels from a range query's answer and checks that the result is a
// PNG of the documented size with something drawn in it.
func TestWritePNG(t *testing.T) {
	t.Parallel()
	start := time.Unix(1_700_000_000, 0)
	var margin, ready model.SamplePair
	m := model.Matrix{{Metric: model.Metric{"cluster": "a"}}}
	r := model.Matrix{{Metric: model.Metric{"cluster": "a"}}}
	for i := range 60 {
		margin = model.SamplePair{Timestamp: model.TimeFromUnixNano(start.Add(time.Duration(i) * time.Second).UnixNano()), Value: 1}
		ready = margin
		if i >= 20 && i < 40 {
			margin.Value, ready.Value = 0, 2
		} else {
			ready.Value = 3
		}
		m[0].Values = append(m[0].Values, margin)
		r[0].Values = append(r[0].Values, ready)
	}
	name := func(l model.Metric) string { return string(l["cluster"]) }
	f := Figure{Title: "heal", Start: start, Panels: []Panel{
		{Title: "Quorum margin", Series: FromMatrix(m, name)},
		{Title: "Ready members", Series: FromMatrix(r, name)},
	}, Markers: []Marker{{At: start.Add(20 * time.Second), Label: "killed"}}}
	var buf bytes.Buffer
	if err := WritePNG(f, &buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() != int(width.Dots(vgimg.DefaultDPI)) || b.Dy() < 2*int(panelHeight.Dots(vgimg.DefaultDPI)) {
		t.Errorf("image %v, want %v wide and two panels high", b, width.Dots(vgimg.DefaultDPI))
	}
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r<<16^g<<8^bl] = true
		}
	}
	if len(colours) < 4 {
		t.Errorf("%d colours in the image: nothing drawn", len(colours))
	}
	if err := WritePNG(Figure{Panels: []Panel{{Title: "empty"}}}, &buf); err == nil {
		t.Error("a panel without samples was drawn, want an error")
	}
}

// TestSegments: samples further apart than MaxGap start a new segment; without MaxGap every
// sample is joined.
func TestSegments(t *testing.T) {
	t.Parallel()
	at := func(s int) Point { return Point{T: time.Unix(int64(s), 0)} }
	points := []Point{at(0), at(1), at(2), at(10), at(11), at(30)}
	lens := func(f Figure) []int {
		var n []int
		for _, seg := range f.segments(points) {
			n = append(n, len(seg))
		}
		return n
	}
	if got := lens(Figure{MaxGap: 2 * time.Second}); fmt.Sprint(got) != "[3 2 1]" {
		t.Errorf("segments with MaxGap 2s: %v, want [3 2 1]", got)
	}
	if got := lens(Figure{}); fmt.Sprint(got) != "[6]" {
		t.Errorf("segments without MaxGap: %v, want [6]", got)
	}
}
