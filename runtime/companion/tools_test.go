package companion_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/braintest"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/tool"
)

// What the body of the knowledge tests declares: two tools of its own,
// one with a built-in tool's name and one with an action's.
var (
	bodyKnows = []protocol.KnowledgeDef{
		{Name: "weather", Description: "Today's weather here", Parameters: json.RawMessage(`{"type":"object","properties":{"day":{"enum":["today","tomorrow"]}}}`)},
		{Name: "news", Description: "The headlines", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "date_time", Description: "The body's own clock", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "wave", Description: "Whether the hand is free", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	bodyActs = []protocol.ActionDef{{Name: "wave", Description: "Wave a hand", Schema: json.RawMessage(`{"type":"object"}`)}}
)

// knowing is what a brain of the knowledge tests saw and got: the tools
// offered (their names, and which came from the body) and each call's
// answer or error.
type knowing struct {
	mu      sync.Mutex
	offered []string
	body    []string
	answers map[string]string
}

// knowingBrain speaks to the user: it calls every tool offered but
// date_time (the clock's answer is not the test's) and says the answers
// in its draft.
func knowingBrain(k *knowing) *braintest.Func {
	return &braintest.Func{ThinkFn: func(ctx context.Context, in brain.Input) (brain.Thought, error) {
		if in.Message.Params.From != "user" {
			return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
		}
		var draft []string
		k.mu.Lock()
		defer k.mu.Unlock()
		k.answers = map[string]string{}
		for _, t := range in.Tools {
			if t.Kind == tool.WithWords {
				continue // the body's actions: done with the words
			}
			k.offered = append(k.offered, t.Name)
			if t.Source == tool.FromBody {
				k.body = append(k.body, t.Name)
			}
			if t.Name == companion.KnowDateTime {
				continue
			}
			res, err := t.Call(ctx, tool.Call{Name: t.Name, Args: json.RawMessage(`{"day":"today"}`), Caller: in.Message.Params.From})
			text := res.Text
			if err != nil {
				text = "error: " + err.Error()
			}
			k.answers[t.Name] = text
			draft = append(draft, text)
		}
		return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "Here: " + strings.Join(draft, " ")}, nil
	}}
}

// knowledgeRun runs a companion with card knowledge list, whose body
// declares bodyKnows (nil: no Config.Knowledge) and can do bodyActs, and
// answers knowledge queries: weather with a forecast, news with an error.
func knowledgeRun(t *testing.T, list []string, declared []protocol.KnowledgeDef) (*knowing, protocol.Message, []protocol.KnowledgeRequest) {
	t.Helper()
	k := &knowing{}
	var mu sync.Mutex
	var asked []protocol.KnowledgeRequest
	said := speakTuned(t, metrics.New(), func(context.Context, string, json.RawMessage) (any, error) {
		return protocol.SpeakResult{DurationMs: 1}, nil
	}, func(cfg *companion.Config, srv *query.Server) {
		cfg.Card.Knowledge = list
		cfg.Brain = knowingBrain(k)
		cfg.Actions = func() []protocol.ActionDef { return bodyActs }
		if declared != nil {
			cfg.Knowledge = func() []protocol.KnowledgeDef { return declared }
		}
		srv.Handle(protocol.TypeKnowledge, func(_ context.Context, from string, body json.RawMessage) (any, error) {
			r, err := protocol.DecodeKnowledgeRequest(body, 0)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			asked = append(asked, r)
			mu.Unlock()
			switch r.Name {
			case "weather":
				return protocol.KnowledgeResult{Text: "Sunny, 21 °C, from " + from + "'s body."}, nil
			case "news":
				return nil, errors.New("no newspaper today")
			}
			return nil, errors.New("unknown tool " + r.Name)
		})
	})
	mu.Lock()
	defer mu.Unlock()
	return k, said, asked
}

// A tool the body declares is offered when the card names it: the
// brain's call asks the body a knowledge query, and the body's text comes
// back into the words said. A tool the card does not name (news), one
// with a built-in tool's name (date_time: the built-in is offered, once)
// or an action's (wave) is not offered.
func TestBodyKnowledgeNamedByTheCard(t *testing.T) {
	k, said, asked := knowledgeRun(t, []string{"weather", "date_time", "wave"}, bodyKnows)
	if !slices.Equal(k.offered, []string{"date_time", "weather"}) || !slices.Equal(k.body, []string{"weather"}) {
		t.Fatalf("offered %v (from the body %v), want date_time (built-in) and weather (the body's)", k.offered, k.body)
	}
	if want := "Sunny, 21 °C, from kyoko's body."; k.answers["weather"] != want || !strings.Contains(said.Params.Message, want) {
		t.Fatalf("the weather's answer %q, said %q", k.answers["weather"], said.Params.Message)
	}
	if len(asked) != 1 || asked[0].Name != "weather" || string(asked[0].Args) != `{"day":"today"}` {
		t.Fatalf("the body was asked %+v", asked)
	}
}

// The card's word "body" offers every tool the body declares but those
// that clash; a body's error reaches the brain naming the tool and the
// body.
func TestBodyKnowledgeByTheWordBody(t *testing.T) {
	k, said, _ := knowledgeRun(t, []string{"body"}, bodyKnows)
	if !slices.Equal(k.offered, []string{"weather", "news"}) || !slices.Equal(k.body, k.offered) {
		t.Fatalf("offered %v, want the body's weather and news", k.offered)
	}
	if e := k.answers["news"]; !strings.Contains(e, "knowledge news of body kyoko") || !strings.Contains(e, "no newspaper today") {
		t.Fatalf("the news call answered %q", e)
	}
	if !strings.Contains(said.Params.Message, "Sunny") {
		t.Fatalf("said %q", said.Params.Message)
	}
}

// Nothing of the body's is offered to a card that lists no knowledge, nor
// when the body declares none; a card's name for a tool the body did not
// declare offers nothing.
func TestBodyKnowledgeNotOffered(t *testing.T) {
	for _, tc := range []struct {
		name     string
		list     []string
		declared []protocol.KnowledgeDef
	}{
		{"a card with no knowledge", nil, bodyKnows},
		{"a body that declared none", []string{"weather", "body"}, nil},
		{"a tool the body did not declare", []string{"forecast"}, bodyKnows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _, asked := knowledgeRun(t, tc.list, tc.declared)
			if len(k.offered) != 0 || len(asked) != 0 {
				t.Fatalf("offered %v, the body asked %v", k.offered, asked)
			}
		})
	}
}

