package parts

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/config"
)

// The action drivers are one group of the registry: the config's drivers
// and the registry's are the same list, --list names each with what it
// is, and every action of a valid config is made by its kind.
func TestActionKindsAreTheConfigsDrivers(t *testing.T) {
	if got, want := ActionKinds.Kinds(), slices.Sorted(slices.Values(config.ActionDrivers)); !slices.Equal(got, want) {
		t.Fatalf("registry %v, config %v", got, want)
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
		Needs: func(*config.Config) []string { return []string{"body.test: not on this machine"} },
		Probe: func(context.Context, *config.Config, time.Duration) []Probe {
			return []Probe{{Name: "test part", Fix: "plug it in", Err: errors.New("no answer")}}
		}})
	t.Cleanup(func() { delete(ActionKinds.kinds, kind) })
	c := &config.Config{}
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
}
