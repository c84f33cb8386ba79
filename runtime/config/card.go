// What the companion card names, checked against the rest of the config:
// a card that would start and silently do nothing is named.

package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/settings"
)

// CheckCard adds to p what the card names that nothing here answers (a
// start refuses it), and to warn what the card says that this config
// ignores (said, and the robot starts). bodyTools says a body behind this
// robot's bridge (http.websocket) may declare knowledge tools of its own.
//
// Errors: a knowledge name that is neither built in nor, with the bridge,
// "body"; memory_search without a memory section. Warnings: a name that
// only a body behind the bridge can declare; events or knowledge in a
// realtime room, which reads neither; already_replied declared among the
// params, where the runtime's value replaces the model's.
func (c *Config) CheckCard(p, warn *settings.Problems, bodyTools bool) {
	card := c.Companion
	if card == nil {
		return
	}
	known := slices.Clone(companion.BuiltinKnowledge)
	if bodyTools {
		known = append(known, brain.KnowBody)
	}
	for i, k := range card.Knowledge {
		f := fmt.Sprintf("companion.knowledge[%d]", i)
		switch {
		case k == companion.KnowMemory && c.Memory == nil:
			p.Add(f, "memory_search searches the companion's memory, and this robot has none: add a memory section, or remove it")
		case slices.Contains(known, k):
		case bodyTools:
			warn.Add(f, "knowledge %q is not built in: it is offered only if the body behind the bridge declares a tool of that name (knowledge.declare); built in: %s", k, strings.Join(known, ", "))
		case k == brain.KnowBody:
			p.Add(f, "knowledge %q offers what a body behind the bridge declares, and this robot has no bridge (http.websocket.enabled); known: %s", k, strings.Join(known, ", "))
		default:
			p.Add(f, "knowledge %q is not known; known: %s (and, with the bridge on, body or a tool the body declares)", k, strings.Join(known, ", "))
		}
	}
	if c.Room.Mode == ModeRealtime {
		if !card.Events.IsZero() {
			warn.Add("companion.events", "ignored in a realtime room (room.mode: realtime): no condition chooses an instruction there, and already_replied is never known")
		}
		if len(card.Knowledge) > 0 {
			warn.Add("companion.knowledge", "ignored in a realtime room (room.mode: realtime): its model is offered no knowledge tool there")
		}
	}
	if card.Events.Param(brain.EventAlreadyReplied) != nil {
		warn.Add("companion.events.params.properties."+brain.EventAlreadyReplied, "the runtime knows it (has this companion answered the person) and its value replaces the model's: the description is not used; remove it from params (conditions may use it undeclared)")
	}
}
