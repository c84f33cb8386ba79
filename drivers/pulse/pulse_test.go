package pulse

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pin is a gpiotest.Pin that keeps every level set and when, and can
// refuse the first few.
type pin struct {
	*gpiotest.Pin
	mu     sync.Mutex
	levels []gpio.Level
	at     []time.Time
	refuse int
}

func newPin(l gpio.Level) *pin { return &pin{Pin: &gpiotest.Pin{N: "GPIO17", Num: 17, L: l}} }

func (p *pin) Out(l gpio.Level) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse > 0 {
		p.refuse--
		return errors.New("pin is not an output")
	}
	p.levels = append(p.levels, l)
	p.at = append(p.at, time.Now())
	return p.Pin.Out(l)
}

func TestPulse(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		d        time.Duration
		active   gpio.Level
		refuse   int
		levels   []gpio.Level
		min, max time.Duration // between the two levels
		wantErr  string
	}{
		{"high", nil, 50 * time.Millisecond, gpio.High, 0, []gpio.Level{gpio.High, gpio.Low}, 50 * time.Millisecond, time.Second, ""},
		{"active low", nil, 30 * time.Millisecond, gpio.Low, 0, []gpio.Level{gpio.Low, gpio.High}, 30 * time.Millisecond, time.Second, ""},
		{"zero", nil, 0, gpio.High, 0, []gpio.Level{gpio.High, gpio.Low}, 0, time.Second, ""},
		{"cut short", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 40*time.Millisecond)
		}, 5 * time.Second, gpio.High, 0, []gpio.Level{gpio.High, gpio.Low}, 40 * time.Millisecond, time.Second, "GPIO17 cut short: context deadline exceeded"},
		{"cancelled before", func() (context.Context, context.CancelFunc) { return cancelled, func() {} }, time.Second, gpio.High, 0, nil, 0, 0, "context canceled"},
		{"too long", nil, 11 * time.Second, gpio.High, 0, nil, 0, 0, "GPIO17 for 11s"},
		{"negative", nil, -time.Millisecond, gpio.High, 0, nil, 0, 0, "GPIO17 for -1ms"},
		{"refuses active, restored", nil, time.Second, gpio.High, 1, []gpio.Level{gpio.Low}, 0, 0, "set GPIO17 High: pin is not an output"},
		{"refuses both", nil, time.Second, gpio.High, 2, nil, 0, 0, "set GPIO17 back Low"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPin(!c.active)
			p.refuse = c.refuse
			ctx, cancel := context.Background(), func() {}
			if c.ctx != nil {
				ctx, cancel = c.ctx()
			}
			defer cancel()
			err := Pulse(ctx, p, c.d, c.active)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
			if len(p.levels) != len(c.levels) {
				t.Fatalf("levels %v, want %v", p.levels, c.levels)
			}
			for i := range c.levels {
				if p.levels[i] != c.levels[i] {
					t.Fatalf("levels %v, want %v", p.levels, c.levels)
				}
			}
			if p.Read() != !c.active && c.refuse < 2 {
				t.Fatalf("pin left %v", p.Read())
			}
			if len(p.at) == 2 {
				if held := p.at[1].Sub(p.at[0]); held < c.min || held > c.max {
					t.Fatalf("held %v, want %v..%v", held, c.min, c.max)
				}
			}
		})
	}
	if err := Pulse(context.Background(), nil, time.Millisecond, gpio.High); err == nil {
		t.Fatal("a pulse on no pin")
	}
}
