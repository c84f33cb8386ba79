package daemon

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chorus-robotics/chorus/device/homeassistant"
	"github.com/chorus-robotics/chorus/device/panel"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
)

// homeAssistant makes the robot a Home Assistant device (device/
// homeassistant): its discovery, its entities' states from the panel,
// the companion, the speaker and the room, and Home Assistant's commands
// to the panel, the room, the floor and the body. With the feature off
// but configured, the robot takes itself out of Home Assistant (the empty
// retained discovery).
func (d *Daemon) homeAssistant(ctx context.Context, g *errgroup.Group, l *link, p *panel.Panel) error {
	cfg := d.cfg
	h := cfg.HomeAssistant
	if !h.Enabled {
		if h.Configured() && cfg.Companion != nil {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := homeassistant.Remove(pctx, l.main, l.room.Scheme, h.NodeID, cfg.Identity()); err != nil {
				d.log.Warn("homeassistant: could not take the robot out of Home Assistant", "err", err)
			} else {
				d.log.Info("homeassistant: off; the robot's discovery was removed", "node", h.NodeID)
			}
		}
		return nil
	}
	id := cfg.Identity()
	r := &homeassistant.Robot{Bus: l.main, Scheme: l.room.Scheme, Discovery: h.DiscoveryPrefix, User: h.User, Node: h.NodeID,
		Identity: id, Name: cfg.Companion.Name, Model: cfg.Device.Model, Version: d.version, Room: cfg.Room.Name, Opener: h.Opener,
		Presence: l.room.Scheme.Presence(cfg.Room.Name, id), Hears: cfg.Hearing.Enabled, Floor: d.fl != nil,
		SetMuted: p.SetMuted, SetMic: p.SetMic,
		Say: func(ctx context.Context, m protocol.Message) error { return l.room.SendMessage(ctx, m) },
		Log: d.log, Metrics: d.m}
	if r.Model == "" {
		r.Model = "Chorus robot"
	}
	if d.fl != nil {
		r.End = d.fl.End
	}
	if d.acts != nil && cfg.BodyDevice() == cfg.Device.ID {
		r.Actions = d.acts.Defs()
		r.Act = func(ctx context.Context, name string) error {
			_, err := d.acts.Do(ctx, protocol.ActionRequest{Name: name})
			return err
		}
	}
	if cfg.Memory != nil {
		// Home Assistant is the household's: its button wipes the memory,
		// voiceprints too (each person can forget themselves by saying so).
		r.Forget = func(context.Context) (int, error) {
			st := d.mem.Load()
			if st == nil {
				return 0, errors.New("the memory is not open yet")
			}
			if v := d.voices.Load(); v != nil { // the voices it knows people by go too
				if err := v.Wipe(); err != nil {
					return 0, err
				}
			}
			return st.Wipe()
		}
	}
	d.ha = r
	p.OnMute = func(m bool) {
		r.Set(homeassistant.EntityMute, homeassistant.OnOff(m))
		if m {
			r.Set(homeassistant.EntityState, homeassistant.StateMuted)
		} else {
			r.Set(homeassistant.EntityState, homeassistant.StateIdle)
		}
	}
	r.Set(homeassistant.EntityState, homeassistant.StateIdle)
	r.Set(homeassistant.EntitySpeaking, "OFF")
	r.Set(homeassistant.EntityMute, homeassistant.OnOff(p.Muted()))
	if r.Hears {
		r.Set(homeassistant.EntityMic, homeassistant.OnOff(!p.MicOff()))
	}
	err := l.room.OnMessage(ctx, func(m protocol.Message) {
		r.Set(homeassistant.EntityRoomMessage, m.Params.From+": "+m.Params.Message)
		if m.Params.From == id {
			r.Set(homeassistant.EntityUtterance, m.Params.Message)
		}
	})
	if err != nil {
		return err
	}
	err = l.room.OnSpeaking(ctx, func(e room.SpeakingEvent) {
		if e.ID == id {
			r.Set(homeassistant.EntitySpeaking, homeassistant.OnOff(!e.Cleared && e.Speaking.Speaking))
		}
	})
	if err != nil {
		return err
	}
	if r.Floor {
		err = l.room.OnGrant(ctx, func(g protocol.TurnGrant) {
			if s := g.SpeakerID(); s != "" {
				r.Set(homeassistant.EntityTurn, s+" has the floor")
			} else {
				r.Set(homeassistant.EntityTurn, "resting ("+g.Reason+")")
			}
		})
		if err != nil {
			return err
		}
		r.Set(homeassistant.EntityTurn, "resting")
	}
	g.Go(func() error { return r.Run(ctx) })
	return nil
}

// onStatus shows the companion's status on the panel and, in the words of
// Home Assistant's voice satellites, on its state sensor.
func (d *Daemon) onStatus(p *panel.Panel) func(companion.Status) {
	return func(s companion.Status) {
		p.Status(s)
		if d.ha == nil {
			return
		}
		state := homeassistant.StateIdle
		switch {
		case p.Muted():
			state = homeassistant.StateMuted
		case s == companion.Thinking:
			state = homeassistant.StateThinking
		case s == companion.Speaking:
			state = homeassistant.StateSpeaking
		}
		d.ha.Set(homeassistant.EntityState, state)
	}
}

// RemoveFromHomeAssistant takes cfg's robot out of Home Assistant (the
// empty retained discovery), for `chorusd --ha-remove` before the robot is
// uninstalled; it connects under the robot's identity without announcing
// its presence.
func RemoveFromHomeAssistant(ctx context.Context, cfg *robot.Config) error {
	d, err := New(cfg, Options{})
	if err != nil {
		return err
	}
	defer d.closeAll()
	password, err := cfg.MQTT.Password()
	if err != nil {
		return err
	}
	b, err := d.dial(ctx, cfg.Identity()+"-ha-remove", cfg.MQTT.Username, password, nil, nil)
	if err != nil {
		return err
	}
	s := d.scheme()
	if s.HA == nil { // the section says nothing: the default prefix
		s = s.WithHomeAssistant(cfg.Room.Name, cfg.HomeAssistant.DiscoveryPrefix, cfg.HomeAssistant.User, cfg.HomeAssistant.NodeID, cfg.Identity())
	}
	return homeassistant.Remove(ctx, b, s, cfg.HomeAssistant.NodeID, cfg.Identity())
}
