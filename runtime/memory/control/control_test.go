package control_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/memory/control"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Both brokers: the embedded one and a real Mosquitto with the ACL Chorus
// renders, so the rule "a person's memory traffic is theirs and the
// device's" holds on each.
func TestMemoryControl(t *testing.T) {
	brokers := map[string]func(t *testing.T) string{
		"embedded":  func(t *testing.T) string { return bustest.StartEmbedded(t, bustest.Options{ACL: true}).URL() },
		"mosquitto": func(t *testing.T) string { return bustest.StartMosquitto(t, bustest.Options{ACL: true}).URL() },
	}
	for name, start := range brokers {
		t.Run(name, func(t *testing.T) { memoryControl(t, start(t)) })
	}
}

func memoryControl(t *testing.T, url string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := topic.New("")
	dial := func(id string) bus.Bus {
		b, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: id + "-" + protocol.NewID()[:8], Username: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	st, err := memory.Open(t.TempDir(), "kyoko", memory.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Add(memory.Fact{Person: "alice", Key: "home", Text: "lives in Osaka", MessageID: "m1"},
		memory.Fact{Person: "bob", Key: "home", Text: "lives in Kyoto", MessageID: "m2"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var forgot []string
	voices, err := memory.OpenVoices(t.TempDir(), "kyoko", memory.VoiceLimits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer voices.Close()
	m := &control.Memory{Store: st, Voices: voices,
		Person:     func(id string) bool { return id == "alice" || id == "bob" },
		IsOperator: func(id string) bool { return id == "root" },
		Forgot:     func(p string, n int) { mu.Lock(); forgot = append(forgot, p); mu.Unlock() }}
	done := make(chan struct{})
	go func() { defer close(done); control.Serve(ctx, dial("dev"), s, "dev", m) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond) // subscribed

	// An eavesdropper subscribed to everything reads nobody's answers.
	var heard []string
	eve := dial("eve")
	eve.Subscribe(ctx, "#", func(t string, _ []byte) {
		if strings.Contains(t, "/memory/") {
			mu.Lock()
			heard = append(heard, t)
			mu.Unlock()
		}
	})

	ask := func(as string, req protocol.MemoryRequest) (protocol.MemoryAnswer, error) {
		c := query.NewClient(dial(as), s, as, query.ClientOptions{Private: true})
		defer c.Close()
		if req.ID == "" {
			req.ID = protocol.NewID()
		}
		return query.Call(ctx, c, "dev", query.Memory, req, 5*time.Second)
	}
	cases := []struct {
		name, as string
		req      protocol.MemoryRequest
		refused  string // part of the refusal; "" when allowed
		facts    int
	}{
		{"a person lists their own", "alice", protocol.MemoryRequest{Op: protocol.MemoryList, Person: "alice"}, "", 1},
		{"not another's", "bob", protocol.MemoryRequest{Op: protocol.MemoryList, Person: "alice"}, "may not see or forget", 0},
		{"a person's list without a name is their own", "bob", protocol.MemoryRequest{Op: protocol.MemoryExport}, "", 1},
		{"an operator lists everyone's", "root", protocol.MemoryRequest{Op: protocol.MemoryList}, "", 2},
		{"nobody but an operator wipes", "alice", protocol.MemoryRequest{Op: protocol.MemoryWipe}, "only an operator", 0},
		{"a person forgets another", "bob", protocol.MemoryRequest{Op: protocol.MemoryForget, Person: "alice"}, "may not", 0},
		// Voices: enrolment by command is an operator's, for the room's people.
		{"a person enrols by command", "bob", protocol.MemoryRequest{Op: protocol.MemoryEnrolVoice, Person: "bob", Model: "m", Embeddings: [][]float32{{1, 0}}}, "only an operator", 0},
		{"an operator enrols nobody of the room", "root", protocol.MemoryRequest{Op: protocol.MemoryEnrolVoice, Person: "zed", Model: "m", Embeddings: [][]float32{{1, 0}}}, "not one of the people", 0},
		{"an operator enrols bob", "root", protocol.MemoryRequest{Op: protocol.MemoryEnrolVoice, Person: "bob", Model: "m", Embeddings: [][]float32{{1, 0}}}, "", 0},
		{"an operator enrols bob with the most embeddings a request takes", "root", protocol.MemoryRequest{Op: protocol.MemoryEnrolVoice, Person: "bob", Model: "m", Embeddings: most()}, "", 0},
		{"another model is refused", "root", protocol.MemoryRequest{Op: protocol.MemoryEnrolVoice, Person: "alice", Model: "other", Embeddings: [][]float32{{1, 0}}}, "of model", 0},
		{"alice may not forget bob's voice", "alice", protocol.MemoryRequest{Op: protocol.MemoryForgetVoice, Person: "bob"}, "may not", 0},
	}
	for _, c := range cases {
		a, err := ask(c.as, c.req)
		switch {
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: got %v, want a refusal saying %q", c.name, err, c.refused)
		case c.refused == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case len(a.Facts) != c.facts:
			t.Errorf("%s: %d facts, want %d", c.name, len(a.Facts), c.facts)
		}
	}
	// A fact's id names whose it is: forgetting one needs no person, and
	// the rule is the same as when it is named.
	bobs := st.Facts("bob")[0].ID
	if _, err := ask("alice", protocol.MemoryRequest{Op: protocol.MemoryForget, Fact: bobs}); err == nil || !strings.Contains(err.Error(), "alice may not see or forget what is remembered about bob") {
		t.Errorf("alice forgets bob's fact by its id: %v", err)
	}
	if len(st.Facts("bob")) != 1 {
		t.Fatal("alice forgot bob's fact")
	}
	// Exported facts say where they came from; listed ones do not.
	if a, err := ask("alice", protocol.MemoryRequest{Op: protocol.MemoryExport, Person: "alice"}); err != nil || a.Facts[0].MessageID != "m1" {
		t.Fatalf("export: %+v, %v", a, err)
	}
	// The same request seen twice gets the answer it had (at least once).
	req := protocol.MemoryRequest{ID: protocol.NewID(), Op: protocol.MemoryForget, Person: "alice"}
	a1, err1 := ask("alice", req)
	a2, err2 := ask("alice", req)
	if err1 != nil || err2 != nil || a1.Forgotten != 1 || a2.Forgotten != 1 {
		t.Fatalf("forget twice: %+v %v / %+v %v", a1, err1, a2, err2)
	}
	if len(st.Facts("alice")) != 0 || len(st.Facts("bob")) != 1 {
		t.Fatalf("after forget: alice %v, bob %v", st.Facts("alice"), st.Facts("bob"))
	}
	if a, err := ask("bob", protocol.MemoryRequest{Op: protocol.MemoryVoices}); err != nil || len(a.Voices) != 1 || a.Voices[0].Person != "bob" {
		t.Fatalf("bob's voice: %+v, %v", a, err)
	}
	if a, err := ask("bob", protocol.MemoryRequest{Op: protocol.MemoryForget, Fact: bobs}); err != nil || a.Forgotten != 1 || len(st.Facts("bob")) != 0 {
		t.Fatalf("bob forgets his fact by its id: %+v %v, left %v", a, err, st.Facts("bob"))
	}
	if a, err := ask("bob", protocol.MemoryRequest{Op: protocol.MemoryForget, Fact: bobs}); err != nil || a.Forgotten != 0 {
		t.Fatalf("bob forgets a fact forgotten already: %+v %v; want nothing forgotten, no refusal", a, err)
	}
	if !voices.Knows("bob") {
		t.Fatal("forgetting one fact took the voice")
	}
	if _, err := ask("root", protocol.MemoryRequest{Op: protocol.MemoryWipe}); err != nil || voices.Knows("bob") {
		t.Fatalf("wipe: %v; bob's voice known %v", err, voices.Knows("bob"))
	}
	// eve's own answer reaches her subscription: it reads, just not others'.
	if _, err := query.Call(ctx, query.NewClient(eve, s, "eve", query.ClientOptions{Private: true}), "dev", query.Memory, protocol.MemoryRequest{ID: protocol.NewID(), Op: protocol.MemoryList, Person: "eve"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(forgot) != 2 || forgot[0] != "alice" || forgot[1] != "bob" {
		t.Fatalf("forgot reports %v, want one for alice, then bob", forgot)
	}
	own := 0
	for _, h := range heard {
		if !strings.Contains(h, "/memory/eve") {
			t.Fatalf("an eavesdropper read another's memory traffic: %v", heard)
		}
		own++
	}
	if own == 0 {
		t.Fatal("eve's subscription read nothing, not even her own answer: the test proves nothing")
	}
}

// most is an enrolment's most embeddings, each of the most dimensions
// (protocol.MaxEnrolEmbeddings × MaxEmbeddingDims): more than the 64 KB
// of other queries, which once refused it.
func most() [][]float32 {
	out := make([][]float32, protocol.MaxEnrolEmbeddings)
	for i := range out {
		out[i] = make([]float32, protocol.MaxEmbeddingDims)
		for j := range out[i] {
			out[i][j] = 0.1234567 + float32(i*j%7)/1000
		}
	}
	return out
}
