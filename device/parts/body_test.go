package parts

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/i2cbus/i2cfake"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

const bodyBase = "version: 1\ndevice: {id: dev1}\nmqtt: {broker: \"tcp://127.0.0.1:1883\"}\nroom: {name: lab, members: [k]}\ncompanion: {id: k, name: K, language: en}\n"

func bodyConfig(t *testing.T, yaml string) *robot.Config {
	t.Helper()
	c, err := robot.Decode(strings.NewReader(bodyBase + yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// What a body needs on the robot is named at --check-config there: a bus
// or port that is not there, a program that is not.
func TestCheckBodyHere(t *testing.T) {
	c := bodyConfig(t, `body:
  servos: {bus: /dev/i2c-97, joints: [{name: tilt, channel: 1, min: -20, max: 20}]}
  face: {bus: /dev/i2c-98}
  strip: {kind: apa102, port: /dev/spidev9.9, count: 4}
  actions:
    - {name: nod, description: Nod., driver: servo}
    - {name: wave, description: Wave., driver: command, command: [no-such-program-xyz]}
`)
	got := strings.Join(CheckBody(c, Here), "\n")
	for _, want := range []string{"body.servos.bus: /dev/i2c-97 is not there", "dtparam=i2c_arm=on", "body.face.bus: /dev/i2c-98",
		"body.strip.port: /dev/spidev9.9", "dtparam=spi=on", `body.actions[1].command[0]: "no-such-program-xyz" is not there`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if out := CheckBody(c, Anywhere); len(out) != 0 {
		t.Errorf("checked this machine for another: %v", out)
	}
}

// A part that is not there costs its actions, not the robot: the body
// builds, and each action answers with what is missing. A program that
// hangs or prints garbage is an error result, not a stuck part.
func TestBodyWithMissingPartsAndBadPrograms(t *testing.T) {
	c := bodyConfig(t, `body:
  servos: {bus: no-such-bus-xyz, joints: [{name: tilt, channel: 1, min: -20, max: 20}]}
  actions:
    - {name: nod, description: Nod., driver: servo}
    - {name: hang, description: Hang., driver: command, command: [sleep, "60"], timeout: 200ms}
    - {name: garbage, description: Garbage., driver: command, command: [sh, -c, "printf '\\000\\377\\376'"]}
    - {name: echo, description: Echo., driver: command, command: [cat], schema: {type: object, properties: {n: {type: integer}}}}
`)
	b, err := BuildBody(c, Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	cases := []struct{ name, args, want string }{
		{"nod", `{}`, `the servo head (body.servos, no-such-bus-xyz at 0x40) is unavailable`},
		{"hang", `{}`, "did not finish within 200ms"},
		{"garbage", `{}`, "garbage"},
		{"echo", `{"n":"x"}`, "/n"},
	}
	for _, tc := range cases {
		_, err := b.Do(ctx, protocol.ActionRequest{Name: tc.name, Args: json.RawMessage(tc.args)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	res, err := b.Do(ctx, protocol.ActionRequest{Name: "echo", Args: json.RawMessage(`{"n":7}`)})
	if err != nil || res.Detail != `{"n":7}` || !res.Done {
		t.Fatalf("echo: %+v, %v", res, err)
	}
}

// The head and the face on a bus: a joint action is held to its limits,
// a pose plays, the face shows what it is asked.
func TestBodyOnAFakeBus(t *testing.T) {
	bus := i2cfake.New("parts-test-i2c", 0x40, 0x3c)
	if err := bus.Register(); err != nil {
		t.Fatal(err)
	}
	defer bus.Unregister()
	c := bodyConfig(t, `body:
  servos: {bus: parts-test-i2c, tick: 1ms, joints: [{name: pan, channel: 0, min: -30, max: 30, max_speed: 2000}]}
  face: {bus: parts-test-i2c}
  actions:
    - {name: look, description: Look., driver: servo, joint: pan}
    - {name: shake, description: Shake., driver: servo}
    - {name: show, description: Show., driver: face}
`)
	b, err := BuildBody(c, Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	res, err := b.Do(ctx, protocol.ActionRequest{Name: "look", Args: json.RawMessage(`{"angle":1e300}`)})
	if err != nil || res.Detail != "pan at 30°" {
		t.Fatalf("look far left: %+v, %v", res, err)
	}
	if res, err = b.Do(ctx, protocol.ActionRequest{Name: "shake"}); err != nil || res.Detail != "shake" {
		t.Fatalf("shake: %+v, %v", res, err)
	}
	if res, err = b.Do(ctx, protocol.ActionRequest{Name: "show", Args: json.RawMessage(`{"emotion":"surprised"}`)}); err != nil || res.Detail != "surprised" {
		t.Fatalf("show: %+v, %v", res, err)
	}
	if _, err = b.Do(ctx, protocol.ActionRequest{Name: "show", Args: json.RawMessage(`{"emotion":"smug"}`)}); err == nil || !strings.Contains(err.Error(), "/emotion") {
		t.Fatalf("show smug: %v", err)
	}
}
