package settings

import (
	"slices"
	"testing"
)

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		got     string
		choices []string
		want    string
	}{
		{"espeakng", []string{"espeak-ng", "tone"}, ` (did you mean "espeak-ng"?)`},
		{"opnai", []string{"anthropic", "openai", "rule"}, ` (did you mean "openai"?)`},
		{"olama", []string{"ollama", "openai"}, ` (did you mean "ollama"?)`},
		{"vote_timout", []string{"vote_timeout", "vote_ceiling"}, ` (did you mean "vote_timeout"?)`},
		{"enabeld", []string{"enabled", "user", "stt"}, ` (did you mean "enabled"?)`},
		{"xyz", []string{"anthropic", "openai", "rule"}, ""},
		{"rul", []string{"rule"}, ` (did you mean "rule"?)`},
		{"", []string{"rule"}, ""},
	} {
		if got := DidYouMean(c.got, c.choices...); got != c.want {
			t.Errorf("DidYouMean(%q, %v) = %q; want %q", c.got, c.choices, got, c.want)
		}
	}
}

func TestHostPort(t *testing.T) {
	for v, ok := range map[string]bool{
		"127.0.0.1:9100": true, "0.0.0.0:1883": true, ":0": true, "robot.local:80": true, "[::1]:1883": true,
		"127.0.0.1:99999": false, "127.0.0.1": false, "127.0.0.1:http": false, "127.0.0.1:-1": false,
	} {
		var p Problems
		p.HostPort("listen", v)
		if got := len(p.List()) == 0; got != ok {
			t.Errorf("HostPort(%q): %v", v, p.List())
		}
	}
	var p Problems
	p.HostPort("http.listen", "127.0.0.1:99999")
	if want := []string{`http.listen: the port must be a number from 0 to 65535, got "99999"`}; !slices.Equal(p.List(), want) {
		t.Errorf("%q", p.List())
	}
}
