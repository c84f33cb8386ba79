package parts

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// The action drivers are one group of the registry, the only list of
// them: --list names each with what it is, and a config's error lists
// them in the order the README gives.
func TestActionKindsAreTheOneList(t *testing.T) {
	if got, want := ActionKinds.order, []string{DriverServo, DriverLED, DriverFace, DriverGPIO, DriverCommand}; !slices.Equal(got, want) {
		t.Fatalf("registry %v, want %v", got, want)
	}
	list := List()
	for _, k := range ActionKinds.Kinds() {
		if !strings.Contains(list, "  "+k) || !strings.Contains(list, ActionKinds.kinds[k].About) {
			t.Errorf("--list lacks the action driver %s:\n%s", k, list)
		}
	}
}

// A new kind is one registration: the doctor probes it and --check-config
// reports what it lacks, with nothing else to change (issue 30, item 3).
func TestANewActionKindIsOneRegistration(t *testing.T) {
	const kind = "test-part"
	ActionKinds.Add(ActionKind{Kind: kind, About: "a part only this test has",
		Needs: func(*robot.Config) []string { return []string{"body.test: not on this machine"} },
		Probe: func(context.Context, *robot.Config, time.Duration) []Probe {
			return []Probe{{Name: "test part", Fix: "plug it in", Err: errors.New("no answer")}}
		},
		Owns: func(a robot.Action) []string { return set("joint", a.Joint != "") },
		Check: func(p *settings.Problems, a robot.Action, _ *robot.Config) {
			if a.Pin != "" {
				p.Add("pin", "a test part has no pin")
			}
		},
		Schema: func(robot.Action) map[string]any {
			return object(map[string]any{"level": map[string]any{"type": "integer"}}, "level")
		}})
	t.Cleanup(func() {
		delete(ActionKinds.kinds, kind)
		ActionKinds.order = slices.DeleteFunc(ActionKinds.order, func(k string) bool { return k == kind })
	})
	c := &robot.Config{}
	if got := CheckBody(c, Here); !slices.Contains(got, "body.test: not on this machine") {
		t.Errorf("CheckBody = %v", got)
	}
	if got := CheckBody(c, Anywhere); len(got) != 0 {
		t.Errorf("CheckBody anywhere = %v", got)
	}
	probes := ProbeBody(context.Background(), c, time.Second)
	if !slices.ContainsFunc(probes, func(p Probe) bool { return p.Name == "test part" && p.Err != nil && p.Fix == "plug it in" }) {
		t.Errorf("ProbeBody = %+v", probes)
	}
	if !strings.Contains(List(), "a part only this test has") {
		t.Error("--list lacks the new kind")
	}
	// Its fields, checks and arguments are its own: an action of it is
	// checked by them, and another kind may not set what it owns.
	c.Body.Actions = []robot.Action{{Name: "t", Description: "d", Driver: kind, Pin: "GPIO1"},
		{Name: "g", Description: "d", Driver: DriverGPIO, Pin: "GPIO2", Joint: "pan"}}
	got := checkBody(c)
	for _, want := range []string{"body.actions[0].pin: a test part has no pin", "body.actions[1].joint: is only for driver test-part", "body.actions[1].joint: is only for driver servo"} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("checkBody lacks %q: %q", want, got)
		}
	}
	if def := ActionDef(c.Body.Actions[0]); !strings.Contains(string(def.Schema), `"level"`) {
		t.Errorf("the new kind's schema: %s", def.Schema)
	}
}
