package svgtest

import "testing"

// TestParse reads what vgsvg writes: the viewBox, a plain and a rotated
// text (y flipped back to the canvas's upward axis), and one stroked path
// (the filled one is not a stroke).
func TestParse(t *testing.T) {
	svg := `<svg width="100pt" height="50pt" viewBox="0 0 100 50">
<g transform="scale(1, -1) translate(0, -50)">
<path d="M0,0L100,0L100,50Z" style="fill:#FFFFFF" />
<text x="10" y="-40" transform="scale(1, -1)"
	style="font-family:Liberation Serif;font-size:12px">a &amp; b</text>
<g transform="rotate(90)">
<text x="5" y="-3" transform="scale(1, -1)"
	style="font-family:Liberation Serif;font-size:10px">axis</text>
</g>
<path d="M1,1L2,2" style="fill:none;stroke:#1F77B4;stroke-width:1.5;stroke-dasharray:7,3" />
</g></svg>`
	d, err := Parse(svg)
	if err != nil {
		t.Fatal(err)
	}
	if d.W != 100 || d.H != 50 || len(d.Texts) != 2 || len(d.Strokes) != 1 {
		t.Fatalf("%+v", d)
	}
	if x := d.Texts[0]; x.Body != "a & b" || x.X != 10 || x.Y != 40 || x.Size != 12 || x.Rotated {
		t.Errorf("text %+v", x)
	}
	if !d.Texts[1].Rotated {
		t.Errorf("axis text %+v not read as rotated", d.Texts[1])
	}
	if d.Strokes[0] != "stroke:#1F77B4;stroke-width:1.5;stroke-dasharray:7,3" {
		t.Errorf("stroke %q", d.Strokes[0])
	}
	// "a & b" at 0.6 em of 12: 5 x 7.2 = 36 from x 10 ends at 46 < 100; at
	// 1.6 em it ends at 106, outside.
	if out := d.Outside(0.6); len(out) != 0 {
		t.Errorf("outside at 0.6 em: %+v", out)
	}
	if out := d.Outside(1.6); len(out) != 1 {
		t.Errorf("outside at 1.6 em: %+v, want the one plain text", out)
	}
	if _, ok := d.Find("axis"); !ok {
		t.Error("Find(axis) failed")
	}
}
