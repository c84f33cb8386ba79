package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

var (
	ledPin    = &gpiotest.Pin{N: "TEST_LED", Num: 900}
	buttonPin = &gpiotest.Pin{N: "TEST_BUTTON", Num: 901, EdgesChan: make(chan gpio.Level, 4)}
	regOnce   sync.Once
)

// botYAML begins the config of bot, the one member and the floor of room
// lab (%s is the broker's URL); a test adds its drivers and the rest.
const botYAML = `version: 1
device: {id: bot}
room: {name: lab, members: [bot], floor: true, vote_timeout: 1s, pause: 10ms}
mqtt: {broker: "%s"}
companion: {id: bot, name: Bot, sample_lines: ["Hi."], language: en}
`

func registerPins(t *testing.T) {
	regOnce.Do(func() {
		if err := gpioreg.Register(ledPin); err != nil {
			t.Fatal(err)
		}
		if err := gpioreg.Register(buttonPin); err != nil {
			t.Fatal(err)
		}
	})
}

func load(t *testing.T, yaml string) *robot.Config {
	t.Helper()
	c, err := robot.Decode(strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cfgYAML(broker string, httpPort int, gpioLED string) string {
	return fmt.Sprintf(botYAML+`drivers:
  camera: {kind: testpattern, width: 160, height: 120, fps: 5}
  audio: {kind: null}
  tts: {kind: tone}
  gpio: {led: %s, button: TEST_BUTTON}
http: {listen: "127.0.0.1:%d"}
`, broker, gpioLED, httpPort)
}

func run(t *testing.T, c *robot.Config) (*Daemon, context.CancelFunc, chan error) {
	t.Helper()
	d, err := New(c, Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		errc <- err
		return d, cancel, errc
	case <-time.After(10 * time.Second):
		t.Fatal("not ready in 10 s")
	}
	return d, cancel, errc
}

// start is run for a test that stops the daemon when it is done: stop
// cancels it and fails the test if Run returned an error.
func start(t *testing.T, c *robot.Config) (d *Daemon, stop func(), errc chan error) {
	t.Helper()
	d, cancel, errc := run(t, c)
	return d, func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("run: %v", err)
		}
	}, errc
}

// userInLab dials the broker o names as "user" and joins room lab; said
// has what bot says there (up to n waiting; more are dropped). closeUser
// closes the connection.
func userInLab(t *testing.T, o bus.Options, n int) (user *room.Room, said <-chan protocol.Message, closeUser func()) {
	t.Helper()
	o.ClientID, o.Username = "user-"+protocol.NewID()[:8], "user"
	ub, err := bus.Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	user = room.New(ub, topic.New(""), "lab", nil, nil)
	c := make(chan protocol.Message, n)
	user.OnMessage(context.Background(), func(m protocol.Message) {
		if m.Params.From == "bot" {
			select {
			case c <- m:
			default:
			}
		}
	})
	return user, c, func() { ub.Close() }
}

// watchLab dials broker as "watch" and observes room lab; msgs has every
// message said there (16 may wait). closeWatch closes the connection.
func watchLab(t *testing.T, broker string) (obs *room.Room, msgs <-chan protocol.Message, closeWatch func()) {
	t.Helper()
	watch, err := bus.Dial(context.Background(), bus.Options{Broker: broker, ClientID: "watch", Username: "watch"})
	if err != nil {
		t.Fatal(err)
	}
	obs = room.New(watch, topic.New(""), "lab", nil, nil)
	c := make(chan protocol.Message, 16)
	if err := obs.OnMessage(context.Background(), func(m protocol.Message) { c <- m }); err != nil {
		watch.Close()
		t.Fatal(err)
	}
	return obs, c, func() { watch.Close() }
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDeviceWithPanelHealthAndMetrics(t *testing.T) {
	registerPins(t)
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lab": {"bot"}}})
	port := bustest.FreePort(t)
	d, cancel, errc := run(t, load(t, cfgYAML(br.URL(), port, "TEST_LED")))
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("run: %v", err)
		}
		ledPin.Lock()
		defer ledPin.Unlock()
		if ledPin.L != gpio.Low {
			t.Error("status LED left on after stop")
		}
	}()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	ctx, c2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer c2()
	if err := d.Alive(ctx, time.Second); err != nil {
		t.Fatalf("alive: %v", err)
	}
	ledPin.Lock()
	on := ledPin.L == gpio.High
	ledPin.Unlock()
	if !on {
		t.Fatal("status LED not on while listening")
	}

	// The human holds the floor with a long press: the floor grants nobody.
	ob, _ := bus.Dial(context.Background(), bus.Options{Broker: br.URL(), ClientID: "obs", Username: "user"})
	defer ob.Close()
	obs := room.New(ob, topic.New(""), "lab", nil, nil)
	holds := make(chan protocol.Hold, 4)
	grants := make(chan protocol.TurnGrant, 4)
	obs.OnHold(context.Background(), func(h protocol.Hold) { holds <- h })
	obs.OnGrant(context.Background(), func(g protocol.TurnGrant) { grants <- g })
	buttonPin.EdgesChan <- gpio.Low
	select {
	case h := <-holds:
		if !h.Held || h.From != "bot" {
			t.Fatalf("hold %+v", h)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a long press did not hold the floor")
	}
	time.Sleep(50 * time.Millisecond)
	obs.SendMessage(context.Background(), protocol.NewMessage("m1", "user", []string{"bot"}, "Bot, talk to me", ""))
	select {
	case g := <-grants:
		if g.Speaker != nil || g.Reason != protocol.ReasonHeld {
			t.Fatalf("grant while held %+v", g)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no grant")
	}
	buttonPin.EdgesChan <- gpio.High
	select {
	case h := <-holds:
		if h.Held {
			t.Fatalf("release %+v", h)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("release not published")
	}

	code, metrics := get(t, base+"/metrics")
	for _, want := range []string{"chorus_floor_grants_total{reason=\"held\"} 1", "chorus_floor_votes_total", "go_goroutines", "chorus_bad_input_total", `chorus_build_info{goversion="go`} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestMissingPinIsAClearStartupError(t *testing.T) {
	registerPins(t)
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lab": {"bot"}}})
	_, cancel, errc := run(t, load(t, cfgYAML(br.URL(), bustest.FreePort(t), "GPIO999")))
	defer cancel()
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), `drivers.gpio.led`) || !strings.Contains(err.Error(), `no pin named "GPIO999"`) {
		t.Fatalf("err = %v", err)
	}
}

// testLog is the daemon's log in the test's output when CHORUS_TEST_LOG=1.
func testLog(t *testing.T) *slog.Logger {
	if os.Getenv("CHORUS_TEST_LOG") != "1" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A device without a companion (a floor alone, a body alone) serves
// /healthz and /metrics on its HTTP listener: the MCP server, which is
// the companion's, is not built for it (it crashed chorusd at start once
// the server was in every build).
func TestADeviceWithoutACompanionServesHTTP(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{})
	port := bustest.FreePort(t)
	_, stop, _ := start(t, load(t, fmt.Sprintf(`version: 1
device: {id: floorbox}
room: {name: lab, members: [bot], floor: true}
mqtt: {broker: %q}
http: {listen: "127.0.0.1:%d"}
`, br.URL(), port)))
	defer stop()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never answered 200: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "chorus_floor_active") {
		t.Fatalf("/metrics: %d %.200s", code, body)
	}
	if code, _ := get(t, base+"/mcp"); code != 404 {
		t.Fatalf("/mcp on a device without a companion: %d, want 404", code)
	}
}
