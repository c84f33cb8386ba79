package servo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"periph.io/x/conn/v3/i2c/i2ctest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wantCounts is the OFF count for angle with the default pulses: 500µs at
// -90°, 2500µs at +90°, 20ms = 4096 counts. Written out here rather than
// taken from the package.
func wantCounts(angle float64) uint16 {
	us := 500 + (angle+90)/180*2000
	return uint16(math.Round(us / 20000 * 4096))
}

// degPerCount is how many degrees one count is with the default pulses.
const degPerCount = 180 / (2000.0 / 20000 * 4096)

var testJoints = []Joint{
	{Name: "pan", Channel: 0, Min: -60, Max: 60, Center: 0, MaxSpeed: 300},
	{Name: "tilt", Channel: 3, Min: -30, Max: 30, Center: 5, MaxSpeed: 500},
}

func newHead(t *testing.T, o Options) (*Head, *pcaFake, *i2ctest.Record) {
	t.Helper()
	f := newPCAFake()
	rec := &i2ctest.Record{Bus: f}
	h, err := New(rec, testJoints, o)
	if err != nil {
		t.Fatal(err)
	}
	return h, f, rec
}

func TestNewInitializesAndCenters(t *testing.T) {
	_, _, rec := newHead(t, Options{})
	ops := rec.Ops
	// pca9685's own init: all LEDs off, MODE2 totem pole, MODE1, wake,
	// prescale 122 for 50 Hz (25 MHz / 4096 / 50 - 1 ≈ 121.07, periph
	// rounds it up), restart.
	if len(ops) < 12 {
		t.Fatalf("%d transactions", len(ops))
	}
	if w := ops[0].W; fmt.Sprint(w) != fmt.Sprint([]byte{0xFA, 0, 0, 0, 0}) {
		t.Fatalf("first write %x, want ALL_LED off", w)
	}
	var prescale bool
	for _, op := range ops {
		if op.Addr != 0x40 {
			t.Fatalf("transaction at 0x%02x", op.Addr)
		}
		if len(op.W) == 2 && op.W[0] == 0xFE {
			prescale = op.W[1] == 122
		}
	}
	if !prescale {
		t.Fatal("no prescale of 122 (50 Hz)")
	}
	// Then one write per joint, at its center: LEDn_ON_L = 0x06 + 4n, ON
	// 0, OFF little endian.
	last := ops[len(ops)-2:]
	for i, j := range testJoints {
		c := wantCounts(j.Center)
		want := []byte{byte(0x06 + 4*j.Channel), 0, 0, byte(c), byte(c >> 8)}
		if fmt.Sprint(last[i].W) != fmt.Sprint(want) {
			t.Fatalf("joint %s: write %x, want %x", j.Name, last[i].W, want)
		}
	}
}

// walk is the angles a joint takes from 'from' to 'to' at step degrees a
// tick: from ± k×step until it arrives.
func walk(from, to, step float64) []float64 {
	var out []float64
	d := math.Abs(to - from)
	for k := 1; ; k++ {
		m := float64(k) * step
		if m >= d {
			return append(out, to)
		}
		out = append(out, from+math.Copysign(m, to-from))
	}
}

