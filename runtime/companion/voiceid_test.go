package companion_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// heardSays publishes a heard Message from `from`, as the floor's arbiter
// does, with what the robots said of the voice (reading "" when they
// identify none) and an enrolment, if any.
func (r *roomRig) heardSays(from, text, reading string, enrol map[string]any) {
	r.t.Helper()
	fr := room.New(r.dial(from, nil, nil), r.s, "lr", nil, nil)
	m := protocol.NewMessage("voice-"+protocol.NewID(), from, nil, text, "")
	m.Params.Metadata[protocol.MetaSource] = protocol.SourceVoice
	if reading != "" {
		m.Params.Metadata[protocol.MetaVoice] = reading
	}
	if enrol != nil {
		m.Params.Metadata[protocol.MetaVoiceEnrol] = enrol
	}
	if err := fr.SendMessage(r.ctx, m); err != nil {
		r.t.Fatal(err)
	}
}

// Memory by voice: a voice the robots were sure of is remembered and
// recalled as its person; one they were unsure of is answered without
// anyone's facts and leaves none; an unknown voice neither, and asking
// what is remembered of it, or to forget it, tells and erases nothing.
func TestMemoryByVoiceIsPerPerson(t *testing.T) {
	b := newMemBrain()
	r, st, _ := memRig(t, b, nil)
	r.heardSays("sam", "My name is Sam. I like green tea.", protocol.VoiceSure, nil)
	waitFacts(t, st, "sam", 2)
	r.untilRest(10 * time.Second)

	r.heardSays("sam", "What should I drink tonight?", protocol.VoiceSure, nil)
	if in := b.input(t, "What should I drink tonight?"); len(in.Remembered) == 0 {
		t.Fatal("a sure voice recalled nothing of its person")
	}
	r.untilRest(10 * time.Second)
	r.heardSays("sam", "What should I eat tonight?", protocol.VoiceUnsure, nil)
	if in := b.input(t, "What should I eat tonight?"); len(in.Remembered) != 0 {
		t.Fatalf("an unsure voice recalled %+v", in.Remembered)
	}
	r.untilRest(10 * time.Second)
	r.heardSays("user", "My name is Mallory. I like coffee.", protocol.VoiceUnknown, nil)
	if in := b.input(t, "My name is Mallory. I like coffee."); len(in.Remembered) != 0 {
		t.Fatalf("an unknown voice recalled %+v", in.Remembered)
	}
	r.untilRest(10 * time.Second)
	r.heardSays("user", "What do you remember about me?", protocol.VoiceUnknown, nil)
	msgs, _ := r.untilRest(10 * time.Second)
	if said := lastFrom(msgs, "kyoko"); !strings.Contains(said, "not sure who you are") {
		t.Fatalf("to an unknown voice's recall: %q", said)
	}
	r.heardSays("sam", "Please forget me.", protocol.VoiceUnsure, nil)
	msgs, _ = r.untilRest(10 * time.Second)
	if said := lastFrom(msgs, "kyoko"); !strings.Contains(said, "not sure who you are") {
		t.Fatalf("to an unsure voice's forget me: %q", said)
	}
	time.Sleep(500 * time.Millisecond) // past RestAfter: what would be written is
	if fs := st.Facts("user"); len(fs) != 0 {
		t.Fatalf("an unknown voice's words were remembered: %+v", fs)
	}
	if fs := st.Facts("sam"); len(fs) != 2 {
		t.Fatalf("sam's facts after an unsure voice's forget me: %+v", fs)
	}
}

// Enrolment by voice is answered by the rules, saying how far it is.
func TestEnrolmentByVoiceIsAnswered(t *testing.T) {
	b := newMemBrain()
	r, _, _ := memRig(t, b, nil)
	for _, tc := range []struct {
		got  float64
		want string
	}{{1, "Say 2 more sentences"}, {2, "1 more, please"}, {3, "I know your voice now"}} {
		r.heardSays("user", "remember my voice i am sam", protocol.VoiceUnknown, map[string]any{"name": "Sam", "person": "sam", "got": tc.got, "need": 3.0})
		msgs, _ := r.untilRest(10 * time.Second)
		if said := lastFrom(msgs, "kyoko"); !strings.Contains(said, tc.want) {
			t.Fatalf("enrolment %v/3 answered %q", tc.got, said)
		}
	}
	if n, _ := b.Calls(); n != 0 {
		t.Fatalf("the brain was asked %d times about an enrolment", n)
	}
}
