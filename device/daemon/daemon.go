// Package daemon wires one device from its config: the embedded broker (if
// this device hosts it), the bus connections, the drivers, the query server
// of the body, the floor (if this device runs it) and the companion. chorusd
// runs one Daemon; `chorus demo` runs several in one process.
//
// # Usage
//
//	d, err := daemon.New(cfg, daemon.Options{Log: log})
//	err = d.Run(ctx, func() { /* ready: tell systemd */ })
//
// New checks everything it can without touching hardware; Run opens the
// drivers and connections, calls ready once all are up, and closes them all
// when ctx ends.
package daemon

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chorus-robotics/chorus/device/button"
	"github.com/chorus-robotics/chorus/device/led"
	"github.com/chorus-robotics/chorus/device/speak"
	"github.com/chorus-robotics/chorus/device/vision"
	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/camera"
	"github.com/chorus-robotics/chorus/drivers/gpio"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/runtime/brain"
	"github.com/chorus-robotics/chorus/runtime/brain/llm"
	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/companion"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/floor"
	"github.com/chorus-robotics/chorus/runtime/metrics"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Options adjust a Daemon beyond its config.
type Options struct {
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Brain overrides the configured brain (tests, benchmarks).
	Brain brain.Brain
	// Audio overrides the configured audio output (the demo writes WAVs).
	Audio audio.Output
	// TTS overrides the configured TTS engine.
	TTS tts.Engine
	// Brokers reports the embedded broker's address once it listens.
	OnBroker func(addr string)
}

// Daemon is one running device.
type Daemon struct {
	cfg  *config.Config
	opts Options
	log  *slog.Logger
	m    *metrics.Metrics

	ready     atomic.Bool
	mu        sync.Mutex
	closers   []func()
	probes    []namedProbe
	Companion *companion.Companion
	Floor     *floor.Floor
}

// New checks the config and prepares the daemon; it touches no hardware.
func New(cfg *config.Config, opts Options) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Daemon{cfg: cfg, opts: opts, log: log.With("device", cfg.Device.ID), m: metrics.OrNew(opts.Metrics)}, nil
}

// Metrics is the daemon's metric set.
func (d *Daemon) Metrics() *metrics.Metrics { return d.m }

// Ready reports whether the bus, the floor and the drivers are up.
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

func (d *Daemon) scheme() topic.Scheme {
	return topic.Scheme{Prefix: d.cfg.MQTT.Prefix, FloorIDs: d.cfg.MQTT.FloorIDs}.WithRoster(d.cfg.Room.Name, d.cfg.Room.Members)
}