func TestNodWritesExactly(t *testing.T) {
	const tick = 5 * time.Millisecond
	var angles []float64
	h, _, rec := newHead(t, Options{Tick: tick, OnWrite: func(j string, a float64) {
		if j == "tilt" {
			angles = append(angles, a)
		}
	}})
	angles = nil
	before := len(rec.Ops)
	nod := DefaultPoses(testJoints)["nod"]
	start := time.Now()
	if err := h.Move(context.Background(), nod); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)

	// Independently: tilt centered at 5 in [-30, 30] nods by min(20, half
	// the way to each limit): down to 5-17.5 = -12.5, up to 5+12.5 = 17.5,
	// twice, then back to 5; 500°/s × 5ms = 2.5° a tick.
	targets := []float64{-12.5, 17.5, -12.5, 17.5, 5}
	var want [][]byte
	at, last, ticks := 5.0, wantCounts(5), 0
	for _, to := range targets {
		for _, a := range walk(at, to, 2.5) {
			ticks++
			if c := wantCounts(a); c != last {
				want = append(want, []byte{0x06 + 4*3, 0, 0, byte(c), byte(c >> 8)})
				last = c
			}
		}
		at = to
	}
	var got [][]byte
	for _, op := range rec.Ops[before:] {
		got = append(got, op.W)
	}
	if fmt.Sprintf("%x", got) != fmt.Sprintf("%x", want) {
		t.Fatalf("writes\n got %x\nwant %x", got, want)
	}
	if len(angles) != len(want) {
		t.Fatalf("OnWrite %d times for %d writes", len(angles), len(want))
	}
	if a, _ := h.Angle("tilt"); a != 5 {
		t.Fatalf("tilt ends at %v", a)
	}
	if a, _ := h.Angle("pan"); a != 0 {
		t.Fatalf("pan moved to %v", a)
	}
	if min := time.Duration(ticks) * tick; took < min {
		t.Fatalf("%d ticks in %v, less than %v", ticks, took, min)
	}
}

func TestMoveLimits(t *testing.T) {
	for _, c := range []struct {
		name    string
		pose    Pose
		wantErr string             // "" moves
		want    map[string]float64 // where the joints end
	}{
		{"far right", Pose{{Angles: map[string]float64{"pan": 1e9}}}, "", map[string]float64{"pan": 60, "tilt": 5}},
		{"far left", Pose{{Angles: map[string]float64{"pan": -1e9}}}, "", map[string]float64{"pan": -60, "tilt": 5}},
		{"both clamped", Pose{{Angles: map[string]float64{"pan": -1e308, "tilt": math.MaxFloat64}}}, "", map[string]float64{"pan": -60, "tilt": 30}},
		{"within", Pose{{Angles: map[string]float64{"pan": 12.25}}, {Angles: map[string]float64{"tilt": -7}}}, "", map[string]float64{"pan": 12.25, "tilt": -7}},
		{"empty step", Pose{{}, {Hold: time.Millisecond}}, "", map[string]float64{"pan": 0, "tilt": 5}},
		{"NaN", Pose{{Angles: map[string]float64{"pan": math.NaN()}}}, `joint "pan": angle NaN`, nil},
		{"+Inf", Pose{{Angles: map[string]float64{"tilt": math.Inf(1)}}}, `joint "tilt": angle +Inf`, nil},
		{"-Inf in a later step", Pose{{Angles: map[string]float64{"pan": 30}}, {Angles: map[string]float64{"pan": math.Inf(-1)}}}, `step 2: joint "pan"`, nil},
		{"unknown joint", Pose{{Angles: map[string]float64{"pan": 30}}, {Angles: map[string]float64{"neck": 1}}}, `no joint named "neck"`, nil},
		{"negative hold", Pose{{Angles: map[string]float64{"pan": 30}, Hold: -time.Second}}, "hold -1s", nil},
		{"endless hold", Pose{{Hold: time.Hour}}, "hold 1h0m0s", nil},
		{"too many steps", make(Pose, MaxSteps+1), "257 steps", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, f, _ := newHead(t, Options{Tick: 2 * time.Millisecond})
			before := len(f.ledWrites())
			err := h.Move(context.Background(), c.pose)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				if n := len(f.ledWrites()) - before; n != 0 {
					t.Fatalf("%d writes for a refused pose", n)
				}
				for _, j := range testJoints {
					if a, _ := h.Angle(j.Name); a != j.Center {
						t.Fatalf("%s moved to %v", j.Name, a)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				if a, ok := h.Angle(name); !ok || a != want {
					t.Fatalf("%s at %v, want %v", name, a, want)
				}
			}
			checkWrites(t, f.ledWrites(), 2*time.Millisecond)
		})
	}
}

