package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/bus"
)

// Prober is a loop that can prove it is still turning.
type Prober interface {
	Ping(ctx context.Context) error
}

// NotifyReady tells systemd the daemon is up (Type=notify); outside systemd
// it does nothing.
func NotifyReady(log *slog.Logger) {
	if ok, err := sd.SdNotify(false, sd.SdNotifyReady); err != nil {
		log.Warn("systemd notify READY failed", "err", err)
	} else if ok {
		log.Info("told systemd we are ready")
	}
}

// NotifyStopping tells systemd the daemon is shutting down.
func NotifyStopping() { sd.SdNotify(false, sd.SdNotifyStopping) }

// Watchdog feeds systemd's watchdog (WatchdogSec) at half its period, but
// only while every loop answers a ping in time: a stuck floor, companion
// or bus stops the pings, and systemd restarts the service.
func (d *Daemon) Watchdog(ctx context.Context) {
	period, err := sd.SdWatchdogEnabled(false)
	if err != nil || period == 0 {
		return
	}
	t := time.NewTicker(period / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := d.Alive(ctx, period/4); err != nil {
				d.log.Error("watchdog: a loop is stuck; not feeding systemd", "err", err)
				continue
			}
			sd.SdNotify(false, sd.SdNotifyWatchdog)
		}
	}
}

// Alive pings every loop of the daemon and fails if one does not answer
// within limit.
func (d *Daemon) Alive(ctx context.Context, limit time.Duration) error {
	if !d.Ready() {
		return errNotReady
	}
	return d.pingAll(ctx, limit)
}

// pingAll asks every part's loop to answer within limit.
func (d *Daemon) pingAll(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	d.mu.Lock()
	probes := append([]namedProbe(nil), d.probes...)
	d.mu.Unlock()
	for _, p := range probes {
		if err := p.p.Ping(ctx); err != nil {
			return &stuckError{name: p.name, err: err}
		}
	}
	return nil
}

type namedProbe struct {
	name string
	p    Prober
}

type stuckError struct {
	name string
	err  error
}

func (e *stuckError) Error() string { return e.name + " did not answer: " + e.err.Error() }

type readyError struct{}

func (readyError) Error() string { return "not ready" }

var errNotReady = readyError{}

// Version is the build's version (chorusd sets it), told to Home
// Assistant.
var Version = "dev"

// Main runs a daemon for cfg the way chorusd does: logs to w as the config
// says, READY once up, the watchdog fed while the loops turn, STOPPING on
// the way out, and one line when it has stopped saying why (the signal;
// an error is chorusd's to print).
func Main(ctx context.Context, cfg *robot.Config, w io.Writer) error {
	log := cfg.Log.Logger(w)
	d, err := New(cfg, Options{Log: log, Version: Version})
	if err != nil {
		return err
	}
	defer NotifyStopping()
	err = d.Run(ctx, func() {
		NotifyReady(log)
		go d.Watchdog(ctx)
	})
	if err == nil {
		why := "asked to stop"
		if cause := context.Cause(ctx); cause != nil {
			why = cause.Error() // "interrupt signal received", "terminated signal received"
		}
		d.log.Info("chorusd stopped", "why", why)
	}
	return err
}

// busProbe pings the bus through the broker and back.
type busProbe struct {
	b     *bus.MQTT
	topic string
}

func (p busProbe) Ping(ctx context.Context) error {
	payload := fmt.Sprintf(`{"jsonrpc":"2.0","id":"watchdog-%d","error":"watchdog ping"}`, time.Now().UnixNano())
	return p.b.Ping(ctx, p.topic, []byte(payload))
}
