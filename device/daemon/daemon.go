// Package daemon wires one robot from its config: what chorusd runs under
// systemd. The embedded broker (if this device hosts it), the bus
// connections, the body (speak and vision queries over the drivers the
// config names), the floor (if this device runs it), the panel (status LED,
// button) and the companion, with /healthz and /metrics over HTTP.
//
// # Usage
//
//	if err := daemon.Check(cfg); err != nil { ... } // every problem a start would hit
//	d, err := daemon.New(cfg, daemon.Options{Log: log})
//	err = d.Run(ctx, func() { /* ready: tell systemd */ })
//
// New checks the config as Check does and touches no hardware. Run builds
// each part in turn (broker, connections, body, floor, panel, companion,
// HTTP), runs their loops in one errgroup, calls ready once all are up, and
// stops everything when ctx ends or any part fails.
package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chorus-robotics/chorus/device/bridge"
	"github.com/chorus-robotics/chorus/device/button"
	"github.com/chorus-robotics/chorus/device/console"
	"github.com/chorus-robotics/chorus/device/ear"
	"github.com/chorus-robotics/chorus/device/homeassistant"
	"github.com/chorus-robotics/chorus/device/led"
	"github.com/chorus-robotics/chorus/device/mcpserve"
	"github.com/chorus-robotics/chorus/device/panel"
	"github.com/chorus-robotics/chorus/device/parts"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/device/speak"
	"github.com/chorus-robotics/chorus/device/vision"
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/gpio"
	"github.com/chorus-robotics/chorus/drivers/mcp"
	"github.com/chorus-robotics/chorus/drivers/mic"
	"github.com/chorus-robotics/chorus/drivers/voiceid"
	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/election"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/hearing"
	"github.com/chorus-robotics/chorus/runtime/memory"
	"github.com/chorus-robotics/chorus/runtime/memory/control"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
	"github.com/chorus-robotics/chorus/runtime/repetition"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/schema"
	"github.com/chorus-robotics/chorus/runtime/tool"
	"github.com/chorus-robotics/chorus/runtime/topic"
	"github.com/chorus-robotics/chorus/runtime/version"
)

// Options adjust a Daemon beyond its config.
type Options struct {
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Version is the build's stamped version ("" or "dev" when it was
	// not stamped: version.Of tells it then), in the ready line, the
	// chorus_build_info metric and Home Assistant's device.
	Version string
}

// Daemon is one running device.
type Daemon struct {
	cfg *robot.Config
	log *slog.Logger
	m   *metrics.Metrics

	ready   atomic.Bool
	br      *bridge.Bridge                // the WebSocket bridge, when enabled
	asks    atomic.Pointer[query.Client]  // the companion's queries, told when a bridge body goes
	tools   atomic.Pointer[tool.Registry] // the robot's tools, for agents (http.mcp)
	acts    *parts.Body                   // the body's actions and the parts they move
	fl      *floor.Floor                  // the room's turn-mode floor, when it runs here
	ha      *homeassistant.Robot          // the robot as a Home Assistant device, when enabled
	mem     atomic.Pointer[memory.Store]  // the companion's memory, when on
	voices  atomic.Pointer[memory.Voices] // the voiceprints, when the robot identifies voices (voiceprints)
	version string
	pan     atomic.Pointer[panel.Panel] // the front panel, for led actions on the status LED
	mu      sync.Mutex
	closers []func()
	probes  []namedProbe
}

// Check reports every problem that would stop cfg from starting here, each
// by its field: the config's own (config.Validate), the parts it names in
// this build and what they need on this machine (device/parts), and the
// files and secrets it points to.
func Check(cfg *robot.Config) error {
	if all := config.Merge(nil, cfg.Validate(), parts.Check(cfg, parts.Here), checkFiles(cfg)); len(all) > 0 {
		return all
	}
	return nil
}

// CheckFile reads the config at path and checks it as Check does, adding
// the values that could not be read: every problem at once. It is the one
// config check of every mode of chorusd (a start, --check-config,
// --doctor, --ha-remove). cfg is nil when the file cannot be read or its
// own fields are wrong; when only this machine lacks what it names (a
// part, a file, a secret) cfg is returned beside the error, for the
// doctor to go on with. An error also says the config's warnings
// (robot.Config.Warnings), each line "warning: …".
func CheckFile(path string) (*robot.Config, error) { return checkFile(path, parts.Here) }

// CheckFileOffline is CheckFile of the config's shape and values alone,
// as on a laptop before the SD card is flashed: the kinds it names
// exist in some build, but no program, device, file or secret it names
// is looked for.
func CheckFileOffline(path string) (*robot.Config, error) { return checkFile(path, parts.Anywhere) }

func checkFile(path string, m parts.Mode) (*robot.Config, error) {
	cfg, typed, err := robot.ParseFile(path)
	if err != nil {
		return nil, err
	}
	own := cfg.Validate()
	fields := config.Merge(typed, own)
	var files []string
	if m == parts.Here {
		files = checkFiles(cfg)
	}
	all := config.Merge(typed, own, parts.Check(cfg, m), files) // every problem at once
	if len(all) > 0 {
		for _, w := range cfg.Warnings() { // said beside the problems (without them, the caller says them)
			all = append(all, "warning: "+w)
		}
	}
	switch {
	case len(fields) > 0:
		return nil, fmt.Errorf("config %s: %w", path, all)
	case len(all) > 0:
		return cfg, fmt.Errorf("config %s: %w", path, all)
	}
	return cfg, nil
}

