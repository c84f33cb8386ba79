// Package homeassistant makes a robot a Home Assistant device (docs/protocol.md,
// "Home Assistant"): it publishes one retained device-discovery message
// under Home Assistant's discovery prefix — the robot's state, whether it
// speaks, what it and the room last said, its mute and microphone
// switches, a "say" box, the conversation buttons and its actions — again
// whenever Home Assistant says online, keeps the entities' states
// (retained) under the room's prefix, and takes Home Assistant's commands.
//
// Availability is the robot's presence and Last Will: Home Assistant reads
// the retained presence topic, so a robot killed with -9 shows
// unavailable. Commands come only from the configured Home Assistant
// identity: the broker's ACL refuses anyone else's publish, and each
// payload carries "from", checked here too, strictly decoded and bounded;
// a wrong one is counted (chorus_bad_input_total{source="ha_command"}) and
// logged once a minute.
package homeassistant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// States of the robot, in the words Home Assistant's voice satellites use.
const (
	StateIdle      = "idle"
	StateListening = "listening"
	StateThinking  = "thinking"
	StateSpeaking  = "speaking"
	StateMuted     = "muted"
)

// Entities (the last segment of their state and command topics).
const (
	EntityState       = "state"
	EntitySpeaking    = "speaking"
	EntityUtterance   = "utterance"
	EntityRoomMessage = "room_message"
	EntityMute        = "mute"
	EntityMic         = "mic"
	EntitySay         = "say"
	EntityStart       = "start"
	EntityEnd         = "end"
	EntityTurn        = "turn"
	EntityForget      = "forget_memory"
	actionPrefix      = "action_"
)

// MaxState is the longest state Home Assistant keeps (255 characters).
const MaxState = 255

// MaxCommand bounds a command's payload.
const MaxCommand = 2048

// Robot is one robot as a Home Assistant device.
type Robot struct {
	Bus    bus.Bus // the robot's own connection (its identity publishes)
	Scheme topic.Scheme
	// Discovery is Home Assistant's prefix, User its identity, Node the
	// robot's node id.
	Discovery, User, Node string
	Identity              string // the robot's (companion's) identity
	Name, Model, Version  string
	Room                  string // the room's name
	Opener                string // what "start conversation" says
	// Presence is the topic of the robot's retained presence: its
	// availability.
	Presence string

	Hears   bool                 // a microphone switch
	Floor   bool                 // the room's floor runs here: end conversation and the turn sensor
	Actions []protocol.ActionDef // those without required arguments become buttons

	// What the commands do; each must not block for long (they run on
	// the robot's own goroutine, never on the bus's).
	SetMuted func(bool)
	SetMic   func(bool)
	Say      func(ctx context.Context, m protocol.Message) error // send m into the room
	End      func()
	Act      func(ctx context.Context, name string) error
	// Forget erases everything the companion remembers (a "Forget
	// everything" button; nil: no memory, no button).
	Forget func(ctx context.Context) (int, error)

	Log     *slog.Logger
	Metrics *metrics.Metrics

	out      *bus.Outbox
	acting   sync.WaitGroup // actions pressed, still running
	commands chan command   // switches and buttons
	says     chan command   // the say box, apart: a flood of words never crowds out a mute
	mu       sync.Mutex
	states   map[string]string // the latest of each entity, published again with the discovery
	gone     map[string]string // components of the discovery before this start that this one lacks: their platforms
	recent   map[string]time.Time
}

type command struct {
	entity  string
	payload []byte
}

// SayPattern is the "Say" box's pattern: Home Assistant refuses in its
// own form what the robot would refuse (issue 27) — blank text and
// control characters — instead of sending it to be dropped. Python's re
// (Home Assistant's) reads it as Go's regexp does.
const SayPattern = `^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$`

// Origin is what Home Assistant is told published the discovery.
const Origin = "chorus"

// uid is an entity's unique id: stable across restarts (node and entity,
// apart by a character neither may hold).
func (r *Robot) uid(entity string) string { return "chorus:" + r.Node + ":" + entity }

