package voiceidtest

import (
	"testing"

	"github.com/chorus-robotics/chorus/runtime/memory"
)

// The spectral embedding keeps each test voice near its voiceprint (the
// mean of three other sentences) and far from the others', over room
// noise, whatever the words.
func TestSpectralSeparatesVoices(t *testing.T) {
	voices := []Voice{Sam, Mia, Kid}
	emb := map[string][][]float32{}
	for vi, v := range voices {
		for si, s := range Sentences {
			e := Spectral(Say(t, v, s, uint64(vi*100+si+1)), 16000)
			if e == nil {
				t.Fatalf("%s %q: no embedding", v.Name, s)
			}
			emb[v.Name] = append(emb[v.Name], e)
		}
	}
	dir := t.TempDir()
	g, err := memory.OpenVoices(dir, "test", memory.VoiceLimits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, v := range voices {
		if err := g.Add(v.Name, "spectral", t0(), emb[v.Name][:3]...); err != nil {
			t.Fatal(err)
		}
	}
	worstSame, bestOther := 0.0, 2.0
	for _, v := range voices {
		for _, e := range emb[v.Name][3:] {
			p, d := g.Match(e)
			if p != v.Name {
				t.Errorf("%s's sentence matched %s at %.3f", v.Name, p, d)
			}
			worstSame = max(worstSame, d)
			_, d2 := g.Nearest(e, v.Name)
			bestOther = min(bestOther, d2)
		}
	}
	t.Logf("to its own voiceprint at most %.3f; to another's at least %.3f", worstSame, bestOther)
	if worstSame >= 0.2 || bestOther <= 0.5 { // within hearing.voice.sure (0.25) and far past threshold (0.35)
		t.Fatalf("the voices are not apart: own ≤ %.3f, other ≥ %.3f", worstSame, bestOther)
	}
}
