package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chorusd --check-config names what a companion card says that does
// nothing on this robot: an error for a name nothing here answers (a
// start refuses it), a warning for what the room ignores (the robot
// starts). Each with the names that exist.
func TestCheckConfigNamesACardThatDoesNothing(t *testing.T) {
	const events = `
  events:
    params:
      type: object
      properties:
        need_response: {type: boolean, description: "Does it need an answer?"}
    conditions:
      - {expression: already_replied == false, instruction: Introduce yourself.}
      - {expression: need_response == true, instruction: Answer.}`
	const known = "known: companions_present, date_time, memory_search"
	for _, c := range []struct {
		name, card, rest string
		code             int
		want             []string // lines the output holds
		not              []string
	}{
		{name: "aikyo's name", card: "knowledge: [companions-network]", code: 1,
			want: []string{`companion.knowledge[0]: knowledge "companions-network" is not known; ` + known}},
		{name: "the fixture's names", card: "knowledge: [companions, datetime]", code: 1,
			want: []string{`companion.knowledge[0]: knowledge "companions" is not known; ` + known, `companion.knowledge[1]: knowledge "datetime" is not known; ` + known}},
		{name: "memory_search without memory", card: "knowledge: [date_time, memory_search]", code: 1,
			want: []string{"companion.knowledge[1]: memory_search searches the companion's memory, and this robot has none"}},
		{name: "memory_search with memory", card: "knowledge: [memory_search]", rest: "memory: {dir: %s}", code: 0},
		{name: "body without the bridge", card: "knowledge: [body]", code: 1,
			want: []string{`companion.knowledge[0]: knowledge "body" offers what a body behind the bridge declares, and this robot has no bridge`}},
		{name: "a body's tool with the bridge", card: "knowledge: [weather, body]", rest: `http: {listen: "127.0.0.1:0", websocket: {enabled: true}}`, code: 0,
			want: []string{`warning: companion.knowledge[0]: knowledge "weather" is not built in: it is offered only if the body behind the bridge declares a tool of that name`},
			not:  []string{"knowledge[1]"}},
		{name: "realtime room", card: "knowledge: [date_time]" + events, rest: "room: {name: lab, members: [kyoko], mode: realtime}", code: 0,
			want: []string{"warning: companion.events: ignored in a realtime room (room.mode: realtime): no condition chooses an instruction there, and already_replied is never known",
				"warning: companion.knowledge: ignored in a realtime room"}},
		{name: "already_replied declared", card: `events:
    params:
      type: object
      properties:
        already_replied: {type: boolean, description: "Have I talked with them?"}
    conditions:
      - {expression: already_replied == false, instruction: Introduce yourself.}`, code: 0,
			want: []string{"warning: companion.events.params.properties.already_replied: the runtime knows it"}},
		{name: "an error and a warning", card: "knowledge: [datetime]" + events, rest: "room: {name: lab, members: [kyoko], mode: realtime}", code: 1,
			want: []string{`companion.knowledge[0]: knowledge "datetime" is not known`, "warning: companion.events: ignored in a realtime room"}},
		{name: "a card that works", card: "knowledge: [companions_present, date_time]" + events, code: 0, not: []string{"warning", "not known"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rest := c.rest
			if strings.Contains(rest, "%s") {
				rest = fmt.Sprintf(rest, filepath.Join(dir, "memory"))
			}
			room := "room: {name: lab, members: [kyoko]}"
			if strings.HasPrefix(rest, "room:") {
				room, rest = rest, ""
			}
			http := `http: {listen: "off"}`
			if strings.HasPrefix(rest, "http:") {
				http, rest = rest, ""
			}
			path := filepath.Join(dir, "robot.yaml")
			cfg := "version: 1\ndevice: {id: pi}\n" + room + "\nmqtt: {broker: \"tcp://127.0.0.1:1\"}\n" +
				"companion:\n  id: kyoko\n  name: Kyoko\n  sample_lines: [\"Hi.\"]\n  language: en\n  " + c.card + "\n" +
				"drivers: {audio: {kind: null}, tts: {kind: tone}}\n" + http + "\n" + rest + "\n"
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errs strings.Builder
			code := Command(context.Background(), []string{"--check-config", path}, "test", &out, &errs)
			all := out.String() + errs.String()
			if code != c.code {
				t.Errorf("exit %d, want %d:\n%s\n(config:\n%s)", code, c.code, all, cfg)
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("the output does not say %q:\n%s", w, all)
				}
			}
			for _, n := range c.not {
				if strings.Contains(all, n) {
					t.Errorf("the output says %q:\n%s", n, all)
				}
			}
			if c.code == 0 && !strings.Contains(out.String(), path+": ok") {
				t.Errorf("no ok:\n%s", all)
			}
		})
	}
}
