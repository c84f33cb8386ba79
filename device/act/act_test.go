package act

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var angleSchema = json.RawMessage(`{"type":"object","properties":{"angle":{"type":"number","minimum":-90,"maximum":90}},"required":["angle"],"additionalProperties":false}`)

// recorder is a Doer that notes when it ran and holds its part until
// released or replaced.
type recorder struct {
	mu      sync.Mutex
	started []time.Time
	args    []string
	hold    time.Duration
}

func (r *recorder) do(ctx context.Context, args json.RawMessage) (string, error) {
	r.mu.Lock()
	r.started = append(r.started, time.Now())
	r.args = append(r.args, string(args))
	hold := r.hold
	r.mu.Unlock()
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-t.C:
		return "moved " + string(args), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (r *recorder) runs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started)
}

func newBody(t *testing.T, acts ...Action) (*Body, *metrics.Metrics) {
	t.Helper()
	b, err := New(acts)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	b.Metrics = m
	t.Cleanup(b.Close)
	return b, m
}

func look(r *recorder) Action {
	return Action{Def: protocol.ActionDef{Name: "look", Description: "turn the head", Schema: angleSchema}, Part: "head", Do: r.do}
}

func TestBadRequestsNameWhatIsWrong(t *testing.T) {
	r := &recorder{}
	b, m := newBody(t, look(r))
	cases := []struct {
		name, body, want, outcome string
	}{
		{"unknown action", `{"name":"dance"}`, `no action "dance" on this body (it has: look)`, "unknown"},
		{"missing argument", `{"name":"look","args":{}}`, "angle", "bad_args"},
		{"out of range", `{"name":"look","args":{"angle":1e308}}`, "/angle", "bad_args"},
		{"NaN as a string", `{"name":"look","args":{"angle":"NaN"}}`, "/angle", "bad_args"},
		{"extra argument", `{"name":"look","args":{"angle":1,"force":10}}`, "force", "bad_args"},
		{"args not an object", `{"name":"look","args":[1]}`, "args: must be a JSON object", "bad_request"},
		{"unknown field", `{"name":"look","speed":3}`, "speed", "bad_request"},
		{"name is the brain's", `{"name":"speak"}`, "brain's own tools", "bad_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.Handle(context.Background(), "kai", json.RawMessage(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	if r.runs() != 0 {
		t.Fatalf("a bad request ran the action %d times", r.runs())
	}
	for _, o := range []string{"unknown", "bad_args", "bad_request"} {
		if got := counter(m, o); got == 0 {
			t.Errorf("outcome %s not counted", o)
		}
	}
}

func counter(m *metrics.Metrics, outcome string) float64 {
	var n float64
	for _, name := range []string{unnamed, "look", "nod"} {
		n += testutilValue(m, name, outcome)
	}
	return n
}

func TestNewerActionReplacesOlderOnTheSamePart(t *testing.T) {
	r := &recorder{hold: time.Minute}
	b, _ := newBody(t, look(r))
	first := make(chan protocol.ActionResult, 1)
	go func() {
		res, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":10}`)})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	waitFor(t, func() bool { return r.runs() == 1 })
	r.mu.Lock()
	r.hold = 10 * time.Millisecond
	r.mu.Unlock()
	res, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":-10}`)})
	if err != nil || !res.Done || res.Replaced {
		t.Fatalf("the newer action: %+v, %v", res, err)
	}
	old := <-first
	if !old.Replaced || old.Done {
		t.Fatalf("the older action's result: %+v, want replaced", old)
	}
}

func TestActionTiedToAnUtteranceStartsWithItsAudio(t *testing.T) {
	r := &recorder{}
	b, _ := newBody(t, look(r))
	done := make(chan time.Time, 1)
	go func() {
		_, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":5}`), MessageID: "m1"})
		if err != nil {
			t.Error(err)
		}
		done <- time.Now()
	}()
	time.Sleep(50 * time.Millisecond)
	if r.runs() != 0 {
		t.Fatal("the action ran before its utterance's audio started")
	}
	audio := time.Now()
	b.Voice("m1", protocol.EmotionHappy, true)
	<-done
	r.mu.Lock()
	lag := r.started[0].Sub(audio)
	r.mu.Unlock()
	if lag < 0 || lag > 20*time.Millisecond {
		t.Fatalf("the action started %v after the audio", lag)
	}
	// An action for words already playing runs at once.
	start := time.Now()
	if _, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":1}`), MessageID: "m1"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Millisecond {
		t.Fatalf("an action for playing words waited %v", d)
	}
}

// An action that comes long after its words have ended (queued behind
// actions that hang) is not done with other words or in silence: it is
// answered "not done" and counted late. One that comes just after the
// words end is still done.
func TestActionLongAfterItsWordsIsDropped(t *testing.T) {
	r := &recorder{}
	b, m := newBody(t, look(r))
	b.LateAfter = 50 * time.Millisecond
	b.Voice("m1", protocol.EmotionNeutral, true)
	b.Voice("m1", protocol.EmotionNeutral, false)
	if res, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":5}`), MessageID: "m1"}); err != nil || !res.Done {
		t.Fatalf("just after its words: %+v, %v", res, err)
	}
	time.Sleep(80 * time.Millisecond)
	res, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":6}`), MessageID: "m1"})
	if err != nil || res.Done || !strings.Contains(res.Detail, "its words ended") {
		t.Fatalf("long after its words: %+v, %v", res, err)
	}
	if r.runs() != 1 {
		t.Fatalf("the part moved %d times, want once", r.runs())
	}
	if n := testutilValue(m, "look", "late"); n != 1 {
		t.Fatalf("late actions counted %v", n)
	}
}

