package doctor

import "testing"

func TestPlaceholder(t *testing.T) {
	for u, want := range map[string]bool{
		"http://192.0.2.20:11434/v1":    true,
		"tcp://192.0.2.20:10300":        true,
		"tcp://198.51.100.7:1883":       true,
		"http://[2001:db8::1]:8080/v1":  true,
		"http://llm.example:8080/v1":    true,
		"https://api.example.com/v1":    true,
		"http://192.168.1.20:11434/v1":  false, // a real LAN address: probed
		"http://ollama.local:11434/v1":  false,
		"https://api.openai.com/v1":     false,
		"tcp://127.0.0.1:1883":          false,
		"192.0.2.9:1883":                true,
		"tcp://notexample.com:1883":     false,
		"http://example.com.evil.net/x": false,
	} {
		if got := placeholder(u); got != want {
			t.Errorf("placeholder(%q) = %v; want %v", u, got, want)
		}
	}
}