// checkWrites holds every joint's limits from the recorded writes alone:
// counts within [Min, Max], consecutive writes of a channel at most
// MaxSpeed×Tick apart in angle (plus one count of rounding) and at least
// a Tick apart in time.
func checkWrites(t *testing.T, ws []ledWrite, tick time.Duration) {
	t.Helper()
	for _, j := range testJoints {
		step := j.MaxSpeed * tick.Seconds()
		lo, hi := wantCounts(j.Min), wantCounts(j.Max)
		var prev *ledWrite
		for i := range ws {
			w := &ws[i]
			if w.ch != j.Channel {
				continue
			}
			if w.on != 0 || w.off < lo || w.off > hi {
				t.Fatalf("%s: write on=%d off=%d outside [%d, %d]", j.Name, w.on, w.off, lo, hi)
			}
			if prev != nil {
				jump := math.Abs(float64(w.off)-float64(prev.off)) * degPerCount
				if jump > step+degPerCount+1e-9 {
					t.Fatalf("%s: jumped %.2f° (%d → %d counts) in one write; limit %.2f°", j.Name, jump, prev.off, w.off, step)
				}
				if gap := w.at.Sub(prev.at); gap < tick {
					t.Fatalf("%s: two writes %v apart, tick %v", j.Name, gap, tick)
				}
			}
			prev = w
		}
	}
}

