// Package localroom runs a whole room in one process: the embedded broker
// on a free loopback port and one daemon per device config, each on its own
// connections as if on its own robot. `chorus demo` and the benchmarks run
// their rooms with it, so a room is wired one way only: by the daemon.
//
// # Usage
//
//	cfgs, err := localroom.Load(firmwareconfigs.Demo, "demo/*.yaml")
//	r, err := localroom.Start(ctx, cfgs, localroom.Options{Log: log})
//	defer r.Close()
//	user, err := r.Dial(ctx, "user") // a client of the room
package localroom

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/device/daemon"
	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/broker"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/config"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

// Load reads every config matching pattern in fsys (an os.DirFS or configs
// embedded in the binary); they must all be of one room.
func Load(fsys fs.FS, pattern string) ([]*robot.Config, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("localroom: no device configs match %s", pattern)
	}
	var out []*robot.Config
	var errs []error
	for _, n := range names {
		c, typed, err := robot.ParseFS(fsys, n)
		if err == nil {
			if all := config.Merge(typed, c.Validate()); len(all) > 0 {
				err = fmt.Errorf("config %s: %w", n, all)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, c := range out[1:] {
		if c.Room.Name != out[0].Room.Name {
			return nil, fmt.Errorf("localroom: %s is in room %q, %s in %q", c.Path(), c.Room.Name, out[0].Path(), out[0].Room.Name)
		}
	}
	return out, nil
}

// Options adjust a local room.
type Options struct {
	Log *slog.Logger
	// Prepare, if set, changes each config before its device starts (the
	// demo writes each companion's audio under ./out/demo/).
	Prepare func(*robot.Config)
	// Quiet keeps the embedded broker's log to errors (it logs every
	// client's disconnect as a warning).
	Quiet bool
	// Broker, when set, is the URL of a broker to use instead of starting
	// the embedded one (a benchmark on Mosquitto).
	Broker string
}

// Room is a running local room.
type Room struct {
	Name       string
	Scheme     topic.Scheme
	URL        string   // the embedded broker
	Companions []string // the companion ids of its devices

	broker *broker.Broker
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errc   chan error
	log    *slog.Logger
}

// Start starts the broker and every device, and returns once every device
// is ready, every companion is present and the floor (if a device runs one)
// has claimed the room.
func Start(ctx context.Context, cfgs []*robot.Config, o Options) (*Room, error) {
	if len(cfgs) == 0 {
		return nil, errors.New("localroom: no devices")
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	first := cfgs[0]
	r := &Room{Name: first.Room.Name, log: log, errc: make(chan error, len(cfgs)),
		Scheme: first.Scheme()}
	for _, c := range cfgs[1:] { // every robot of the room in Home Assistant
		if h := c.HomeAssistant; h.Enabled {
			r.Scheme = r.Scheme.WithHomeAssistant(c.Room.Name, h.DiscoveryPrefix, h.User, h.NodeID, c.Identity())
		}
	}
	r.URL = o.Broker
	if r.URL == "" {
		blog := log
		if o.Quiet {
			blog = slog.New(errorsOnly{log.Handler()})
		}
		br, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", AllowAnonymous: true, Scheme: r.Scheme, Logger: blog})
		if err != nil {
			return nil, err
		}
		r.broker, r.URL = br, br.URL()
	}
	ctx, r.cancel = context.WithCancel(ctx)
	floors := false
	readyc := make(chan struct{}, len(cfgs))
	for _, c := range cfgs {
		c.MQTT.Embedded.Enabled = false
		c.MQTT.Broker = r.URL
		c.HTTP.Listen = "off"
		floors = floors || c.Room.Floor
		if c.Companion != nil {
			r.Companions = append(r.Companions, c.Companion.ID)
		}
		if o.Prepare != nil {
			o.Prepare(c)
		}
		d, err := daemon.New(c, daemon.Options{Log: log}) // the daemon names its device in its lines
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", c.Path(), err)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := d.Run(ctx, func() { readyc <- struct{}{} }); err != nil {
				r.errc <- fmt.Errorf("%s: %w", c.Device.ID, err)
			}
		}()
	}
	for range cfgs {
		select {
		case <-readyc:
		case err := <-r.errc:
			r.Close()
			return nil, err
		case <-ctx.Done():
			r.Close()
			return nil, fmt.Errorf("devices not ready: %w", ctx.Err())
		}
	}
	if err := r.waitSettled(ctx, floors); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// waitSettled waits until every companion's presence is online and, when
// a device runs a floor, the floor's claim is.
func (r *Room) waitSettled(ctx context.Context, floor bool) error {
	rm, b, err := r.Dial(ctx, "localroom-watch")
	if err != nil {
		return err
	}
	defer b.Close()
	present := make(chan string, len(r.Companions)*2+1)
	if err := rm.OnPresence(ctx, func(p room.PresenceEvent) {
		if p.Presence.Online {
			select { // a bus handler never blocks
			case present <- p.ID:
			default:
			}
		}
	}); err != nil {
		return err
	}
	claimed := make(chan struct{}, 1)
	if floor {
		err := b.Subscribe(ctx, r.Scheme.FloorLeader(r.Name), func(_ string, p []byte) {
			if c, err := protocol.DecodeLeaderClaim(p, 0); err == nil && c.Online {
				select {
				case claimed <- struct{}{}:
				default:
				}
			}
		})
		if err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(seen) < len(r.Companions) || floor {
		select {
		case id := <-present:
			seen[id] = true
		case <-claimed:
			floor = false
		case <-timeout:
			return fmt.Errorf("room not settled: companions present %v of %v, floor claim pending %v", seen, r.Companions, floor)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Dial connects a client of the room (a user, an observer) as user.
func (r *Room) Dial(ctx context.Context, user string) (*room.Room, bus.Bus, error) {
	b, err := bus.Dial(ctx, bus.Options{Broker: r.URL, ClientID: user + "-" + protocol.NewID()[:8], Username: user})
	if err != nil {
		return nil, nil, err
	}
	return room.New(b, r.Scheme, r.Name, r.log, nil), b, nil
}

// Err delivers the error of a device that failed while running.
func (r *Room) Err() <-chan error { return r.errc }

// Close stops every device, then the broker.
func (r *Room) Close() {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	if r.broker != nil {
		r.broker.Close()
	}
}

// errorsOnly passes on records at error level and above.
type errorsOnly struct{ slog.Handler }

func (h errorsOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError && h.Handler.Enabled(ctx, l)
}

func (h errorsOnly) WithAttrs(a []slog.Attr) slog.Handler { return errorsOnly{h.Handler.WithAttrs(a)} }
func (h errorsOnly) WithGroup(n string) slog.Handler      { return errorsOnly{h.Handler.WithGroup(n)} }
