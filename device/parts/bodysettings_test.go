package parts

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// The body's settings are its parts': defaults from its drivers, each
// action's fields by its kind, every bad field named (they were
// runtime/config's until issue 30; the cases are the same).
func TestBodySettings(t *testing.T) {
	base := "version: 1\ndevice: {id: dev1}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\nroom: {name: lab, members: [k]}\ncompanion: {id: k, name: K, personality: calm, language: en}\n"
	head := "body:\n  servos: {joints: [{name: pan, channel: 0, min: -60, max: 60}, {name: tilt, channel: 1, min: -20, max: 30}]}\n"
	c, err := robot.Decode(strings.NewReader(base + "body:\n  servos: {joints: [{name: pan, channel: 0, min: -60, max: 60}, {name: tilt, channel: 1, min: -20, max: 30}], poses: {greet: [{pan: 20, hold: 100ms}, {pan: -20, tilt: 5}]}}\n" + `  face: {}
  strip: {kind: ws2812, count: 12}
  actions:
    - {name: nod, description: Nod., driver: servo}
    - {name: greet, description: Greet., driver: servo}
    - {name: look, description: Turn the head., driver: servo, joint: pan}
    - {name: show, description: Show a face., driver: face}
    - {name: light, description: Light up., driver: led}
    - {name: beep, description: Beep., driver: gpio, pin: GPIO17}
    - {name: wave, description: Wave., driver: command, command: [./wave.sh], schema: {type: object, properties: {hand: {enum: [left, right]}}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkBody(c); err != nil {
		t.Fatalf("a good body: %v", err)
	}
	b := c.Body
	if b.Servos.Bus != "/dev/i2c-1" || b.Servos.Address != "0x40" || b.Servos.Tick != 20*time.Millisecond || b.Servos.Joints[0].MaxSpeed != 180 ||
		b.Face.Address != "0x3c" || b.Face.Height != 64 || b.Strip.Port != "/dev/spidev0.0" || b.Strip.Brightness != 0.5 || !b.EmotionShown() {
		t.Fatalf("defaults: %+v %+v %+v", b.Servos, b.Face, b.Strip)
	}
	a := append([]robot.Action(nil), b.Actions...)
	if g := b.Servos.Poses["greet"]; len(g) != 2 || g[0].Angles["pan"] != 20 || g[0].Hold != 100*time.Millisecond || g[1].Angles["tilt"] != 5 {
		t.Fatalf("pose greet: %+v", g)
	}
	a = append(a[:1], a[2:]...)
	if a[0].Pose != "nod" || a[3].Target != "strip" || a[4].Pulse != 200*time.Millisecond || a[5].Timeout != 5*time.Second {
		t.Fatalf("action defaults: %+v", a)
	}
	var defs []protocol.ActionDef
	for _, a := range c.Body.Actions {
		defs = append(defs, ActionDef(a))
	}
	if len(defs) != 7 || !strings.Contains(string(defs[2].Schema), `"angle"`) || !strings.Contains(string(defs[6].Schema), `"hand"`) {
		t.Fatalf("declarations: %s / %s", defs[2].Schema, defs[6].Schema)
	}
	for _, d := range defs {
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}

	for _, tt := range []struct{ yaml, field string }{
		{"body: {actions: [{name: x, description: d, driver: laser}]}\n", "body.actions[0].driver: must be one of servo, led, face, gpio, command"},
		{"body: {actions: [{name: x, description: d, driver: servo}]}\n", "servo needs body.servos"},
		{head + "  actions: [{name: x, description: d, driver: servo, pose: dance}]\n", "body.actions[0].pose: no pose is named \"dance\""},
		{head + "  actions: [{name: x, description: d, driver: servo, joint: elbow}]\n", "body.actions[0].joint"},
		{"body: {actions: [{name: x, description: d, driver: face}]}\n", "face needs body.face"},
		{"body: {actions: [{name: x, description: d, driver: led}]}\n", "status needs drivers.gpio.led"},
		{"body: {actions: [{name: x, description: d, driver: gpio}]}\n", "body.actions[0].pin"},
		{"body: {actions: [{name: x, description: d, driver: command}]}\n", "body.actions[0].command"},
		{"body: {actions: [{name: x, description: d, driver: command, command: [a], timeout: 1h}]}\n", "body.actions[0].timeout"},
		{"body: {actions: [{name: x, description: d, driver: command, command: [a], schema: {type: objekt}}]}\n", "not a valid JSON Schema"},
		{"body: {actions: [{name: x, description: d, driver: command, command: [a], schema: {type: string}}]}\n", "must describe an object"},
		{"body: {actions: [{name: x, description: d, driver: command, command: [a], schema: {$ref: \"https://evil/x.json\"}}]}\n", "body.actions[0].schema"},
		{"body: {actions: [{name: x, description: d, driver: gpio, pin: P, schema: {type: object}}]}\n", "body.actions[0].schema: is only for driver command"},
		{"body: {actions: [{name: speak, description: d, driver: gpio, pin: P}]}\n", "body.actions[0].name"},
		{"body: {actions: [{name: \"a b\", description: d, driver: gpio, pin: P}]}\n", "body.actions[0].name"},
		{"body: {actions: [{name: a, driver: gpio, pin: P}]}\n", "body.actions[0].description"},
		{"body: {actions: [{name: a, description: d, driver: gpio, pin: P}, {name: A, description: d, driver: gpio, pin: Q}]}\n", "body.actions[1].name: \"A\" is named twice"},
		{"body: {servos: {address: 0x99, joints: [{name: pan, channel: 0, min: -1, max: 1}]}}\n", "body.servos.address"},
		{"body: {servos: {joints: [{name: pan, channel: 16, min: -1, max: 1}]}}\n", "body.servos.joints[0].channel"},
		{"body: {servos: {joints: [{name: pan, channel: 0, min: 10, max: -10}]}}\n", "body.servos.joints[0]: min and max"},
		{"body: {servos: {joints: [{name: pan, channel: 0, min: -10, max: 10, max_speed: 1e9}]}}\n", "body.servos.joints[0].max_speed"},
		{"body: {servos: {joints: [{name: pan, channel: 0, min: -10, max: 10}, {name: tilt, channel: 0, min: -1, max: 1}]}}\n", "body.servos.joints[1].channel"},
		{"body: {servos: {joints: []}}\n", "body.servos.joints"},
		{"body:\n  servos: {joints: [{name: pan, channel: 0, min: -60, max: 60}], poses: {wave: [{elbow: 20}]}}\n", "body.servos.poses.wave[0].elbow"},
		{"body:\n  servos: {joints: [{name: pan, channel: 0, min: -60, max: 60}], poses: {wave: [{pan: 20, hold: 1h}]}}\n", "body.servos.poses.wave[0].hold"},
		{"body: {face: {width: 64, height: 48}}\n", "body.face"},
		{"body: {strip: {kind: neopixel, count: 8}}\n", "body.strip.kind"},
		{"body: {strip: {kind: apa102, count: 100000}}\n", "body.strip.count"},
		{"body: {laser: {}}\n", "laser"},
	} {
		c, typed, err := robot.Parse(strings.NewReader(base + tt.yaml))
		if all := config.Merge(typed, c.Validate(), checkBody(c)); err == nil && len(all) > 0 {
			err = all
		}
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%q: want an error with %q, got %v", tt.yaml, tt.field, err)
		}
	}
}