// Run starts everything, calls ready once it is up, and runs until ctx ends.
func (d *Daemon) Run(ctx context.Context, ready func()) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer d.closeAll()
	defer wg.Wait()
	defer cancel()
	errc := make(chan error, 8)
	spawn := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	cfg, s := d.cfg, d.scheme()

	if cfg.MQTT.Embedded.Enabled {
		if err := d.startBroker(ctx, s); err != nil {
			return err
		}
	}
	password, err := cfg.MQTT.Password()
	if err != nil {
		return err
	}
	id := cfg.Identity()
	rm := room.New(nil, s, cfg.Room.Name, d.log, d.m)
	rm.MaxBytes = cfg.Room.MaxPayload
	rm.SetMembers(cfg.Room.Members)
	var birth func(time.Time) *bus.Retained
	var will *bus.Retained
	var presence *room.Announcement
	if cfg.Companion != nil {
		presence = rm.Announce(id, cfg.Device.ID, expectedThink(cfg.Brain))
		birth, will = presence.Birth, presence.Will()
	}
	main, err := d.dial(ctx, id, cfg.MQTT.Username, password, birth, will)
	if err != nil {
		return err
	}
	rm.Bus = main

	// The body answers queries under the device's name.
	devBus := main
	if cfg.Device.ID != cfg.MQTT.Username {
		if devBus, err = d.dial(ctx, cfg.Device.ID+"-device", cfg.Device.ID, password, nil, nil); err != nil {
			return err
		}
	}
	// The watchdog's bus probe: through the broker and back, on a topic of
	// the device's own that nothing else subscribes to.
	d.probes = append(d.probes, namedProbe{"bus", busProbe{b: devBus, topic: s.Probe(cfg.Device.ID)}})
	srv := &query.Server{Bus: devBus, Scheme: s, Device: cfg.Device.ID, Log: d.log, Metrics: d.m}
	speaker, err := d.speaker()
	if err != nil {
		return err
	}
	srv.Handle("speak", speaker.Handle)
	if cfg.Drivers.Camera.Kind != "none" {
		src, err := openCamera(cfg)
		if err != nil {
			return err
		}
		capture := &camera.Capture{Source: src, Interval: time.Second / time.Duration(cfg.Drivers.Camera.FPS), Log: d.log}
		spawn("camera", capture.Run)
		srv.Handle("vision", (&vision.Eye{Camera: capture}).Handle)
	}
	spawn("query server", srv.Serve)

	if cfg.Room.Floor {
		fpw := ""
		if cfg.MQTT.FloorPasswordEnv != "" {
			var ok bool
			if fpw, ok = lookupEnv(cfg.MQTT.FloorPasswordEnv); !ok {
				return fmt.Errorf("mqtt.floor_password_env: environment variable %s is not set", cfg.MQTT.FloorPasswordEnv)
			}
		}
		fid := cfg.MQTT.FloorIDs[0]
		fb, err := d.dial(ctx, fid+"-"+cfg.Room.FloorInstance, fid, fpw, nil, floor.LeaderWill(s, cfg.Room.Name, cfg.Room.FloorInstance))
		if err != nil {
			return err
		}
		frm := room.New(fb, s, cfg.Room.Name, d.log, d.m)
		frm.MaxBytes = cfg.Room.MaxPayload
		frm.SetMembers(cfg.Room.Members)
		f, err := floor.New(floor.Config{Room: frm, ID: fid, Instance: cfg.Room.FloorInstance,
			VoteTimeout: cfg.Room.VoteTimeout, VoteCeiling: cfg.Room.VoteCeiling, MaxPending: cfg.Room.MaxPending})
		if err != nil {
			return err
		}
		d.Floor = f
		d.probes = append(d.probes, namedProbe{"floor", f})
		spawn("floor", f.Run)
	}

	// The panel: status LED and button (pins by name; a missing pin stops
	// the start with an error naming it).
	var statusLED *led.LED
	var muted atomic.Bool
	if name := cfg.Drivers.GPIO.LED; name != "" {
		pin, err := gpio.Pin(name)
		if err != nil {
			return fmt.Errorf("drivers.gpio.led: %w", err)
		}
		statusLED = led.New(pin)
		spawn("status led", statusLED.Run)
	}
	if name := cfg.Drivers.GPIO.Button; name != "" {
		pin, err := gpio.Pin(name)
		if err != nil {
			return fmt.Errorf("drivers.gpio.button: %w", err)
		}
		btn := &button.Button{Pin: pin,
			OnShort: func() {
				m := !muted.Load()
				muted.Store(m)
				d.log.Info("button: mute", "muted", m)
			},
			OnLong: func(held bool) {
				d.log.Info("button: the human holds the floor", "held", held)
				hctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if err := rm.SendHold(hctx, id, held, time.Now()); err != nil {
					d.log.Error("button: hold not published", "err", err)
				}
			}}
		spawn("button", btn.Run)
	}

	if cfg.Companion != nil {
		devices, err := room.FollowDevices(ctx, rm)
		if err != nil {
			return err
		}
		qc := query.NewClient(main, s, id, query.ClientOptions{Timeout: cfg.Query.Timeout, MaxPending: cfg.Query.MaxPending,
			MaxResultBytes: cfg.Query.MaxResult, Online: devices.Online, Log: d.log, Metrics: d.m})
		d.onClose(qc.Close)
		var look llm.Looker
		if cfg.Drivers.Camera.Kind != "none" {
			look = func(ctx context.Context) (llm.Image, error) {
				body, err := qc.Ask(ctx, cfg.Device.ID, "vision", nil, 10*time.Second)
				if err != nil {
					return llm.Image{}, err
				}
				var v vision.Result
				if err := json.Unmarshal(body, &v); err != nil {
					return llm.Image{}, fmt.Errorf("vision result: %w", err)
				}
				return llm.Image{MIME: v.MIME, Base64: v.Image}, nil
			}
		}
		b, err := d.brain(look)
		if err != nil {
			return err
		}
		c, err := companion.New(companion.Config{Room: rm, Card: *cfg.Companion, Brain: b, Device: cfg.Device.ID, Queries: qc,
			HistorySize: cfg.Room.History, Pause: cfg.Room.Pause, MaxTurn: cfg.Room.MaxTurn,
			Threshold: cfg.Room.Repetition.Threshold, Window: cfg.Room.Repetition.Window,
			TwoCall: !cfg.Brain.UseDraft(), ThinkTimeout: cfg.Brain.Timeout, SpeakTimeout: cfg.Query.Timeout,
			Presence: presence, ExpectThink: expectedThink(cfg.Brain),
			Muted: muted.Load,
			OnStatus: func(st companion.Status) {
				if statusLED != nil {
					statusLED.Set(st)
				}
			}})
		if err != nil {
			return err
		}
		d.Companion = c
		d.probes = append(d.probes, namedProbe{"companion", c})
		spawn("companion", c.Run)
	}
	if cfg.HTTP.Listen != "off" {
		if err := d.serveHTTP(ctx, &wg); err != nil {
			return err
		}
	}
	d.ready.Store(true)
	d.log.Info("chorusd ready", "room", cfg.Room.Name, "identity", id, "floor", cfg.Room.Floor, "broker", cfg.MQTT.Broker)
	if ready != nil {
		ready()
	}
	select {
	case <-ctx.Done():
		d.ready.Store(false)
		return nil
	case err := <-errc:
		d.ready.Store(false)
		return err
	}
}