func TestActionRunsAnywayWhenItsUtteranceNeverStarts(t *testing.T) {
	r := &recorder{}
	b, _ := newBody(t, look(r))
	b.CueWait = 30 * time.Millisecond
	res, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":5}`), MessageID: "never"})
	if err != nil || !res.Done {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestEmotionShowsWhereNoActionOfTheWordsWaits(t *testing.T) {
	var face, light atomic.Value
	show := func(v *atomic.Value) func(ctx context.Context, e protocol.Emotion) error {
		return func(ctx context.Context, e protocol.Emotion) error {
			v.Store(string(e))
			<-ctx.Done()
			return nil
		}
	}
	r := &recorder{}
	faceAct := Action{Def: protocol.ActionDef{Name: "show", Description: "a face", Schema: json.RawMessage(`{"type":"object"}`)}, Part: "face", Do: r.do}
	b, _ := newBody(t, faceAct)
	b.Emotion = []Shower{{Part: "face", Show: show(&face)}, {Part: "light", Show: show(&light)}}

	b.Voice("m1", protocol.EmotionSad, true)
	waitFor(t, func() bool { return face.Load() == "sad" && light.Load() == "sad" })
	b.Voice("m1", "", false)

	// The model's face action for m2 waits for m2's audio: the emotion
	// leaves the face to it and still shows on the light.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := b.Do(context.Background(), protocol.ActionRequest{Name: "show", MessageID: "m2"}); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		c := b.cues["m2"]
		return c != nil && c.parts["face"]
	})
	b.Voice("m2", protocol.EmotionAngry, true)
	waitFor(t, func() bool { return light.Load() == "angry" })
	<-done
	if face.Load() != "sad" {
		t.Fatalf("the face showed %v over the model's action", face.Load())
	}
	b.Voice("m2", "", false)
	if err := b.Speech().Err(); err == nil {
		t.Fatal("Speech's context lives on after the words ended")
	}
}

func TestAThousandActionsASecondOnOnePart(t *testing.T) {
	r := &recorder{hold: 5 * time.Millisecond}
	b, _ := newBody(t, look(r))
	var wg sync.WaitGroup
	var done, replaced atomic.Int64
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":` + itoa(i%180-90) + `}`)})
			switch {
			case err != nil:
				t.Error(err)
			case res.Replaced:
				replaced.Add(1)
			case res.Done:
				done.Add(1)
			}
		}()
		if i%10 == 9 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	wg.Wait()
	if done.Load()+replaced.Load() != 1000 || done.Load() == 0 {
		t.Fatalf("done %d, replaced %d of 1000", done.Load(), replaced.Load())
	}
	b.mu.Lock()
	left := 0
	for _, ln := range b.lanes {
		if ln.newest != nil || len(ln.free) != 1 {
			left++
		}
	}
	b.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d parts still marked running", left)
	}
}

func TestCloseEndsRunningActions(t *testing.T) {
	r := &recorder{hold: time.Hour}
	b, err := New([]Action{look(r)})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := b.Do(context.Background(), protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":1}`)})
		errc <- err
	}()
	waitFor(t, func() bool { return r.runs() == 1 })
	b.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("an action ended by Close reported done")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the running action")
	}
}

func TestNewRefusesBadDeclarations(t *testing.T) {
	cases := []struct {
		name string
		def  protocol.ActionDef
		want string
	}{
		{"invalid schema", protocol.ActionDef{Name: "a", Description: "d", Schema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"nombre"}}}`)}, "not a valid JSON Schema"},
		{"not an object schema", protocol.ActionDef{Name: "a", Description: "d", Schema: json.RawMessage(`{"type":"string"}`)}, "must describe an object"},
		{"reserved name", protocol.ActionDef{Name: "vision", Description: "d", Schema: json.RawMessage(`{"type":"object"}`)}, "brain's own tools"},
		{"no description", protocol.ActionDef{Name: "a", Schema: json.RawMessage(`{"type":"object"}`)}, "description"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New([]Action{{Def: c.def, Do: (&recorder{}).do}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
