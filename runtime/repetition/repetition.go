// Package repetition judges whether a conversation is going round in circles
// (aikyo's repetition judge, done locally with no model): the mean pairwise
// cosine similarity of character bigram counts over the last Window
// utterances. Character n-grams need no word segmentation, so Japanese works
// as well as English.
package repetition

import (
	"math"
	"strings"
	"unicode"
)

// Defaults from aikyo-closing.ja.md.
const (
	DefaultThreshold = 0.7
	DefaultWindow    = 5
)

// Judge scores the last Window utterances.
type Judge struct {
	Window int // default 5
}

// Score returns 0 (all different) to 1 (all the same). Fewer than two
// utterances score 0.
func (j Judge) Score(utterances []string) float64 {
	w := j.Window
	if w <= 0 {
		w = DefaultWindow
	}
	if len(utterances) > w {
		utterances = utterances[len(utterances)-w:]
	}
	vecs := make([]map[string]float64, 0, len(utterances))
	for _, u := range utterances {
		if v := bigrams(u); len(v) > 0 {
			vecs = append(vecs, v)
		}
	}
	if len(vecs) < 2 {
		return 0
	}
	var sum float64
	var n int
	for i := range vecs {
		for k := i + 1; k < len(vecs); k++ {
			sum += cosine(vecs[i], vecs[k])
			n++
		}
	}
	return sum / float64(n)
}

func bigrams(s string) map[string]float64 {
	var rs []rune
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			rs = append(rs, r)
		}
	}
	v := map[string]float64{}
	if len(rs) == 1 {
		v[string(rs)]++
	}
	for i := 0; i+1 < len(rs); i++ {
		v[string(rs[i:i+2])]++
	}
	return v
}

func cosine(a, b map[string]float64) float64 {
	var dot, na, nb float64
	for k, x := range a {
		na += x * x
		dot += x * b[k]
	}
	for _, y := range b {
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