func (d *Daemon) dial(ctx context.Context, clientID, user, password string, birth func(time.Time) *bus.Retained, will *bus.Retained) (*bus.MQTT, error) {
	b, err := bus.Dial(ctx, bus.Options{Broker: d.cfg.MQTT.Broker, ClientID: clientID, Username: user, Password: password,
		Birth: birth, Will: will, Logger: d.log, Metrics: d.m})
	if err != nil {
		return nil, err
	}
	d.onClose(func() { b.Close() })
	return b, nil
}

func (d *Daemon) startBroker(ctx context.Context, s topic.Scheme) error {
	e := d.cfg.MQTT.Embedded
	users, err := e.Users()
	if err != nil {
		return err
	}
	bc := broker.Config{Addr: e.Listen, Users: users, AllowAnonymous: e.AllowAnonymous, Scheme: s, Logger: d.log}
	if e.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(d.cfg.Resolve(e.TLSCert), d.cfg.Resolve(e.TLSKey))
		if err != nil {
			return fmt.Errorf("mqtt.embedded.tls_cert: %w", err)
		}
		bc.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	br, err := broker.Start(ctx, bc)
	if err != nil {
		return err
	}
	d.onClose(func() { br.Close() })
	if d.opts.OnBroker != nil {
		d.opts.OnBroker(br.Addr())
	}
	d.log.Info("embedded broker listening", "addr", br.Addr())
	return nil
}

func (d *Daemon) serveHTTP(ctx context.Context, wg *sync.WaitGroup) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := d.Alive(r.Context(), 2*time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(d.m.Registry, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", d.cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("http server", "err", err)
		}
	}()
	wg.Add(1)
	go func() { // the server stops with the daemon's context, before Run waits for it
		defer wg.Done()
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(c)
	}()
	return nil
}

func (d *Daemon) speaker() (*speak.Speaker, error) {
	out := d.opts.Audio
	if out == nil {
		var err error
		if out, err = openAudio(d.cfg); err != nil {
			return nil, err
		}
		d.onClose(func() { out.Close() })
	}
	engine := d.opts.TTS
	if engine == nil {
		var err error
		if engine, err = chooseTTS(d.cfg, d.log); err != nil {
			return nil, err
		}
	}
	return &speak.Speaker{TTS: engine, Out: out, MaxChars: d.cfg.Drivers.TTS.MaxChars, Log: d.log, Metrics: d.m}, nil
}
