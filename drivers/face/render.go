package face

import (
	"image"
	"image/color"
	"math"
)

// The design grid every face is laid out on, scaled to the display.
const (
	designW = 128.0
	designH = 64.0
	// MouthTop is the design row the mouth starts at; eyes and brows end
	// above row 39.
	MouthTop = 40.0
)

// shape is a set of points of the design grid.
type shape func(x, y float64) bool

// ellipse is the filled ellipse centred at (cx, cy).
func ellipse(cx, cy, rx, ry float64) shape {
	return func(x, y float64) bool {
		dx, dy := (x-cx)/rx, (y-cy)/ry
		return dx*dx+dy*dy <= 1
	}
}

// ring is the ellipse (rx, ry) less the one t inside it.
func ring(cx, cy, rx, ry, t float64) shape {
	outer, inner := ellipse(cx, cy, rx, ry), ellipse(cx, cy, rx-t, ry-t)
	return func(x, y float64) bool { return outer(x, y) && !inner(x, y) }
}

// above keeps the part of s with y < y0, below the part with y ≥ y0.
func above(s shape, y0 float64) shape {
	return func(x, y float64) bool { return y < y0 && s(x, y) }
}

func below(s shape, y0 float64) shape {
	return func(x, y float64) bool { return y >= y0 && s(x, y) }
}

// underLine keeps the part of s below the line through (x0, y0) and
// (x1, y1) (larger y is lower).
func underLine(s shape, x0, y0, x1, y1 float64) shape {
	return func(x, y float64) bool {
		return y >= y0+(y1-y0)*(x-x0)/(x1-x0) && s(x, y)
	}
}

// line is the segment (x0, y0)–(x1, y1), t thick.
func line(x0, y0, x1, y1, t float64) shape {
	return func(x, y float64) bool {
		dx, dy := x1-x0, y1-y0
		u := ((x-x0)*dx + (y-y0)*dy) / (dx*dx + dy*dy)
		u = min(max(u, 0), 1)
		px, py := x0+u*dx-x, y0+u*dy-y
		return px*px+py*py <= t*t/4
	}
}

func union(ss ...shape) shape {
	return func(x, y float64) bool {
		for _, s := range ss {
			if s(x, y) {
				return true
			}
		}
		return false
	}
}

// Eye centres on the design grid.
const (
	leftX  = 38.0
	rightX = 90.0
)

// eyes is both eyes (and brows) for an emotion: eye(cx, outward) draws
// one eye, outward being -1 for the left eye, +1 for the right.
func eyes(emotion string) shape {
	var eye func(cx, out float64) shape
	switch emotion {
	case Happy: // ^ ^
		eye = func(cx, _ float64) shape { return above(ring(cx, 28, 12, 12, 5), 28) }
	case Sad: // drooping at the outer corners
		eye = func(cx, out float64) shape {
			return underLine(ellipse(cx, 26, 12, 13), cx+12*out, 25, cx-12*out, 12)
		}
	case Angry: // cut at the inner corners, under slanted brows
		eye = func(cx, out float64) shape {
			return union(
				underLine(ellipse(cx, 27, 12, 11), cx+12*out, 18, cx-12*out, 26),
				line(cx+14*out, 9, cx-12*out, 16, 4),
			)
		}
	case Surprised: // wide rings with a pupil
		eye = func(cx, _ float64) shape { return union(ring(cx, 23, 14, 15, 4), ellipse(cx, 23, 4, 4)) }
	case Sleepy: // closed: a low curve
		eye = func(cx, _ float64) shape { return below(ring(cx, 26, 12, 7, 4), 26) }
	default: // neutral: tall ovals
		eye = func(cx, _ float64) shape { return ellipse(cx, 24, 11, 13) }
	}
	return union(eye(leftX, -1), eye(rightX, +1))
}

// mouth is the mouth for an emotion, open 0..1.
func mouth(emotion string, open float64) shape {
	if open > 0 {
		if emotion == Happy { // an open smile: D on its back
			return below(ellipse(64, 43, 20, 3+15*open), 43)
		}
		return ellipse(64, 51.5, 8+8*open, 1+10*open)
	}
	switch emotion {
	case Happy:
		return below(ring(64, 42, 20, 12, 4), 42)
	case Sad:
		return above(ring(64, 60, 18, 10, 4), 60)
	case Angry:
		return line(53, 53, 75, 53, 4)
	case Surprised:
		return ring(64, 51, 6, 7, 3)
	case Sleepy:
		return line(59, 52, 69, 52, 4)
	default:
		return line(50, 51, 78, 51, 4)
	}
}

// Render draws the face for emotion with the mouth open by open (0..1)
// on an image of r's size: 255 where a pixel is lit, 0 elsewhere. It is a
// pure function; an unknown emotion draws the neutral one.
func Render(r image.Rectangle, emotion string, open float64) *image.Gray {
	img := image.NewGray(r)
	w, h := r.Dx(), r.Dy()
	if w == 0 || h == 0 {
		return img
	}
	open = clampOpen(open)
	sx, sy := designW/float64(w), designH/float64(h)
	top, bottom := eyes(emotion), mouth(emotion, open)
	for py := range h {
		y := (float64(py) + 0.5) * sy
		s := top
		if y >= MouthTop {
			s = bottom
		} else if y >= MouthTop-1 {
			continue
		}
		for px := range w {
			if s((float64(px)+0.5)*sx, y) {
				img.SetGray(r.Min.X+px, r.Min.Y+py, color.Gray{Y: 255})
			}
		}
	}
	return img
}

// mouthRow is the first pixel row of the mouth on a display h pixels
// high.
func mouthRow(h int) int {
	return int(math.Ceil(MouthTop*float64(h)/designH - 0.5))
}