// DiscoveryPayload builds the device discovery payload.
func (r *Robot) DiscoveryPayload() ([]byte, error) {
	state := func(e string) string { return r.Scheme.HAState(r.Identity, e) }
	cmd := func(e string) string { return r.Scheme.HACommand(r.Identity, e) }
	from := func(extra string) string { return `{"from":` + quote(r.User) + `,` + extra + `}` }
	cmps := map[string]map[string]any{
		EntityState: {"p": "sensor", "name": "State", "unique_id": r.uid(EntityState), "state_topic": state(EntityState),
			"device_class": "enum", "options": []string{StateIdle, StateListening, StateThinking, StateSpeaking, StateMuted}, "icon": "mdi:robot"},
		EntitySpeaking: {"p": "binary_sensor", "name": "Speaking", "unique_id": r.uid(EntitySpeaking), "state_topic": state(EntitySpeaking),
			"payload_on": "ON", "payload_off": "OFF", "device_class": "sound"},
		EntityUtterance: {"p": "sensor", "name": "Last utterance", "unique_id": r.uid(EntityUtterance), "state_topic": state(EntityUtterance), "icon": "mdi:comment-text"},
		EntityRoomMessage: {"p": "sensor", "name": "Room's last message", "unique_id": r.uid(EntityRoomMessage), "state_topic": state(EntityRoomMessage),
			"icon": "mdi:forum"},
		EntityMute: {"p": "switch", "name": "Mute", "unique_id": r.uid(EntityMute), "state_topic": state(EntityMute), "command_topic": cmd(EntityMute),
			"payload_on": from(`"set":"ON"`), "payload_off": from(`"set":"OFF"`), "state_on": "ON", "state_off": "OFF", "icon": "mdi:volume-off"},
		EntitySay: {"p": "text", "name": "Say", "unique_id": r.uid(EntitySay), "command_topic": cmd(EntitySay), "max": MaxState, "min": 1,
			"pattern":          SayPattern,
			"command_template": `{"from":` + quote(r.User) + `,"text":{{ value | to_json }}}`, "icon": "mdi:message-text"},
		EntityStart: {"p": "button", "name": "Start conversation", "unique_id": r.uid(EntityStart), "command_topic": cmd(EntityStart),
			"payload_press": from(`"press":true`), "icon": "mdi:chat-processing"},
	}
	if r.Hears {
		cmps[EntityMic] = map[string]any{"p": "switch", "name": "Microphone", "unique_id": r.uid(EntityMic), "state_topic": state(EntityMic),
			"command_topic": cmd(EntityMic), "payload_on": from(`"set":"ON"`), "payload_off": from(`"set":"OFF"`), "state_on": "ON", "state_off": "OFF",
			"icon": "mdi:microphone"}
	}
	if r.Floor {
		cmps[EntityEnd] = map[string]any{"p": "button", "name": "End conversation", "unique_id": r.uid(EntityEnd), "command_topic": cmd(EntityEnd),
			"payload_press": from(`"press":true`), "icon": "mdi:chat-remove"}
		cmps[EntityTurn] = map[string]any{"p": "sensor", "name": "Room's turn", "unique_id": r.uid(EntityTurn), "state_topic": state(EntityTurn),
			"icon": "mdi:account-voice"}
	}
	if r.Forget != nil {
		cmps[EntityForget] = map[string]any{"p": "button", "name": "Forget everything", "unique_id": r.uid(EntityForget), "command_topic": cmd(EntityForget),
			"payload_press": from(`"press":true`), "icon": "mdi:delete-forever"}
	}
	for _, a := range ButtonActions(r.Actions) {
		e := actionPrefix + a.Name
		cmps[e] = map[string]any{"p": "button", "name": a.Description, "unique_id": r.uid(e), "command_topic": cmd(e),
			"payload_press": from(`"press":true`), "icon": "mdi:gesture-tap-button"}
	}
	for id, p := range r.gone { // taken away since the last start
		if _, ok := cmps[id]; !ok {
			cmps[id] = map[string]any{"p": p}
		}
	}
	payload := map[string]any{
		"dev": map[string]any{"ids": []string{"chorus_" + r.Node}, "name": r.Name, "mf": "Chorus", "mdl": r.Model, "sw": r.Version},
		"o":   map[string]any{"name": Origin, "sw": r.Version, "url": "https://github.com/chorus-robotics/chorus"},
		"availability": []map[string]any{{"topic": r.Presence,
			"value_template": "{{ 'online' if value_json.online else 'offline' }}"}},
		"qos":  1,
		"cmps": cmps,
	}
	return json.Marshal(payload)
}

