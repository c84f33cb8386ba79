package runtime_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// TestDocLinksResolve: every link of the README and of docs/ leads to a
// file of the repository and, with an anchor, to a heading that is there
// — the README is a front door, and a door to nowhere is a broken one.
func TestDocLinksResolve(t *testing.T) {
	docs, _ := filepath.Glob("../docs/*.md")
	files := append([]string{"../README.md", "../CHANGELOG.md"}, docs...)
	if len(docs) < 10 {
		t.Fatalf("%d pages in docs/", len(docs))
	}
	links := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: the link %s leads nowhere: %v", f, target, err)
					continue
				}
			}
			if anchor != "" && !hasAnchor(t, dest, anchor) {
				t.Errorf("%s: the link %s: %s has no heading %q", f, target, dest, anchor)
			}
		}
	}
	if links < 30 {
		t.Fatalf("only %d links read: the pattern misses them", links)
	}
}

// stripCode drops fenced code blocks, whose brackets are no links.
func stripCode(s string) string {
	var out strings.Builder
	in := false
	for line := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			out.WriteString(line)
		}
	}
	return out.String()
}

func hasAnchor(t *testing.T, file, anchor string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range heading.FindAllStringSubmatch(stripCode(string(b)), -1) {
		if slug(m[1]) == anchor {
			return true
		}
	}
	return false
}

// slug is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation but hyphens and underscores dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
