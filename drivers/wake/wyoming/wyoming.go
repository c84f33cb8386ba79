// Package wyoming listens for wake words with a Wyoming wake-word server
// (wyoming-openwakeword, what Home Assistant users run): one connection
// per Listener, kept open; the client sends detect {names}, audio-start
// {rate, width, channels} and audio-chunk events for as long as it
// listens; the server answers detection {name, timestamp} whenever it
// hears one (and not-detected after an audio-stop, which a listener that
// never stops does not send). Every event goes through drivers/wyoming's
// strict reader and writer; event types the listener does not know are
// skipped (counted, logged at debug), as the reference clients skip them.
//
// # Wake-word names
//
// A server given a name it lacks says nothing: openWakeWord 2 renamed
// ok_nabu to okay_nabu, and its server then wakes on another word or on
// none. So the names are checked against the server's info (its wake
// programs' models), matched as wyoming-openwakeword matches them: case
// and underscores aside, with or without a version suffix (hey_jarvis
// is hey_jarvis_v0.1). The first Listen asks, on a connection of its own
// beside the stream, and logs a warning naming each name the server
// lacks (again at a later Listen while the server could not be asked);
// CheckNames (wake.NameChecker) makes `chorusd --doctor` fail on one.
//
// # Concurrency
//
// Each Listener owns two goroutines, a writer draining its bounded queue
// of chunks and a reader of the server's events, and the first one a
// third that checks the names; all end at Close or when the connection
// fails (the check within its own timeout).
package wyoming

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/drivers/stt"
	"github.com/chorus-robotics/chorus/drivers/wake"
	wy "github.com/chorus-robotics/chorus/drivers/wyoming"
)

// Defaults.
const (
	DefaultDialTimeout = wy.DefaultDialTimeout
	DefaultMaxQueue    = 50 // chunks (a second of 20 ms frames)
	writeTimeout       = 5 * time.Second
	describeTimeout    = 5 * time.Second // describe → info, for the names
	maxDetections      = 16
	maxEvents          = 1000 // events read while waiting for info
)

// Detector is a Wyoming wake-word server.
type Detector struct {
	Addr        string   // host:port (wyoming-openwakeword listens on 10400)
	Names       []string // the wake words to detect (checked: package doc); none: the server's
	DialTimeout time.Duration
	MaxQueue    int
	Log         *slog.Logger

	mu       sync.Mutex
	checked  bool // the server's names were read
	checking bool // a Listener is reading them
}

var (
	_ wake.Detector    = (*Detector)(nil)
	_ wake.NameChecker = (*Detector)(nil)
)

func (d *Detector) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d *Detector) dial(ctx context.Context) (net.Conn, error) {
	return wy.Dial(ctx, "wake wyoming", d.Addr, d.DialTimeout)
}

