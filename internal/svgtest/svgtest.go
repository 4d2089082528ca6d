// Package svgtest (a test harness) reads the structure of an SVG written by gonum/plot's
// vgsvg canvas, for tests of plots: the canvas size, the text elements and
// the stroke styles of the paths.
package svgtest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Doc is what a test of a plot asserts on.
type Doc struct {
	// W and H are the viewBox's width and height (user units, points).
	W, H float64
	// Texts are the text elements in document order.
	Texts []Text
	// Strokes are the style attributes of the paths drawn with a stroke
	// (fill:none), one entry per path, e.g.
	// "stroke:#1F77B4;stroke-width:1.5;stroke-dasharray:7,3".
	Strokes []string
}

// Text is one text element, in canvas coordinates (y up from the bottom,
// as vgsvg flips them back).
type Text struct {
	X, Y    float64
	Size    float64 // font size, user units
	Rotated bool    // drawn rotated (an axis label)
	Body    string
}

// Right is where the text ends when each character takes em of the font
// size: 0.6 bounds the average advance of common serif and sans fonts,
// so a viewer substituting its own font still ends the text before it.
func (t Text) Right(em float64) float64 { return t.X + em*t.Size*float64(len([]rune(t.Body))) }

var (
	viewBox = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
	textEl  = regexp.MustCompile(`(?s)(<g transform="rotate\([^)]*\)">\s*)?<text x="([-0-9.e+]+)" y="([-0-9.e+]+)" transform="([^"]*)"\s*style="[^"]*font-size:([0-9.]+)px[^"]*">([^<]*)</text>`)
	pathEl  = regexp.MustCompile(`<path d="[^"]*" style="fill:none;(stroke[^"]*)"`)
)

// Parse reads svg; an error when it has no viewBox.
func Parse(svg string) (Doc, error) {
	var d Doc
	m := viewBox.FindStringSubmatch(svg)
	if m == nil {
		return d, fmt.Errorf("svg: no viewBox")
	}
	d.W, _ = strconv.ParseFloat(m[1], 64)
	d.H, _ = strconv.ParseFloat(m[2], 64)
	for _, t := range textEl.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(t[2], 64)
		y, _ := strconv.ParseFloat(t[3], 64)
		size, _ := strconv.ParseFloat(t[5], 64)
		rotated := t[1] != "" || strings.Contains(t[4], "rotate")
		d.Texts = append(d.Texts, Text{X: x, Y: -y, Size: size, Rotated: rotated, Body: unescape(t[6])})
	}
	for _, p := range pathEl.FindAllStringSubmatch(svg, -1) {
		d.Strokes = append(d.Strokes, p[1])
	}
	return d, nil
}

func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'").Replace(s)
}

// Outside are the unrotated texts that do not fit in the canvas when
// each character takes em of the font size (Text.Right), or whose
// baseline leaves no room for the cap height (0.7 of the size) below the
// top or the descent (0.25) above the bottom.
func (d Doc) Outside(em float64) []Text {
	var out []Text
	for _, t := range d.Texts {
		if t.Rotated {
			continue
		}
		if t.X < 0 || t.Right(em) > d.W || t.Y < 0.25*t.Size || t.Y+0.7*t.Size > d.H {
			out = append(out, t)
		}
	}
	return out
}

// Find is the first text whose body is s, and whether there is one.
func (d Doc) Find(s string) (Text, bool) {
	for _, t := range d.Texts {
		if t.Body == s {
			return t, true
		}
	}
	return Text{}, false
}