func TestMoveCancelledStopsWhereItIs(t *testing.T) {
	h, f, _ := newHead(t, Options{Tick: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	err := h.Move(ctx, Pose{{Angles: map[string]float64{"pan": 60}}}) // 3° a tick: 20 ticks
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Move: %v", err)
	}
	a, _ := h.Angle("pan")
	if a <= 0 || a >= 60 {
		t.Fatalf("pan at %v after a cancelled move", a)
	}
	n := len(f.ledWrites())
	time.Sleep(30 * time.Millisecond)
	if len(f.ledWrites()) != n {
		t.Fatal("writes after Move returned")
	}
	if b, _ := h.Angle("pan"); b != a {
		t.Fatalf("pan went on from %v to %v", a, b)
	}
	// The next move starts from there.
	if err := h.Move(context.Background(), Pose{{Angles: map[string]float64{"pan": 0}}}); err != nil {
		t.Fatal(err)
	}
	checkWrites(t, f.ledWrites(), 10*time.Millisecond)
}

// A thousand Moves a second, each cancelling the one before, with hostile
// targets: the joints never exceed their limits or speed, in angle or in
// time.
func TestMoveStorm(t *testing.T) {
	var mu sync.Mutex
	last := map[string]float64{"pan": 0, "tilt": 5}
	var jumps []string
	h, f, _ := newHead(t, Options{OnWrite: func(j string, a float64) {
		mu.Lock()
		defer mu.Unlock()
		step := map[string]float64{"pan": 300, "tilt": 500}[j] * DefaultTick.Seconds()
		if d := math.Abs(a - last[j]); d > step+degPerCount {
			jumps = append(jumps, fmt.Sprintf("%s %v → %v", j, last[j], a))
		}
		last[j] = a
	}})
	hostile := []float64{1e9, -1e9, 45, -45, 0, 1e-300, 29.999, math.MaxFloat64, -math.MaxFloat64}
	r := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	var refused, moved, cancelled int
	var cmu sync.Mutex
	prev := func() {}
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		ctx, cancel := context.WithCancel(context.Background())
		prev()
		prev = cancel
		p := Pose{{Angles: map[string]float64{
			"pan":  hostile[r.IntN(len(hostile))],
			"tilt": hostile[r.IntN(len(hostile))],
		}}}
		if r.IntN(10) == 0 {
			p[0].Angles["pan"] = math.NaN()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := h.Move(ctx, p)
			cmu.Lock()
			defer cmu.Unlock()
			switch {
			case err == nil:
				moved++
			case errors.Is(err, context.Canceled):
				cancelled++
			case strings.Contains(err.Error(), "NaN"):
				refused++
			default:
				t.Errorf("Move: %v", err)
			}
		}()
		h.Angle("pan") // read while moving
		time.Sleep(time.Millisecond)
	}
	prev()
	wg.Wait()
	t.Logf("%d moves done, %d cancelled, %d refused; %d writes", moved, cancelled, refused, len(f.ledWrites()))
	if cancelled < 300 || refused == 0 {
		t.Fatalf("the storm was not one: %d cancelled, %d refused", cancelled, refused)
	}
	if len(jumps) > 0 {
		t.Fatalf("jumps seen by OnWrite: %v", jumps)
	}
	checkWrites(t, f.ledWrites(), DefaultTick)
	for _, j := range testJoints {
		a, _ := h.Angle(j.Name)
		if a < j.Min || a > j.Max {
			t.Fatalf("%s at %v", j.Name, a)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Joint{Name: "tilt", Channel: 1, Min: -20, Max: 30, Center: 0, MaxSpeed: 90}
	for _, c := range []struct {
		name  string
		edit  func(*Joint)
		field string // "" is valid
	}{
		{"ok", func(*Joint) {}, ""},
		{"explicit defaults", func(j *Joint) { j.MinPulse, j.MaxPulse, j.Range = 500*time.Microsecond, 2500*time.Microsecond, 180 }, ""},
		{"270° servo", func(j *Joint) { j.Range, j.Min, j.Max = 270, -135, 135 }, ""},
		{"at the speed limit", func(j *Joint) { j.MaxSpeed = 2000 }, ""},
		{"empty name", func(j *Joint) { j.Name = "" }, "name"},
		{"name with a space", func(j *Joint) { j.Name = "left ear" }, "name"},
		{"name from a digit", func(j *Joint) { j.Name = "1ear" }, "name"},
		{"long name", func(j *Joint) { j.Name = strings.Repeat("a", 33) }, "name"},
		{"channel -1", func(j *Joint) { j.Channel = -1 }, "channel"},
		{"channel 16", func(j *Joint) { j.Channel = 16 }, "channel"},
		{"min = max", func(j *Joint) { j.Min, j.Max, j.Center = 10, 10, 10 }, "max"},
		{"min > max", func(j *Joint) { j.Min, j.Max = 30, -20 }, "max"},
		{"min NaN", func(j *Joint) { j.Min = math.NaN() }, "min"},
		{"max Inf", func(j *Joint) { j.Max = math.Inf(1) }, "max"},
		{"beyond the pulse span", func(j *Joint) { j.Max = 91 }, "max"},
		{"below the pulse span", func(j *Joint) { j.Min = -91 }, "min"},
		{"center outside", func(j *Joint) { j.Center = 31 }, "center"},
		{"center NaN", func(j *Joint) { j.Center = math.NaN() }, "center"},
		{"speed 0", func(j *Joint) { j.MaxSpeed = 0 }, "max_speed"},
		{"speed negative", func(j *Joint) { j.MaxSpeed = -5 }, "max_speed"},
		{"speed too high", func(j *Joint) { j.MaxSpeed = 2001 }, "max_speed"},
		{"speed NaN", func(j *Joint) { j.MaxSpeed = math.NaN() }, "max_speed"},
		{"min pulse short", func(j *Joint) { j.MinPulse = 99 * time.Microsecond }, "min_pulse"},
		{"max pulse long", func(j *Joint) { j.MaxPulse = 3001 * time.Microsecond }, "max_pulse"},
		{"min pulse negative", func(j *Joint) { j.MinPulse = -time.Millisecond }, "min_pulse"},
		{"pulses reversed", func(j *Joint) { j.MinPulse, j.MaxPulse = 2500*time.Microsecond, 500*time.Microsecond }, "max_pulse"},
		{"pulses equal", func(j *Joint) { j.MinPulse, j.MaxPulse = time.Millisecond, time.Millisecond }, "max_pulse"},
		{"range negative", func(j *Joint) { j.Range = -180 }, "range"},
		{"range huge", func(j *Joint) { j.Range = 720 }, "range"},
		{"range NaN", func(j *Joint) { j.Range = math.NaN() }, "range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := ok
			c.edit(&j)
			err := j.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), ": "+c.field+": ") {
				t.Fatalf("error %v, want one naming %s", err, c.field)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	good := testJoints
	for _, c := range []struct {
		name    string
		joints  []Joint
		o       Options
		wantErr string
	}{
		{"no joints", nil, Options{}, "0 joints"},
		{"same name", []Joint{good[0], {Name: "pan", Channel: 5, Min: -1, Max: 1, MaxSpeed: 1}}, Options{}, `"pan": name: declared twice`},
		{"same channel", []Joint{good[0], {Name: "ear", Channel: 0, Min: -1, Max: 1, MaxSpeed: 1}}, Options{}, `channel: 0 is joint "pan"'s`},
		{"invalid joint", []Joint{{Name: "ear", Channel: 20, Min: -1, Max: 1, MaxSpeed: 1}}, Options{}, "channel"},
		{"tick too short", good, Options{Tick: time.Microsecond}, "tick 1µs"},
		{"tick too long", good, Options{Tick: time.Minute}, "tick 1m0s"},
		{"address", good, Options{Address: 0x80}, "address 0x80"},
		{"nobody at the address", good, Options{Address: 0x41}, "PCA9685 at 0x41"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(newPCAFake(), c.joints, c.o)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
		})
	}
	if _, err := New(nil, good, Options{}); err == nil {
		t.Fatal("New on a nil bus")
	}
}

func TestDefaultPoses(t *testing.T) {
	pan := Joint{Name: "pan", Channel: 0, Min: -60, Max: 60, MaxSpeed: 100}
	tilt := Joint{Name: "tilt", Channel: 1, Min: -10, Max: 40, Center: 5, MaxSpeed: 100}
	ear := Joint{Name: "ear", Channel: 2, Min: -10, Max: 10, MaxSpeed: 100}
	for _, c := range []struct {
		name   string
		joints []Joint
		want   []string
	}{
		{"pan and tilt", []Joint{pan, tilt}, []string{"center", "look_down", "look_left", "look_right", "look_up", "nod", "shake"}},
		{"pan only", []Joint{pan}, []string{"center", "look_left", "look_right", "shake"}},
		{"tilt and an ear", []Joint{tilt, ear}, []string{"center", "look_down", "look_up", "nod"}},
		{"an ear", []Joint{ear}, []string{"center"}},
		{"nothing", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			poses := DefaultPoses(c.joints)
			got := slices.Sorted(maps.Keys(poses))
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("poses %v, want %v", got, c.want)
			}
			byName := map[string]Joint{}
			for _, j := range c.joints {
				byName[j.Name] = j
			}
			for name, p := range poses {
				for _, st := range p {
					for jn, a := range st.Angles {
						j, ok := byName[jn]
						if !ok {
							t.Fatalf("%s names %q", name, jn)
						}
						if a < j.Min || a > j.Max {
							t.Fatalf("%s: %s to %v outside [%v, %v]", name, jn, a, j.Min, j.Max)
						}
					}
				}
			}
			if nod, ok := poses["nod"]; ok {
				// tilt 5 in [-10, 40]: down min(20, 7.5), up min(20, 17.5).
				want := []float64{-2.5, 22.5, -2.5, 22.5, 5}
				for i, st := range nod {
					if st.Angles["tilt"] != want[i] {
						t.Fatalf("nod step %d: %v, want %v", i+1, st.Angles, want[i])
					}
				}
			}
			if shake, ok := poses["shake"]; ok && (len(shake) != 5 || shake[4].Angles["pan"] != 0 || shake[0].Angles["pan"] != 30 || shake[1].Angles["pan"] != -30) {
				t.Fatalf("shake %v", shake)
			}
		})
	}
}