// Describe asks the server what it offers (describe → info) on a
// connection of its own, within 5 s or ctx.
func (d *Detector) Describe(ctx context.Context) (wy.Info, error) {
	conn, err := d.dial(ctx)
	if err != nil {
		return wy.Info{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(describeTimeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	info, err := wy.Describe(conn, maxEvents, nil)
	if err != nil {
		return wy.Info{}, fmt.Errorf("wake wyoming: %s: describe: %w", d.Addr, err)
	}
	return info, nil
}

// CheckNames implements wake.NameChecker: the wake words the server's
// info lists, and an error wrapping wake.ErrUnknownName naming each of
// Names it lacks.
func (d *Detector) CheckNames(ctx context.Context) ([]string, error) {
	info, err := d.Describe(ctx)
	if err != nil {
		return nil, err
	}
	var have []string
	for _, p := range info.Wake {
		for _, m := range p.Models {
			have = append(have, m.Name)
		}
	}
	var missing []string
	for _, n := range d.Names {
		if !HasWakeWord(have, n) {
			missing = append(missing, describeMissing(n, have))
		}
	}
	switch {
	case len(missing) == 0:
		return have, nil
	case len(have) == 0:
		return have, fmt.Errorf("wake wyoming: %s offers no wake words (its info lists no wake models), so none of %s: %w",
			d.Addr, strings.Join(quote(d.Names), ", "), wake.ErrUnknownName)
	}
	return have, fmt.Errorf("wake wyoming: %s has no wake word %s; it has %s: %w",
		d.Addr, strings.Join(missing, ", "), strings.Join(have, ", "), wake.ErrUnknownName)
}

// versioned is a model file's name with a version: hey_jarvis_v0.1.
var versioned = regexp.MustCompile(`^(.+)_(v[0-9.]+)$`)

// normalize is wyoming-openwakeword's key for a name: lower case,
// underscores as spaces.
func normalize(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(strings.ToLower(s), "_", " "))
}

// HasWakeWord says whether a server offering models would detect name,
// as wyoming-openwakeword matches a detect name to its model files: the
// same key (normalize), with or without the model's version suffix.
func HasWakeWord(models []string, name string) bool {
	key := normalize(name)
	for _, m := range models {
		if normalize(m) == key {
			return true
		}
		if v := versioned.FindStringSubmatch(m); v != nil && normalize(v[1]) == key {
			return true
		}
	}
	return false
}

// describeMissing is name, quoted, with the closest model the server has
// when one is near (ok_nabu: did you mean okay_nabu?).
func describeMissing(name string, have []string) string {
	best, bestD := "", 3
	for _, m := range have {
		k := m
		if v := versioned.FindStringSubmatch(m); v != nil {
			k = v[1]
		}
		if d := edits(normalize(name), normalize(k)); d < bestD {
			best, bestD = m, d
		}
	}
	if best == "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q (did you mean %q?)", name, best)
}

// edits is the Levenshtein distance of a and b (short names).
func edits(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func quote(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// startCheck says whether this Listen should check the names (once
// until they were read, one Listener at a time).
func (d *Detector) startCheck() bool {
	if len(d.Names) == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.checked || d.checking {
		return false
	}
	d.checking = true
	return true
}

// Name implements wake.Detector.
func (d *Detector) Name() string { return "wyoming" }

// Listen implements wake.Detector.
func (d *Detector) Listen(ctx context.Context, rate int) (wake.Listener, error) {
	if err := stt.CheckRate(rate); err != nil {
		return nil, fmt.Errorf("wake wyoming: %w", err)
	}
	conn, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	f := wy.Mono16(rate)
	if err := wy.Start(conn, "detect", map[string]any{"names": d.Names}, f, writeTimeout); err != nil {
		return nil, fmt.Errorf("wake wyoming: %s: %w", d.Addr, err)
	}
	n := d.MaxQueue
	if n <= 0 {
		n = DefaultMaxQueue
	}
	l := &Listener{d: d, conn: conn, format: f, queue: make(chan []int16, n), det: make(chan wake.Detection, maxDetections),
		stop: make(chan struct{})}
	l.wg.Add(2)
	go l.write()
	go l.read()
	if d.startCheck() {
		l.wg.Add(1)
		go l.checkNames()
	}
	return l, nil
}

// checkNames reads the server's wake words and warns of each name it
// lacks: a robot that would wake on the wrong word, or never, with no
// error.
func (l *Listener) checkNames() {
	defer l.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	d := l.d
	have, err := d.CheckNames(ctx)
	d.mu.Lock()
	d.checking = false
	d.checked = err == nil || errors.Is(err, wake.ErrUnknownName)
	d.mu.Unlock()
	switch {
	case errors.Is(err, wake.ErrUnknownName):
		d.log().Warn("wake words the server lacks: the robot will not wake on them (or wakes on another word); set hearing.wake.names to the server's names",
			"err", err, "server_has", strings.Join(have, ", "))
	case err != nil:
		d.log().Debug("wake wyoming: the server's wake words could not be read; asked again at the next listen", "addr", d.Addr, "err", err)
	default:
		d.log().Debug("wake wyoming: the server has every wake word named", "addr", d.Addr, "names", strings.Join(d.Names, ", "))
	}
}

// Listener is one open stream.
type Listener struct {
	d      *Detector
	conn   net.Conn
	format wy.Audio
	queue  chan []int16
	det    chan wake.Detection
	stop   chan struct{}
	wg     sync.WaitGroup

	once    sync.Once
	mu      sync.Mutex
	err     error
	dropped int
	skipped int // events of types the listener does not know
}

var _ wake.Listener = (*Listener)(nil)

func (l *Listener) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
	l.shut()
}

func (l *Listener) shut() {
	l.once.Do(func() {
		close(l.stop)
		l.conn.Close()
	})
}

// Err implements wake.Listener.
func (l *Listener) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Write implements wake.Listener.
func (l *Listener) Write(pcm []int16) error {
	select {
	case <-l.stop:
		if err := l.Err(); err != nil {
			return err
		}
		return errors.New("wake wyoming: listener closed")
	default:
	}
	select {
	case l.queue <- append([]int16(nil), pcm...):
	default:
		l.mu.Lock()
		l.dropped++
		l.mu.Unlock()
	}
	return nil
}

func (l *Listener) write() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case pcm := <-l.queue:
			if err := wy.WriteChunk(l.conn, l.format, stt.AppendLE16(nil, pcm), writeTimeout); err != nil {
				l.fail(fmt.Errorf("wake wyoming: %s: send audio: %w", l.d.Addr, err))
				return
			}
		}
	}
}

func (l *Listener) read() {
	defer l.wg.Done()
	defer close(l.det)
	r := bufio.NewReader(l.conn)
	for {
		ev, err := wy.ReadEvent(r)
		if err != nil {
			select {
			case <-l.stop: // closed on purpose
			default:
				l.fail(fmt.Errorf("wake wyoming: %s: %w", l.d.Addr, err))
			}
			return
		}
		switch ev.Type {
		case "detection":
			var d struct {
				Name *string `json:"name"`
			}
			if err := ev.Decode(&d); err != nil || d.Name == nil || *d.Name == "" {
				l.fail(fmt.Errorf("wake wyoming: %s: a detection without a name: %w", l.d.Addr, wy.ErrProtocol))
				return
			}
			select {
			case l.det <- wake.Detection{Name: *d.Name, At: time.Now()}:
			default: // nobody reads: the detection is stale by now anyway
			}
		case "not-detected":
		case "error":
			var e struct {
				Text string `json:"text"`
			}
			ev.Decode(&e)
			l.fail(fmt.Errorf("wake wyoming: %s says: %q", l.d.Addr, e.Text))
			return
		default: // a type this listener does not know: skipped, as the reference clients do
			l.mu.Lock()
			l.skipped++
			l.mu.Unlock()
			l.d.log().Debug("wake wyoming: skipped an event the listener does not know", "addr", l.d.Addr, "type", ev.Type)
		}
	}
}

// Skipped is how many events of types the listener does not know it has
// skipped.
func (l *Listener) Skipped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.skipped
}

// Detections implements wake.Listener.
func (l *Listener) Detections() <-chan wake.Detection { return l.det }

// Close implements wake.Listener.
func (l *Listener) Close() error {
	l.shut()
	l.wg.Wait()
	return nil
}
