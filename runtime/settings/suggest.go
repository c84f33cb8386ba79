package settings

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// DidYouMean returns ` (did you mean "x"?)` for the choice closest to got
// (Closest), or "" when none is close.
func DidYouMean(got string, choices ...string) string {
	best := Closest(got, choices...)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Closest is the choice closest to got (a misspelt enum or key), or ""
// when none is close: at most one edit for a short word, two for a
// longer one, case and "-"/"_" ignored.
func Closest(got string, choices ...string) string {
	best, bestD := "", 3
	g := fold(got)
	for _, c := range choices {
		d := distance(g, fold(c))
		if d < bestD && d <= max(1, min(2, len(g)/4)) {
			best, bestD = c, d
		}
	}
	return best
}

func fold(s string) string {
	return strings.NewReplacer("-", "", "_", "", ".", "", " ", "").Replace(strings.ToLower(s))
}

// distance is the edit distance of a and b counting a swap of two
// neighbours as one edit (optimal string alignment), by bytes: config
// words are ASCII.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// HostPort reports field unless v is host:port with a port a listener can
// take (0 to 65535; 0 picks a free one): what a start would refuse.
func (p *Problems) HostPort(field, v string) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		p.Add(field, "must be host:port, got %q", v)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.Add(field, "the port must be a number from 0 to 65535, got %q", port)
	}
	if host != "" && net.ParseIP(host) == nil && strings.ContainsAny(host, " /\\") {
		p.Add(field, "%q is no host name or address", host)
	}
}