// offeredRun runs a companion with card knowledge list, a body that
// declares know, and MCP tools mcpTools; it returns the tools offered to
// its brain for a person's message, as name(source).
func offeredRun(t *testing.T, list []string, know []protocol.KnowledgeDef, mcpTools []tool.Tool) []string {
	var mu sync.Mutex
	var got []string
	speakTuned(t, metrics.New(), func(context.Context, string, json.RawMessage) (any, error) {
		return protocol.SpeakResult{DurationMs: 1}, nil
	}, func(cfg *companion.Config, _ *query.Server) {
		cfg.Card.Knowledge = list
		cfg.Brain = &braintest.Func{ThinkFn: func(ctx context.Context, in brain.Input) (brain.Thought, error) {
			if in.Message.Params.From != "user" {
				return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
			}
			mu.Lock()
			got = nil
			for _, tl := range in.Tools {
				got = append(got, tl.Name+"("+tl.Source+")")
			}
			mu.Unlock()
			return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "ok"}, nil
		}}
		if know != nil {
			cfg.Knowledge = func() []protocol.KnowledgeDef { return know }
		}
		cfg.Tools = func() []tool.Tool { return mcpTools }
	})
	mu.Lock()
	defer mu.Unlock()
	return got
}

// An MCP server's allowed tool is offered whatever card.knowledge says: a
// body's knowledge tool of the same name neither hides it (the card does
// not allow the body's) nor takes its place (the card allows it: the MCP
// tool came first, and it acts, once) — an outside check found both.
// A server may be named body.
func TestMCPToolsAreNotShadowedByTheBodys(t *testing.T) {
	ha := []tool.Tool{{Name: "ha_HassTurnOn", Description: "turn on", Kind: tool.Acts, Source: tool.FromMCP("ha"),
		Call: tool.Text(func(context.Context, json.RawMessage) (string, error) { return "on", nil })}}
	body := []protocol.KnowledgeDef{{Name: "ha_HassTurnOn", Description: "the kiosk's", Parameters: json.RawMessage(`{"type":"object"}`)}}
	ha = append(ha, tool.Tool{Name: "body_HassTurnOff", Description: "turn off", Kind: tool.Acts, Source: tool.FromMCP("body"),
		Call: tool.Text(func(context.Context, json.RawMessage) (string, error) { return "off", nil })})
	want := "ha_HassTurnOn(mcp:ha),body_HassTurnOff(mcp:body)"
	if got := strings.Join(offeredRun(t, nil, body, ha), ","); got != want {
		t.Errorf("a card that lists no knowledge is offered %s, want %s", got, want)
	}
	if got := strings.Join(offeredRun(t, []string{"body"}, body, ha), ","); got != want {
		t.Errorf("a card that lists body is offered %s, want %s", got, want)
	}
}

// companions_present is called by the brain, off the companion's loop,
// while presences come and go: it reads the list the loop last saw, never
// the loop's own map (an outside check found the race: -race reported it,
// and without -race chorusd died of a concurrent map iteration and write).
func TestCompanionsPresentToolWhilePresencesChange(t *testing.T) {
	var once sync.Once
	speakTuned(t, metrics.New(), func(context.Context, string, json.RawMessage) (any, error) {
		return protocol.SpeakResult{DurationMs: 1}, nil
	}, func(cfg *companion.Config, _ *query.Server) {
		cfg.Card.Knowledge = []string{companion.KnowCompanions}
		rm := cfg.Room
		cfg.Brain = &braintest.Func{ThinkFn: func(ctx context.Context, in brain.Input) (brain.Thought, error) {
			if in.Message.Params.From != "user" {
				return brain.Thought{State: protocol.Listen, Closing: protocol.ClosingNone}, nil
			}
			once.Do(func() {
				stop := make(chan struct{})
				go func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						id := []string{"hana", "aya"}[i%2]
						a := rm.Announce(id, id, 0)
						r := a.Birth(time.Now())
						if i%4 >= 2 {
							r = a.Will()
						}
						rm.Bus.Publish(context.Background(), r.Topic, r.Payload, true)
					}
				}()
				called := 0
				for _, tl := range in.Tools {
					if tl.Name == companion.KnowCompanions {
						for end := time.Now().Add(time.Second); time.Now().Before(end); called++ {
							res, err := tl.Call(ctx, tool.Call{Name: tl.Name})
							var ids []string
							if err != nil || json.Unmarshal([]byte(res.Text), &ids) != nil {
								t.Errorf("companions_present answered %+v %v", res, err)
								break
							}
						}
					}
				}
				close(stop)
				if called == 0 {
					t.Error("companions_present was not offered")
				}
			})
			return brain.Thought{State: protocol.Speak, Importance: 5, Closing: protocol.ClosingNone, Draft: "ok"}, nil
		}}
	})
}