// previous reads the discovery this robot left retained before (at most a
// second) and returns its components that this one no longer has, with
// their platforms: Home Assistant removes a component only when it comes
// as {"p": platform} alone; and their state topics of this robot's, whose
// retained states are cleared (issue 27: they stayed on the broker).
func (r *Robot) previous(ctx context.Context) (map[string]string, []string) {
	got := make(chan []byte, 1)
	var once sync.Once
	err := r.Bus.Subscribe(ctx, r.Scheme.HADiscovery(r.Node), func(_ string, b []byte) {
		once.Do(func() { got <- bytes.Clone(b) })
	})
	if err != nil {
		r.log().Warn("homeassistant: the discovery left before is not readable; removed entities may stay in Home Assistant", "err", err)
		return nil, nil
	}
	var raw []byte
	select {
	case raw = <-got:
	case <-time.After(time.Second): // none retained
	case <-ctx.Done():
	}
	var old struct {
		Cmps map[string]map[string]any `json:"cmps"`
	}
	if len(raw) == 0 || len(raw) > 1<<20 || json.Unmarshal(raw, &old) != nil {
		return nil, nil
	}
	now, err := r.DiscoveryPayload()
	if err != nil {
		return nil, nil
	}
	var cur struct {
		Cmps map[string]json.RawMessage `json:"cmps"`
	}
	json.Unmarshal(now, &cur)
	gone := map[string]string{}
	var stale []string
	for id, c := range old.Cmps {
		p, _ := c["p"].(string)
		if _, ok := cur.Cmps[id]; !ok && p != "" && len(gone) < 64 {
			if len(c) > 1 { // len 1: removed already
				gone[id] = p
			}
			// Only this robot's own entity topic, whatever the old payload
			// named: the ACL lets it clear nothing else.
			if t, _ := c["state_topic"].(string); t == r.Scheme.HAState(r.Identity, id) {
				stale = append(stale, t)
			}
		}
	}
	sort.Strings(stale)
	return gone, stale
}

// ButtonActions are the actions a button can do: those whose arguments
// are all optional.
func ButtonActions(defs []protocol.ActionDef) []protocol.ActionDef {
	var out []protocol.ActionDef
	for _, d := range defs {
		var s struct {
			Required []string `json:"required"`
		}
		if json.Unmarshal(d.Schema, &s) == nil && len(s.Required) == 0 {
			out = append(out, d)
		}
	}
	return out
}

