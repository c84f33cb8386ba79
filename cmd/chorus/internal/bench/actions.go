package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/localroom"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/drivers/i2cbus/i2cfake"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// ActionsResult is what the actions benchmark measured.
type ActionsResult struct {
	// Per turn: the grant (as a watcher on the broker saw it) → the words'
	// first audio at the device, → the first servo write of the nod that
	// goes with them, and the first audio → that write.
	GrantToAudio, GrantToServo, AudioToServo []time.Duration
	// Per query: an action (the face shows an emotion: drawn and written
	// over I²C) asked by a companion → its result; and, alternating with
	// it, the bare query path (a speak.start that finds nothing held).
	RoundTrip, Baseline []time.Duration
}

// benchI2C is the fake I²C bus the benchmark's robot moves on.
const benchI2C = "chorus-bench-i2c"

const actionsRobot = `version: 1
device: {id: bot}
room: {name: act, members: [bot], floor: true, vote_timeout: 2s, pause: 10ms}
mqtt: {broker: "tcp://127.0.0.1:1"}
companion: {id: bot, name: Bot, sample_lines: ["Yes, I am here with you."], language: en}
brain: {provider: rule, delay: 0s, closing_after: 100000}
drivers:
  audio: {kind: null, paced: true}
  tts: {kind: tone}
body:
  servos: {bus: ` + benchI2C + `, tick: 20ms, joints: [{name: tilt, channel: 1, min: -30, max: 30, max_speed: 300}]}
  face: {bus: ` + benchI2C + `}
  actions:
    - {name: nod, description: Nod your head to say yes., driver: servo}
    - {name: show, description: Show a feeling on your face., driver: face}
http: {listen: "off"}
`

// tiltWrite is the PCA9685 register of the tilt joint's channel (1).
const tiltWrite = 0x06 + 4*1

// Actions runs one robot on the embedded broker whose body is a servo
// head and a face on a fake I²C bus (i2cfake: the real drivers, the real
// register writes, no hardware). The rule brain nods when spoken to: a
// user speaks to it turns times, and each time the grant, the first audio
// and the nod's first servo write are timed. Then a companion asks the
// face to show an emotion queries times, alternating with the bare query
// path.
func Actions(ctx context.Context, turns, queries int) (ActionsResult, error) {
	var res ActionsResult
	bus := i2cfake.New(benchI2C, 0x40, 0x3c)
	if err := bus.Register(); err != nil {
		return res, err
	}
	defer bus.Unregister()
	cfg, err := robot.Decode(strings.NewReader(actionsRobot))
	if err != nil {
		return res, err
	}
	r, err := localroom.Start(ctx, []*robot.Config{cfg}, localroom.Options{Quiet: true})
	if err != nil {
		return res, err
	}
	defer r.Close()
	obs, ob, err := r.Dial(ctx, "user") // the person who speaks to the robot, and watches
	if err != nil {
		return res, err
	}
	defer ob.Close()
	var mu sync.Mutex
	grants := map[string]time.Time{}
	ended := make(chan protocol.Speaking, 16)
	if err := obs.OnGrant(ctx, func(g protocol.TurnGrant) {
		mu.Lock()
		if _, ok := grants[g.MessageID]; !ok {
			grants[g.MessageID] = time.Now()
		}
		mu.Unlock()
	}); err != nil {
		return res, err
	}
	if err := obs.OnSpeaking(ctx, func(e room.SpeakingEvent) {
		if e.ID == "bot" && !e.Cleared && !e.Speaking.Speaking {
			ended <- e.Speaking
		}
	}); err != nil {
		return res, err
	}
	if err := waitAll(ctx, 500*time.Millisecond, r); err != nil {
		return res, err
	}
	for range turns {
		before := len(bus.Writes())
		m := protocol.NewMessage(protocol.NewID(), "user", []string{"bot"}, "Bot, are you there?", "")
		if err := obs.SendMessage(ctx, m); err != nil {
			return res, err
		}
		var end protocol.Speaking
		select {
		case end = <-ended:
		case <-time.After(15 * time.Second):
			return res, errors.New("actions: the robot did not speak within 15 s")
		case err := <-r.Err():
			return res, err
		}
		mu.Lock()
		granted, ok := grants[m.Params.ID]
		mu.Unlock()
		var servo time.Time
		for _, w := range bus.Writes()[before:] {
			if w.Addr == 0x40 && len(w.Data) == 5 && w.Data[0] == tiltWrite {
				servo = w.At
				break
			}
		}
		if !ok || servo.IsZero() || end.StartedAt.IsZero() {
			return res, fmt.Errorf("actions: a turn without its grant (%v), its nod (%v) or its audio (%v)", ok, !servo.IsZero(), !end.StartedAt.IsZero())
		}
		res.GrantToAudio = append(res.GrantToAudio, end.StartedAt.Sub(granted))
		res.GrantToServo = append(res.GrantToServo, servo.Sub(granted))
		res.AudioToServo = append(res.AudioToServo, servo.Sub(end.StartedAt))
		time.Sleep(300 * time.Millisecond) // the nod ends; the next turn starts from rest
	}

	_, asker, err := r.Dial(ctx, "bot") // a device's results are for the room's members
	if err != nil {
		return res, err
	}
	defer asker.Close()
	qc := query.NewClient(asker, topic.New(""), "bot", query.ClientOptions{Timeout: 5 * time.Second})
	defer qc.Close()
	emotions := []string{"happy", "sad"}
	for i := range queries {
		start := time.Now()
		got, err := query.Call(ctx, qc, "bot", query.Action, protocol.ActionRequest{Name: "show", Args: json.RawMessage(`{"emotion":"` + emotions[i%2] + `"}`)}, 5*time.Second)
		if err != nil {
			return res, fmt.Errorf("actions: show: %w", err)
		}
		if !got.Done {
			return res, fmt.Errorf("actions: show not done: %+v", got)
		}
		res.RoundTrip = append(res.RoundTrip, time.Since(start))
		start = time.Now()
		if _, err := query.Call(ctx, qc, "bot", query.SpeakStart, protocol.SpeakStart{Hold: "nothing-held"}, 5*time.Second); err != nil {
			return res, fmt.Errorf("actions: speak.start: %w", err)
		}
		res.Baseline = append(res.Baseline, time.Since(start))
	}
	return res, nil
}
