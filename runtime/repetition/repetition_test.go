package repetition

import "testing"

func TestScore(t *testing.T) {
	j := Judge{Window: 5}
	tests := []struct {
		name string
		in   []string
		over bool // above DefaultThreshold
	}{
		{"empty", nil, false},
		{"one", []string{"hello"}, false},
		{"same English", []string{"I love tea so much.", "I love tea so much!", "i love tea, so much"}, true},
		{"varied English", []string{"I love tea.", "The weather is nice today.", "Shall we go to the park?"}, false},
		{"same Japanese", []string{"お茶が好きです。", "お茶が好きです！", "お茶が好きです"}, true},
		{"varied Japanese", []string{"お茶が好きです。", "今日はいい天気だね。", "公園に行こうか？"}, false},
		{"window keeps only the last", []string{"a b c d e f", "x", "same same", "same same", "same same", "same same", "same same"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := j.Score(tt.in)
			if (s > DefaultThreshold) != tt.over {
				t.Fatalf("score %.3f, over threshold %v, want %v", s, s > DefaultThreshold, tt.over)
			}
		})
	}
}