// entityCount is how many components a discovery payload names.
func (r *Robot) entityCount(payload []byte) int {
	var d struct {
		Cmps map[string]json.RawMessage `json:"cmps"`
	}
	json.Unmarshal(payload, &d)
	return len(d.Cmps)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (r *Robot) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Run publishes the discovery, subscribes to Home Assistant's status and
// to the robot's commands, and handles them until ctx ends.
func (r *Robot) Run(ctx context.Context) error {
	r.Metrics = metrics.OrNew(r.Metrics)
	r.init()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer r.acting.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); r.out.Run(ctx) }()
	online := make(chan struct{}, 1)
	if rc, ok := r.Bus.(interface{ OnReconnect(func()) }); ok {
		// Back on a broker that lost its retained messages (restarted, or
		// another node of the list): the discovery and states again. Told
		// before the first announce, so that no reconnect is missed.
		rc.OnReconnect(func() {
			select {
			case online <- struct{}{}:
			default:
			}
		})
	}
	var stale []string
	r.gone, stale = r.previous(ctx)
	if err := r.announce(); err != nil {
		return err
	}
	for _, t := range stale { // a component taken away leaves no state behind
		r.out.Send(t, nil, true)
	}
	err := r.Bus.Subscribe(ctx, r.Scheme.HAStatus(), func(_ string, b []byte) {
		if string(bytes.TrimSpace(b)) == "online" {
			select {
			case online <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return fmt.Errorf("homeassistant: %w", err)
	}
	err = r.Bus.Subscribe(ctx, r.Scheme.HACommands(r.Identity), func(t string, b []byte) {
		route, ok := r.Scheme.Parse(t)
		if !ok || route.Kind != topic.KindHACommand {
			return
		}
		q, kind := r.commands, "command"
		if route.Entity == EntitySay {
			q, kind = r.says, "say"
		}
		select {
		case q <- command{entity: route.Entity, payload: b}:
		default:
			r.Metrics.QueueDrops.WithLabelValues("homeassistant", kind).Inc()
		}
	})
	if err != nil {
		return fmt.Errorf("homeassistant: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-online:
			r.log().Info("Home Assistant is online, or the robot is back on the broker: the discovery is published again")
			r.announce()
		case c := <-r.commands:
			r.handle(ctx, c)
		case c := <-r.says:
			r.handle(ctx, c)
		}
	}
}

func (r *Robot) init() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil {
		r.out = &bus.Outbox{Bus: r.Bus, Size: 64, Log: r.Log, OnDrop: func(string, error) {
			metrics.OrNew(r.Metrics).PublishDropped.WithLabelValues("homeassistant").Inc()
		}}
		r.commands = make(chan command, 16)
		r.says = make(chan command, 8)
		r.states = map[string]string{}
		r.recent = map[string]time.Time{}
	}
}

// announce publishes the discovery (retained) and the states known.
func (r *Robot) announce() error {
	b, err := r.DiscoveryPayload()
	if err != nil {
		return fmt.Errorf("homeassistant: discovery: %w", err)
	}
	if r.out.Send(r.Scheme.HADiscovery(r.Node), b, true) {
		r.log().Info("homeassistant: discovery published", "topic", r.Scheme.HADiscovery(r.Node), "entities", r.entityCount(b))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for e, v := range r.states {
		r.out.Send(r.Scheme.HAState(r.Identity, e), []byte(v), true)
	}
	return nil
}

// Set publishes an entity's state (retained), cut to MaxState
// characters; it never blocks.
func (r *Robot) Set(entity, value string) {
	r.init()
	value = clip(value)
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.states[entity]; ok && old == value {
		return
	}
	// Recorded only once queued: a state a full queue dropped is sent
	// again with the next change, even to the same value.
	if r.out.Send(r.Scheme.HAState(r.Identity, entity), []byte(value), true) {
		r.states[entity] = value
	} else {
		delete(r.states, entity)
	}
}

func clip(s string) string {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	if utf8.RuneCountInString(s) <= MaxState {
		return s
	}
	return string([]rune(s)[:MaxState-1]) + "…"
}

// OnOff is a switch's or binary sensor's state.
func OnOff(on bool) string {
	if on {
		return "ON"
	}
	return "OFF"
}

// commandPayload is what Home Assistant sends (the discovery's payloads
// and templates): who, and one of set, text, press.
type commandPayload struct {
	From  string  `json:"from"`
	Set   *string `json:"set,omitempty"`
	Text  *string `json:"text,omitempty"`
	Press *bool   `json:"press,omitempty"`
}

// errCommand is a command refused.
type errCommand struct{ kind, msg string }

func (e *errCommand) Error() string { return e.msg }

// decode reads a command strictly: its sender, and the one field its
// entity takes.
func (r *Robot) decode(c command) (commandPayload, error) {
	var p commandPayload
	if len(c.payload) > MaxCommand {
		return p, &errCommand{"oversize", fmt.Sprintf("a command of %d bytes (at most %d)", len(c.payload), MaxCommand)}
	}
	rest, err := segjson.Parse(c.payload, &p, segjson.DisallowUnknownFields|segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil || len(bytes.TrimSpace(rest)) > 0 {
		return p, &errCommand{"syntax", fmt.Sprintf("command to %.64s is not the JSON Home Assistant is configured to send: %.80q", c.entity, c.payload)}
	}
	if p.From != r.User {
		return p, &errCommand{"spoofed", fmt.Sprintf("command to %s from %q: only %s commands this robot", c.entity, p.From, r.User)}
	}
	return p, nil
}

// handle does one command.
func (r *Robot) handle(ctx context.Context, c command) {
	p, err := r.decode(c)
	if err == nil {
		err = r.do(ctx, c.entity, p)
	}
	var ec *errCommand
	switch {
	case errors.As(err, &ec):
		r.Metrics.Reject(r.Log, "ha_command", r.User, ec.kind, err)
	case err != nil:
		r.log().Warn("homeassistant: a command failed", "entity", c.entity, "err", err)
	}
}

func (r *Robot) do(ctx context.Context, entity string, p commandPayload) error {
	onOff := func() (bool, error) {
		if p.Set == nil || (*p.Set != "ON" && *p.Set != "OFF") || p.Text != nil || p.Press != nil {
			return false, &errCommand{"invalid", fmt.Sprintf("command to %s: want set ON or OFF", entity)}
		}
		return *p.Set == "ON", nil
	}
	press := func() error {
		if p.Press == nil || !*p.Press || p.Set != nil || p.Text != nil {
			return &errCommand{"invalid", fmt.Sprintf("command to %s: want press true", entity)}
		}
		// A press seen twice within a second (a copy, at least once) acts once.
		r.mu.Lock()
		defer r.mu.Unlock()
		r.pruneLocked()
		if t, ok := r.recent[entity]; ok && time.Since(t) < time.Second {
			return errDuplicate
		}
		r.recent[entity] = time.Now()
		return nil
	}
	switch {
	case entity == EntityMute && r.SetMuted != nil:
		on, err := onOff()
		if err != nil {
			return err
		}
		r.SetMuted(on)
		r.Set(EntityMute, OnOff(on))
	case entity == EntityMic && r.Hears && r.SetMic != nil:
		on, err := onOff()
		if err != nil {
			return err
		}
		r.SetMic(on)
		r.Set(EntityMic, OnOff(on))
	case entity == EntitySay:
		if p.Text == nil || p.Set != nil || p.Press != nil {
			return &errCommand{"invalid", "command to say: want text"}
		}
		text := *p.Text
		if n := utf8.RuneCountInString(text); n == 0 || n > MaxState || !utf8.ValidString(text) || strings.TrimSpace(text) == "" ||
			strings.ContainsFunc(text, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) {
			return &errCommand{"invalid", fmt.Sprintf("command to say: the text must be 1 to %d characters of UTF-8 words, no control characters", MaxState)}
		}
		r.mu.Lock()
		r.pruneLocked()
		key := "say:" + text
		t, dup := r.recent[key]
		if !dup || time.Since(t) >= time.Second {
			r.recent[key] = time.Now()
		}
		r.mu.Unlock()
		if dup && time.Since(t) < time.Second {
			return nil // a copy of the same words: one Message
		}
		return r.say(ctx, text, []string{r.Identity})
	case entity == EntityStart:
		if err := press(); err != nil {
			return ignoreDuplicate(err)
		}
		return r.say(ctx, r.Opener, nil)
	case entity == EntityEnd && r.Floor && r.End != nil:
		if err := press(); err != nil {
			return ignoreDuplicate(err)
		}
		r.End()
		r.log().Info("homeassistant: the conversation was ended")
	case entity == EntityForget && r.Forget != nil:
		if err := press(); err != nil {
			return ignoreDuplicate(err)
		}
		n, err := r.Forget(ctx)
		if err != nil {
			return fmt.Errorf("homeassistant: forget everything: %w", err)
		}
		r.log().Info("homeassistant: the memory was wiped", "facts", n)
	case len(entity) > len(actionPrefix) && entity[:len(actionPrefix)] == actionPrefix && r.Act != nil:
		name := entity[len(actionPrefix):]
		known := false
		for _, a := range ButtonActions(r.Actions) {
			known = known || a.Name == name
		}
		if !known {
			return &errCommand{"unknown", fmt.Sprintf("command to %.64q: no such button", entity)}
		}
		if err := press(); err != nil {
			return ignoreDuplicate(err)
		}
		r.acting.Add(1)
		go func() { // an action runs beside everything; its result is the body's
			defer r.acting.Done()
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := r.Act(actx, name); err != nil {
				r.log().Warn("homeassistant: an action failed", "action", name, "err", err)
			}
		}()
	default:
		return &errCommand{"unknown", fmt.Sprintf("command to %.64q: no such entity", entity)}
	}
	return nil
}

var errDuplicate = errors.New("a copy of a press")

// maxRecent bounds the commands remembered for their copies.
const maxRecent = 64

// pruneLocked forgets the commands older than their copies' second, and
// the oldest beyond maxRecent; r.mu is held.
func (r *Robot) pruneLocked() {
	for k, t := range r.recent {
		if time.Since(t) >= time.Second {
			delete(r.recent, k)
		}
	}
	for len(r.recent) >= maxRecent {
		var oldest string
		var at time.Time
		for k, t := range r.recent {
			if oldest == "" || t.Before(at) {
				oldest, at = k, t
			}
		}
		delete(r.recent, oldest)
	}
}

func ignoreDuplicate(err error) error {
	if errors.Is(err, errDuplicate) {
		return nil
	}
	return err
}

// say sends text into the room as Home Assistant's user.
func (r *Robot) say(ctx context.Context, text string, to []string) error {
	m := protocol.NewMessage(protocol.NewID(), r.User, to, text, "")
	m.Params.Metadata[protocol.MetaSource] = "homeassistant"
	if r.Say == nil {
		return errors.New("homeassistant: no way to speak to the room")
	}
	return r.Say(ctx, m)
}

// StateEntities are the entities whose states the robot keeps retained.
var StateEntities = []string{EntityState, EntitySpeaking, EntityUtterance, EntityRoomMessage, EntityMute, EntityMic, EntityTurn}

// Remove takes the robot out of Home Assistant (when it is uninstalled,
// or the feature turned off): the empty retained discovery, and its
// retained states cleared (they hold what was said in the room).
func Remove(ctx context.Context, b bus.Bus, s topic.Scheme, node, identity string) error {
	if err := b.Publish(ctx, s.HADiscovery(node), nil, true); err != nil {
		return err
	}
	for _, e := range StateEntities {
		if err := b.Publish(ctx, s.HAState(identity, e), nil, true); err != nil {
			return err
		}
	}
	return nil
}