// checkFiles opens what the config names outside itself: the broker's
// users file and TLS files, the secrets in the environment.
func checkFiles(cfg *robot.Config) []string {
	var out []string
	m := cfg.MQTT
	if m.Embedded.Enabled {
		if _, err := m.Embedded.Users(); err != nil {
			out = append(out, err.Error())
		}
		if _, err := cfg.ServerTLS(); err != nil {
			out = append(out, err.Error())
		}
	}
	if _, err := cfg.ClientTLS(); err != nil {
		out = append(out, err.Error())
	}
	if _, err := m.Password(); err != nil {
		out = append(out, err.Error())
	}
	if cfg.Room.Floor {
		if _, err := m.FloorPassword(); err != nil {
			out = append(out, err.Error())
		}
	}
	if mem := cfg.Memory; mem != nil {
		if err := mem.CheckDir(); err != nil {
			out = append(out, fmt.Sprintf("memory.dir: the facts cannot be kept in %s: %v", mem.Dir, err))
		}
	}
	for i := range cfg.Tools.MCP {
		if _, err := cfg.MCPToken(i); err != nil {
			out = append(out, err.Error())
		}
	}
	if ws := cfg.HTTP.WebSocket; ws.Enabled {
		ts, err := ws.Tokens()
		if err == nil {
			err = cfg.CheckBridgeTokens(ts)
		}
		if err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// New checks the config and prepares the daemon; it touches no hardware.
func New(cfg *robot.Config, opts Options) (*Daemon, error) {
	if err := Check(cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("device", cfg.Device.ID)
	for _, w := range cfg.Warnings() {
		log.Warn("config: this does nothing here (chorusd --check-config says the same)", "problem", w)
	}
	d := &Daemon{cfg: cfg, log: log, m: metrics.OrNew(opts.Metrics), version: version.Of(opts.Version)}
	d.m.Build.WithLabelValues(d.version, runtime.Version()).Set(1)
	return d, nil
}

// Metrics is the daemon's metric set.
func (d *Daemon) Metrics() *metrics.Metrics { return d.m }

// Ready reports whether every part is up.
func (d *Daemon) Ready() bool { return d.ready.Load() }

func (d *Daemon) onClose(f func()) {
	d.mu.Lock()
	d.closers = append(d.closers, f)
	d.mu.Unlock()
}

func (d *Daemon) closeAll() {
	d.mu.Lock()
	cs := d.closers
	d.closers = nil
	d.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func (d *Daemon) probe(name string, p Prober) {
	d.mu.Lock()
	d.probes = append(d.probes, namedProbe{name, p})
	d.mu.Unlock()
}

func (d *Daemon) scheme() topic.Scheme {
	return d.cfg.Scheme()
}

// startupLimit bounds how long the parts may take to come up.
const startupLimit = 30 * time.Second

// Run builds every part, calls ready once all are up, and runs until ctx
// ends (nil) or a part fails (its error).
func (d *Daemon) Run(parent context.Context, ready func()) error {
	defer d.closeAll()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	if err := d.build(ctx, g); err != nil {
		cancel()
		g.Wait()
		return err
	}
	// Ready means every loop turns with its subscriptions in place: a
	// message sent the moment systemd hears READY is not missed.
	if err := d.pingAll(ctx, startupLimit); err != nil {
		cancel()
		if werr := g.Wait(); werr != nil {
			return werr
		}
		return fmt.Errorf("chorusd: not up within %v: %w", startupLimit, err)
	}
	d.ready.Store(true)
	d.log.Info("chorusd ready", "version", d.version, "room", d.cfg.Room.Name, "identity", d.cfg.Identity(), "floor", d.cfg.Room.Floor, "broker", d.cfg.MQTT.Broker)
	if ready != nil {
		ready()
	}
	<-ctx.Done()
	d.ready.Store(false)
	err := g.Wait()
	if parent.Err() != nil {
		return nil // stopped on purpose
	}
	return err
}

// link is the device's connections to its room.
type link struct {
	main     *bus.MQTT // under the companion's name (the device's without one)
	dev      *bus.MQTT // under the device's name, for its query results
	room     *room.Room
	presence *room.Announcement // nil without a companion
	queries  *query.Server      // the device's query server
}

func (d *Daemon) build(ctx context.Context, g *errgroup.Group) error {
	if d.cfg.MQTT.Embedded.Enabled {
		if err := d.startBroker(ctx); err != nil {
			return err
		}
	}
	l, err := d.connect(ctx)
	if err != nil {
		return err
	}
	if err := d.body(ctx, g, l); err != nil {
		return err
	}
	if d.cfg.Room.Floor {
		if err := d.floor(ctx, g, l); err != nil {
			return err
		}
	}
	p, err := d.panel(ctx, g, l)
	if err != nil {
		return err
	}
	if err := d.homeAssistant(ctx, g, l, p); err != nil {
		return err
	}
	if d.cfg.Hearing.Enabled && d.cfg.Companion != nil {
		if err := d.hear(ctx, g, l, p); err != nil {
			return err
		}
	}
	if d.cfg.HTTP.Listen != "off" && d.cfg.HTTP.WebSocket.Enabled {
		// Before the companion: a body behind the bridge is present while
		// its client is connected, and the companion asks the bridge.
		if d.br, err = d.bridge(ctx, l); err != nil {
			return err
		}
		g.Go(func() error { return d.br.Run(ctx) })
	}
	if d.cfg.Companion != nil {
		if err := d.companion(ctx, g, l, p); err != nil {
			return err
		}
	}
	if d.cfg.HTTP.Listen != "off" {
		return d.serveHTTP(ctx, g, l)
	}
	return nil
}

func (d *Daemon) startBroker(ctx context.Context) error {
	e := d.cfg.MQTT.Embedded
	users, err := e.Users()
	if err != nil {
		return err
	}
	// The broker serves every robot of the room, not only this one: the
	// other members' Home Assistant discovery at their default node ids
	// (issue 27), as `chorus acl` renders them for Mosquitto.
	bc := broker.Config{Addr: e.Listen, Users: users, AllowAnonymous: e.AllowAnonymous, Scheme: d.scheme().WithHAMembers(d.cfg.Room.Name), Logger: d.log, Metrics: d.m,
		MaxPayload: d.cfg.Room.MaxPayload, MaxResult: d.cfg.Query.MaxResult}
	if bc.TLS, err = d.cfg.ServerTLS(); err != nil {
		return err
	}
	br, err := broker.Start(ctx, bc)
	if err != nil {
		return err
	}
	d.onClose(func() { br.Close() })
	d.log.Info("embedded broker listening", "addr", br.Addr())
	return nil
}

// dial opens a connection that lives as long as the daemon.
func (d *Daemon) dial(ctx context.Context, clientID, user, password string, birth func(time.Time) *bus.Retained, will *bus.Retained) (*bus.MQTT, error) {
	b, err := d.dialOwned(ctx, clientID, user, password, birth, will)
	if err != nil {
		return nil, err
	}
	d.onClose(func() { b.Close() })
	return b, nil
}

// dialOwned opens a connection its caller closes (the bridge's, which come
// and go with its clients: the daemon must not keep them).
func (d *Daemon) dialOwned(ctx context.Context, clientID, user, password string, birth func(time.Time) *bus.Retained, will *bus.Retained) (*bus.MQTT, error) {
	tlsc, err := d.cfg.ClientTLS()
	if err != nil {
		return nil, err
	}
	return bus.Dial(ctx, bus.Options{Broker: d.cfg.MQTT.Broker, Brokers: d.cfg.MQTT.Brokers, ClientID: clientID, Username: user, Password: password, TLS: tlsc,
		QoS: bus.QoS(d.cfg.MQTT.QoSLevel()), Birth: birth, Will: will, Logger: d.log, Metrics: d.m})
}

// connect dials the room under the companion's name, announcing its
// presence, and a second time under the device's name when that differs.
func (d *Daemon) connect(ctx context.Context) (*link, error) {
	cfg := d.cfg
	password, err := cfg.MQTT.Password()
	if err != nil {
		return nil, err
	}
	l := &link{room: room.New(nil, d.scheme(), cfg.Room.Name, d.log, d.m)}
	l.room.MaxBytes = cfg.Room.MaxPayload
	l.room.SetMembers(cfg.Room.Members)
	var birth func(time.Time) *bus.Retained
	var will *bus.Retained
	if cfg.Companion != nil {
		l.presence = l.room.Announce(cfg.Identity(), cfg.Device.ID, expectedThink(cfg.Brain))
		l.presence.SetHears(cfg.Hearing.Enabled)
		l.presence.SetSees(cfg.Drivers.Camera.Kind != "none") // as body() serves vision
		birth, will = l.presence.Birth, l.presence.Will()
	}
	if l.main, err = d.dial(ctx, cfg.Identity(), cfg.MQTT.Username, password, birth, will); err != nil {
		return nil, err
	}
	l.room.Bus, l.dev = l.main, l.main
	if cfg.Device.ID != cfg.MQTT.Username {
		if l.dev, err = d.dial(ctx, cfg.Device.ID+"-device", cfg.Device.ID, password, nil, nil); err != nil {
			return nil, err
		}
	}
	// The watchdog's bus probe: through the broker and back, on a topic of
	// the device's own that nothing else subscribes to.
	d.probe("bus", busProbe{b: l.dev, topic: l.room.Scheme.Probe(cfg.Device.ID)})
	return l, nil
}

// body answers the device's queries: speak always, vision with a camera.
func (d *Daemon) body(ctx context.Context, g *errgroup.Group, l *link) error {
	cfg := d.cfg
	env := parts.Env{Log: d.log, Metrics: d.m}
	out, err := parts.Audio.Make(cfg, env)
	if err != nil {
		return err
	}
	d.onClose(func() { out.Close() })
	engine, err := parts.TTS.Make(cfg, env)
	if err != nil {
		return err
	}
	// A flood of actions never delays speech: they queue and run apart.
	srv := &query.Server{Bus: l.dev, Scheme: l.room.Scheme, Device: cfg.Device.ID, Log: d.log, Metrics: d.m,
		Lanes: map[string]int{protocol.TypeAction: 4}}
	l.queries = srv
	voice := &speak.Speaker{TTS: engine, Out: out, MaxChars: cfg.Drivers.TTS.MaxChars, Log: d.log, Metrics: d.m}
	srv.Handle(protocol.TypeSpeak, voice.Handle)
	srv.Handle(protocol.TypeSpeakStart, voice.HandleStart)
	srv.Handle(protocol.TypeSpeakStop, voice.HandleStop)
	srv.Handle(protocol.TypeSpeakMore, voice.HandleMore)
	var status parts.StatusLight
	if cfg.Drivers.GPIO.LED != "" {
		status = func(pt led.Pattern, dur time.Duration) {
			if p := d.pan.Load(); p != nil {
				p.Flash(pt, dur)
			}
		}
	}
	acts, err := parts.BuildBody(cfg, env, status)
	if err != nil {
		return err
	}
	d.acts = acts
	d.onClose(acts.Close)
	voice.OnVoice = acts.Voice
	srv.Handle(protocol.TypeAction, acts.Handle)
	src, err := parts.Cameras.Make(cfg, env)
	if err != nil {
		return err
	}
	if src != nil {
		capture := &camera.Capture{Source: src, Interval: time.Second / time.Duration(cfg.Drivers.Camera.FPS), Log: d.log}
		g.Go(func() error { return capture.Run(ctx) })
		srv.Handle(protocol.TypeVision, (&vision.Eye{Camera: capture}).Handle)
	}
	g.Go(func() error { return srv.Serve(ctx) })
	return nil
}

// floor runs the room's floor under a floor identity of its own.
func (d *Daemon) floor(ctx context.Context, g *errgroup.Group, l *link) error {
	cfg := d.cfg
	password, err := cfg.MQTT.FloorPassword()
	if err != nil {
		return err
	}
	fid := cfg.MQTT.FloorIDs[0]
	fb, err := d.dial(ctx, fid+"-"+cfg.Room.FloorInstance, fid, password, nil, election.Will(l.room.Scheme, cfg.Room.Name, cfg.Room.FloorInstance))
	if err != nil {
		return err
	}
	fr := room.New(fb, l.room.Scheme, cfg.Room.Name, d.log, d.m)
	fr.MaxBytes = cfg.Room.MaxPayload
	fr.SetMembers(cfg.Room.Members)
	if cfg.Room.Mode == config.ModeRealtime {
		return d.realtimeFloors(ctx, g, l, fr, fid)
	}
	f, err := floor.New(floor.Config{Room: fr, ID: fid, Instance: cfg.Room.FloorInstance,
		VoteTimeout: cfg.Room.VoteTimeout, VoteCeiling: cfg.Room.VoteCeiling, MaxPending: cfg.Room.MaxPending})
	if err != nil {
		return err
	}
	d.probe("floor", f)
	d.fl = f
	g.Go(func() error { return f.Run(ctx) })
	return d.arbiter(ctx, g, fr, f.Active)
}

// arbiter runs the room's hearing arbiter beside its floor: the reports of
// every robot that heard one sentence become one Message from the person
// (runtime/hearing). It publishes only while active says this floor leads.
func (d *Daemon) arbiter(ctx context.Context, g *errgroup.Group, fr *room.Room, active func() bool) error {
	a, err := hearing.New(hearing.Config{Room: fr, User: d.cfg.Hearing.User, People: d.cfg.Hearing.PeopleIDs(), Window: d.cfg.Hearing.Window, Active: active})
	if err != nil {
		return err
	}
	d.probe("hearing arbiter", a)
	g.Go(func() error { return a.Run(ctx) })
	return nil
}

// hear runs the robot's ear: its microphone, cut into utterances, heard
// by its speech-to-text engine, gated while any robot of the room speaks
// and while the panel is muted, reported to the room (device/ear).
func (d *Daemon) hear(ctx context.Context, g *errgroup.Group, l *link, p *panel.Panel) error {
	cfg := d.cfg
	env := parts.Env{Log: d.log, Metrics: d.m}
	src, err := parts.Mics.Make(cfg, env)
	if err != nil {
		return err
	}
	engine, err := parts.STT.Make(cfg, env)
	if err != nil {
		return err
	}
	detector, err := parts.Wakes.Make(cfg, env)
	if err != nil {
		return err
	}
	capture := &mic.Capture{Source: ear.Counted(src, d.m), Log: d.log,
		OnDrop: func(n int) { d.m.Hearing.WithLabelValues("mic_dropped_frames").Add(float64(n)) }}
	seg := cfg.Hearing.Ear.VAD.Segmenter(cfg.Drivers.Mic.SampleRate)
	gate := &ear.Gate{Self: cfg.Identity(), EchoCancelled: cfg.Drivers.Mic.EchoCancelled, Tail: cfg.Hearing.Ear.Tail, Muted: p.Deaf}
	var listening func(bool)
	if r := d.ha; r != nil { // Home Assistant's "listening"
		listening = func(on bool) {
			if on {
				r.Set(homeassistant.EntityState, homeassistant.StateListening)
			} else if !p.Muted() {
				r.Set(homeassistant.EntityState, homeassistant.StateIdle)
			}
		}
	}
	voice, err := d.voiceID()
	if err != nil {
		return err
	}
	e, err := ear.New(ear.Config{Room: l.room, ID: cfg.Identity(), Device: cfg.Device.ID, Frames: capture, Segmenter: seg, OnListening: listening, Voice: voice,
		STT: engine, Gate: gate, Timeout: cfg.Hearing.Ear.STT.Timeout, Wake: detector, ListenFor: cfg.Hearing.Ear.Wake.ListenFor,
		EndOfTurn: cfg.Hearing.Ear.VAD.EndOfTurn(), Eager: cfg.Hearing.Ear.VAD.Eager.Pause()})
	if err != nil {
		return err
	}
	d.log.Info("hearing", "mic", cfg.Drivers.Mic.Kind, "stt", engine.Name(), "wake", cfg.Hearing.Ear.Wake.Kind, "echo_cancelled", cfg.Drivers.Mic.EchoCancelled,
		"voice", cfg.Hearing.Ear.Voice.Kind)
	g.Go(func() error { return capture.Run(ctx) })
	g.Go(func() error { return e.Run(ctx) })
	return nil
}

// voiceprints opens the robot's voiceprints, in the memory's folder,
// when it identifies voices (hearing.voice); nil when it does not.
func (d *Daemon) voiceprints() (*memory.Voices, error) {
	cfg := d.cfg
	if v := d.voices.Load(); v != nil || cfg.Memory == nil {
		return v, nil
	}
	if !cfg.Hearing.Ear.Voice.On() { // off, with voiceprints of when it was on: still forgotten and wiped
		if _, err := os.Stat(filepath.Join(cfg.Memory.Dir, cfg.Identity()+".voices")); err != nil {
			return nil, nil
		}
	}
	v, err := memory.OpenVoices(cfg.Memory.Dir, cfg.Identity(), memory.VoiceLimits{}, d.log)
	if err != nil {
		return nil, fmt.Errorf("hearing.voice: %w", err)
	}
	d.onClose(func() { v.Close() })
	d.voices.Store(v)
	d.log.Info("who is speaking: voiceprints", "file", v.Path(), "people", len(v.List()), "repaired", v.Repaired())
	return v, nil
}

// voiceID is the ear's voice identifier (hearing.voice), nil when off.
func (d *Daemon) voiceID() (*ear.Voice, error) {
	s := d.cfg.Hearing.Ear.Voice
	if !s.On() {
		return nil, nil
	}
	prints, err := d.voiceprints()
	if err != nil || prints == nil {
		return nil, err
	}
	key, err := s.APIKey()
	if err != nil {
		return nil, err
	}
	return &ear.Voice{Embedder: &voiceid.LocalAI{URL: s.URL, Name: s.Model, APIKey: key, Log: d.log}, Prints: prints,
		Threshold: s.Threshold, Sure: s.Sure, Wait: s.Wait, Enrol: s.Enrol, People: d.cfg.Hearing.People}, nil
}

// realtimeFloors runs the realtime floor of the room and of each of its
// whisper channels, and answers the operator's "phase" query (`chorus
// phase start|end [-whisper CHANNEL]`).
func (d *Daemon) realtimeFloors(ctx context.Context, g *errgroup.Group, l *link, fr *room.Room, fid string) error {
	cfg := d.cfg
	limits := cfg.Room.Realtime.Limits()
	leader := &realtime.Leader{Room: fr, Instance: cfg.Room.FloorInstance, ID: fid}
	g.Go(func() error { return leader.Run(ctx) })
	floors := map[string]*realtime.Floor{}
	add := func(channel string, members []string) error {
		f, err := realtime.NewFloor(realtime.FloorConfig{Room: fr, Channel: channel, Members: members, ID: fid, Limits: limits,
			OpenOnMessage: channel == "", Leader: leader})
		if err != nil {
			return err
		}
		floors[channel] = f
		d.probe("realtime floor "+channel, f)
		g.Go(func() error { return f.Run(ctx) })
		return nil
	}
	if err := add("", cfg.Room.Members); err != nil {
		return err
	}
	if err := d.arbiter(ctx, g, fr, leader.Active); err != nil {
		return err
	}
	for ch, ms := range cfg.Room.Realtime.Whisper {
		if err := add(ch, ms); err != nil {
			return err
		}
	}
	l.queries.Handle(protocol.TypePhase, func(ctx context.Context, from string, body json.RawMessage) (any, error) {
		b, err := protocol.DecodePhaseCommand(body, 0)
		if err != nil {
			return nil, fmt.Errorf(`phase: body must be {"action": "start" or "end", "channel": optional whisper channel}: %w`, err)
		}
		f, ok := floors[b.Channel]
		if !ok {
			return nil, fmt.Errorf("phase: room %s has no whisper channel %q", cfg.Room.Name, b.Channel)
		}
		if b.Action == protocol.PhaseActionStart {
			err = f.Start(ctx)
		} else {
			err = f.End(ctx)
		}
		if err != nil {
			return nil, err
		}
		d.log.Info("realtime: operator command", "action", b.Action, "channel", b.Channel, "from", from)
		return b, nil
	})
	return nil
}

// panel runs the status LED and the button, pins by name; a missing pin
// stops the start with an error naming it.
func (d *Daemon) panel(ctx context.Context, g *errgroup.Group, l *link) (*panel.Panel, error) {
	pins := d.cfg.Drivers.GPIO
	p := &panel.Panel{Room: l.room, ID: d.cfg.Identity(), Log: d.log}
	if pins.LED != "" {
		pin, err := gpio.Pin(pins.LED)
		if err != nil {
			return nil, fmt.Errorf("drivers.gpio.led: %w", err)
		}
		p.LED = led.New(pin)
	}
	if pins.Button != "" {
		pin, err := gpio.Pin(pins.Button)
		if err != nil {
			return nil, fmt.Errorf("drivers.gpio.button: %w", err)
		}
		p.Button = &button.Button{Pin: pin}
	}
	g.Go(func() error { return p.Run(ctx) })
	d.pan.Store(p)
	return p, nil
}

// companion runs the persona: its brain (with the device's camera as its
// vision tool) and its voice through the device's speak queries.
func (d *Daemon) companion(ctx context.Context, g *errgroup.Group, l *link, p *panel.Panel) error {
	cfg := d.cfg
	devices, err := room.FollowDevices(ctx, l.room)
	if err != nil {
		return err
	}
	body := cfg.BodyDevice()
	// A device is online while its presence says so; a body behind this
	// device's bridge while its client is connected (its connection is
	// its presence).
	// This device's own body answers in this process: it is online while
	// the process runs, whatever its retained presence says (the Last Will
	// a stopping broker sent, read back before the presence that follows
	// the reconnect, refused the granted companion's speak: issue 27).
	me := cfg.Device.ID
	online := func(device string) (bool, bool) {
		if device == me {
			return true, true
		}
		return devices.Online(device)
	}
	var bodyOnline func() bool
	if d.br != nil && d.br.Serves(body) {
		online = func(device string) (bool, bool) {
			switch device {
			case body:
				return d.br.DeviceOnline(body), true
			case me:
				return true, true
			}
			return devices.Online(device)
		}
		bodyOnline = func() bool { return d.br.DeviceOnline(body) }
	}
	qc := query.NewClient(l.main, l.room.Scheme, cfg.Identity(), query.ClientOptions{Timeout: cfg.Query.Timeout,
		MaxPending: cfg.Query.MaxPending, MaxResultBytes: cfg.Query.MaxResult, Online: online, Log: d.log, Metrics: d.m})
	d.onClose(qc.Close)
	d.asks.Store(qc)
	if err := qc.Watch(ctx, body); err != nil {
		d.log.Warn("the body's results not subscribed at start; subscribed at its first query", "device", body, "err", err)
	}
	var look llm.Looker
	if cfg.Drivers.Camera.Kind != "none" || body != cfg.Device.ID {
		look = llm.DeviceLooker(visionEye(qc), body)
	}
	b, err := parts.Brains.Make(cfg, parts.Env{Log: d.log, Metrics: d.m, Look: look})
	if err != nil {
		return err
	}
	// The robot's tools: its camera for agents here, the rest the
	// companion's (its own, the body's, the MCP servers').
	reg := &tool.Registry{Clash: func(name, source, why string) {
		d.log.Warn("a tool is not offered", "tool", name, "source", source, "why", why)
	}}
	if look != nil {
		if err := reg.Add(query.LookTool(qc, body, cfg.Query.Timeout)); err != nil {
			return err
		}
	}
	d.tools.Store(reg)
	if cfg.Room.Mode == config.ModeRealtime {
		// No companion: the body's actions for agents (a realtime
		// agent's model is offered them by the agent).
		if acts := d.actionsOf(body); acts != nil {
			reg.Source(func() []tool.Tool { return query.ActionTools(qc, body, acts()) })
		}
		return d.realtimeAgents(ctx, g, l, p, b, qc)
	}
	mem, err := d.memory(ctx, g, l, b)
	if err != nil {
		return err
	}
	tools, err := d.mcpTools(ctx, g)
	if err != nil {
		return err
	}
	rep := cfg.Room.Repetition
	var judge brain.RepetitionJudge
	if j, ok := b.(brain.RepetitionJudge); ok && rep.Judge == repetition.JudgeModel {
		judge = j
	}
	c, err := companion.New(companion.Config{Room: l.room, Card: *cfg.Companion, Brain: b, Device: body, Queries: qc,
		HistorySize: cfg.Room.History, Pause: cfg.Room.Pause, MaxTurn: cfg.Room.MaxTurn,
		Threshold: rep.Threshold, Window: rep.Window, Judge: judge, JudgeEvery: rep.JudgeEvery,
		JudgeTimeout: rep.JudgeTimeout, NoRepetition: rep.Judge == repetition.JudgeOff,
		TwoCall: !cfg.Brain.UseDraft(), ThinkTimeout: cfg.Brain.Timeout, SpeakTimeout: cfg.Query.Timeout,
		Presence: l.presence, ExpectThink: expectedThink(cfg.Brain),
		Overlap: cfg.Room.Turns == companion.TurnsOverlapped, BargeIn: protocol.BargeIn(cfg.Room.BargeIn),
		Muted: p.Muted, BodyOnline: bodyOnline, OnStatus: d.onStatus(p), Actions: d.actionsOf(body),
		Knowledge: d.knowledgeOf(body), SpeakMore: body == cfg.Device.ID, NoHold: body != cfg.Device.ID, Memory: mem,
		HeardAs: cfg.Hearing.User, NoEager: cfg.Hearing.Ear.VAD.Eager.Off, Tools: tools, Registry: reg})
	if err != nil {
		return err
	}
	d.probe("companion", c)
	g.Go(func() error { return c.Run(ctx) })
	return nil
}

// mcpTools connects to the config's MCP servers (tools.mcp), each
// client run by g until ctx ends: the tools they allow now, as the
// brain offers them. A server down at start is tried again (mcp.Client).
func (d *Daemon) mcpTools(ctx context.Context, g *errgroup.Group) (func() []tool.Tool, error) {
	var clients []*mcp.Client
	for i, s := range d.cfg.Tools.MCP {
		token, err := d.cfg.MCPToken(i)
		if err != nil {
			return nil, err
		}
		c := mcp.New(s, token, d.log)
		c.CheckSchema = schema.Check
		c.Refused = func(why string) { d.m.BadInput.WithLabelValues("mcp_tool", why).Inc() }
		clients = append(clients, c)
		g.Go(func() error { c.Run(ctx); return nil })
	}
	if len(clients) == 0 {
		return nil, nil
	}
	return func() []tool.Tool {
		var out []tool.Tool
		for _, c := range clients {
			for _, t := range c.Tools() {
				remote, kind := t.Remote, tool.Acts
				if t.ReadOnly {
					kind = tool.Answers
				}
				out = append(out, tool.Tool{Name: t.Name, Description: t.Description, Parameters: t.Schema,
					Kind: kind, ReadOnly: t.ReadOnly, Source: tool.FromMCP(c.Name()), Timeout: c.Timeout(),
					Call: tool.Text(func(ctx context.Context, args json.RawMessage) (string, error) { return c.Call(ctx, remote, args) })})
			}
		}
		return out
	}, nil
}

// memory opens the companion's memory, when the config turns it on, and
// answers its control requests on the device's topic (chorus memory).
func (d *Daemon) memory(ctx context.Context, g *errgroup.Group, l *link, b brain.Brain) (*companion.Memory, error) {
	cfg := d.cfg
	mc := cfg.Memory
	if mc == nil {
		return nil, nil
	}
	st, err := memory.Open(mc.Dir, cfg.Identity(), mc.Limits(), d.log)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	d.onClose(func() { st.Close() })
	d.mem.Store(st)
	me := cfg.Identity()
	report := func(person, messageID string, n int) {
		f := protocol.Forgot{From: me, ID: protocol.NewID(), Person: person, MessageID: messageID, Forgotten: n}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := l.room.SendForgot(pctx, f); err != nil {
			d.log.Warn("memory: the room was not told what was forgotten", "person", person, "err", err)
		}
	}
	voices, err := d.voiceprints()
	if err != nil {
		return nil, err
	}
	people := cfg.Hearing.PeopleIDs()
	ctl := &control.Memory{Store: st, Voices: voices,
		Person:     func(id string) bool { return slices.Contains(people, id) },
		IsOperator: mc.IsOperator, Forgot: func(p string, n int) { report(p, "", n) }, Log: d.log, Metrics: d.m}
	g.Go(func() error { return control.Serve(ctx, l.dev, l.room.Scheme, cfg.Device.ID, ctl) })
	m := &companion.Memory{Store: st, Recall: mc.Recall, RestAfter: mc.RestAfter, PerHour: mc.PerHour, Forgot: report, Share: mc.Share, Voices: voices}
	if m.Embedder, err = mc.Embedder(); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if e := mc.Embeddings; e != nil {
		m.EmbedWait = e.Timeout
	}
	if x, ok := b.(brain.Extractor); ok && mc.Extract != memory.ExtractRules {
		m.Extractor = x
	}
	d.log.Info("memory: on", "dir", mc.Dir, "facts", len(st.Facts("")), "extract", map[bool]string{true: "model", false: "rules"}[m.Extractor != nil])
	return m, nil
}

// actionsOf is what the body device can do, as its companion's brain is
// offered it: this device's configured actions, or those a body behind
// this device's bridge declared when it connected.
func (d *Daemon) actionsOf(device string) func() []protocol.ActionDef {
	switch {
	case device == d.cfg.Device.ID && d.acts != nil:
		defs := d.acts.Defs()
		return func() []protocol.ActionDef { return defs }
	case d.br != nil && d.br.Serves(device):
		return func() []protocol.ActionDef { return d.br.Actions(device) }
	}
	return nil
}

// knowledgeOf is the knowledge tools the body device declares, as its
// companion may offer them to its brain: those a body behind this
// device's bridge declared (knowledge.declare); nil for any other body.
func (d *Daemon) knowledgeOf(device string) func() []protocol.KnowledgeDef {
	if d.br != nil && d.br.Serves(device) {
		return func() []protocol.KnowledgeDef { return d.br.Knowledge(device) }
	}
	return nil
}

// realtimeAgents runs the persona in the room's realtime phases, and in
// those of each whisper channel it belongs to (never spoken aloud).
func (d *Daemon) realtimeAgents(ctx context.Context, g *errgroup.Group, l *link, p *panel.Panel, b brain.Brain, qc *query.Client) error {
	cfg := d.cfg
	body := cfg.BodyDevice()
	talker, ok := b.(realtime.Talker)
	if !ok {
		return fmt.Errorf("brain.provider %s cannot talk in realtime rooms", cfg.Brain.Provider)
	}
	rt := cfg.Room.Realtime
	channels := []string{""}
	for ch, ms := range rt.Whisper {
		if slices.Contains(ms, cfg.Identity()) {
			channels = append(channels, ch)
		}
	}
	for _, ch := range channels {
		a, err := realtime.NewAgent(realtime.AgentConfig{Room: l.room, Channel: ch, Card: *cfg.Companion, Brain: talker,
			Device: body, Queries: qc, Actions: d.actionsOf(body), PollInterval: rt.PollInterval, SpeakCooldown: rt.SpeakCooldown,
			ThinkTimeout: cfg.Brain.Timeout, SpeakTimeout: cfg.Query.Timeout, HistorySize: cfg.Room.History, Muted: p.Muted})
		if err != nil {
			return err
		}
		d.probe("realtime agent "+ch, a)
		g.Go(func() error { return a.Run(ctx) })
	}
	return nil
}

// expectedThink is the think time a companion announces before it has
// measured its brain: the rule brain's delay, a model's timeout (the
// measured latency replaces it after a few calls).
func expectedThink(b brain.Settings) time.Duration {
	if b.Provider == "rule" {
		return b.Delay + 100*time.Millisecond
	}
	return b.Timeout
}

// bridge builds the WebSocket bridge: each identity a client acts as
// connects under its own name, with the password its token names.
func (d *Daemon) bridge(ctx context.Context, l *link) (*bridge.Bridge, error) {
	ws := d.cfg.HTTP.WebSocket
	entries, err := ws.Tokens()
	if err == nil {
		err = d.cfg.CheckBridgeTokens(entries)
	}
	if err != nil {
		return nil, err
	}
	passwordEnv := map[string]string{}
	var tokens []bridge.Token
	for _, e := range entries {
		tokens = append(tokens, bridge.Token{Secret: e.Token, Role: bridge.Role(e.Role), Name: e.Name, Camera: e.Camera})
		passwordEnv[e.Name] = e.MQTTPasswordEnv
	}
	var anon *bridge.Token
	if ws.Anonymous != "" {
		role, name, _ := strings.Cut(ws.Anonymous, ":")
		anon = &bridge.Token{Role: bridge.Role(role), Name: name, Camera: true}
	}
	// Camera frames are asked for as this device's identity, which sees
	// them only if it is a room member (a companion's device).
	qc := query.NewClient(l.main, l.room.Scheme, d.cfg.Identity(), query.ClientOptions{Timeout: d.cfg.Query.Timeout,
		MaxResultBytes: d.cfg.Query.MaxResult, Log: d.log, Metrics: d.m})
	d.onClose(qc.Close)
	look := func(ctx context.Context, device string) (json.RawMessage, error) {
		return qc.Ask(ctx, device, protocol.TypeVision, nil, query.LookTimeout)
	}
	dial := func(ctx context.Context, identity string) (bus.Bus, error) {
		var password string
		if env := passwordEnv[identity]; env != "" {
			password = os.Getenv(env)
		}
		b, err := d.dialOwned(ctx, identity+"-bridge-"+protocol.NewID()[:8], identity, password, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("bridge: connect as %s: %w", identity, err)
		}
		return b, nil
	}
	// camera.get for a device whose presence is offline is answered at
	// once instead of after LookTimeout.
	devices, err := room.FollowDevices(ctx, l.room)
	if err != nil {
		return nil, err
	}
	gone := func(device string) { // the companion's queries to a body that left fail now
		if qc := d.asks.Load(); qc != nil {
			qc.Offline(device)
		}
	}
	return bridge.New(bridge.Config{Room: l.room, Dial: dial, Tokens: tokens, Anonymous: anon, Look: look, Online: devices.Online, MaxClients: ws.MaxClients,
		MaxFrame: int64(ws.MaxFrame), MaxDeviceFrame: int64(cmp.Or(ws.MaxDeviceFrame, d.cfg.Query.MaxResult)), OnDeviceGone: gone, Log: d.log, Metrics: d.m})
}

// serveHTTP serves /healthz, /metrics and, when configured, the WebSocket
// bridge until ctx ends.
func (d *Daemon) serveHTTP(ctx context.Context, g *errgroup.Group, l *link) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := d.Alive(r.Context(), 2*time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", d.m.Handler())
	if d.br != nil && d.cfg.HTTP.MCP && d.cfg.Companion != nil { // the config's check refuses http.mcp without them
		mux.Handle(mcpserve.Path, d.mcpServer())
	}
	if d.br != nil {
		mux.Handle("/ws", d.br)
		// "/" too, for a WebSocket upgrade: aikyo's clients dial ws://host:port.
		mux.Handle("/", d.br.OrPage(console.Handler()))
	}
	ln, err := net.Listen("tcp", d.cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	g.Go(func() error {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
		return nil
	})
	g.Go(func() error { // the server stops with the daemon's context
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return hs.Shutdown(c)
	})
	return nil
}

// visionEye is the brain's eye on a device (llm.Eye): a typed vision
// query through q.
func visionEye(q query.Asker) llm.Eye {
	return func(ctx context.Context, device string) (string, string, error) {
		v, err := query.Call(ctx, q, device, query.Vision, protocol.VisionRequest{}, 0)
		if err != nil {
			return "", "", err
		}
		return v.Image, v.MIME, nil
	}
}
