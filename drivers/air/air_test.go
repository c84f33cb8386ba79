package air

import (
	"context"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/audio"
	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// serve runs a server on a loopback port until the test ends.
func serve(t *testing.T, s *Server) (addr string, stop func()) {
	t.Helper()
	if s.Listen == "" {
		s.Listen = "127.0.0.1:0"
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	if s.Addr() == "" {
		cancel()
		t.Fatalf("server did not listen: %v", <-done)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return s.Addr(), stop
}

// recording is what a mic heard, frame by frame, with when each came.
type recording struct {
	samples []int16
	at      []time.Time // arrival of the frame holding sample i*320
}

// listen records what mic id hears for d.
func listen(ctx context.Context, t *testing.T, addr, id string, d time.Duration) <-chan recording {
	t.Helper()
	src := &Source{Addr: addr, ID: id}
	if err := src.Open(ctx); err != nil {
		t.Fatal(err)
	}
	out := make(chan recording, 1)
	go func() {
		defer src.Close()
		var r recording
		buf := make([]int16, 320)
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			n, err := src.Read(ctx, buf)
			if err != nil {
				t.Errorf("mic %s: %v", id, err)
				break
			}
			if len(r.samples)%320 == 0 {
				r.at = append(r.at, time.Now())
			}
			r.samples = append(r.samples, buf[:n]...)
		}
		out <- r
	}()
	return out
}

func tone(rate int, d time.Duration, hz, amp float64) []int16 {
	out := make([]int16, int(int64(rate)*int64(d)/int64(time.Second)))
	for i := range out {
		out[i] = int16(amp * math.Cos(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return out
}

func rms(x []int16) float64 {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(1, len(x))))
}

func onset(x []int16, level int16) int {
	for i, v := range x {
		if v > level || v < -level {
			return i
		}
	}
	return -1
}

// A person speaks while kyoko plays a tone: kyoko's mic hears the tone at
// gain 1, hana's attenuated and delayed; both hear the person at gain 1.
func TestMix(t *testing.T) {
	speech := mictest.Speech(t, "en", "Hello robots, can you all hear me in this room?")
	addr, _ := serve(t, &Server{})
	ctx := t.Context()
	recK := listen(ctx, t, addr, "kyoko", 4*time.Second)
	recH := listen(ctx, t, addr, "hana", 4*time.Second)
	time.Sleep(100 * time.Millisecond)

	out := &Output{Addr: addr, ID: "kyoko"}
	defer out.Close()
	st, err := out.Begin(ctx, "tone")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, audio.PCM{Rate: 16000, Samples: tone(16000, time.Second, 1000, 8000)}); err != nil {
		t.Fatal(err)
	}
	said := make(chan error, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		said <- Say(ctx, addr, speech, 16000)
	}()
	if _, err := st.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-said; err != nil {
		t.Fatal(err)
	}
	k, h := <-recK, <-recH

	ok, oh := onset(k.samples, 100), onset(h.samples, 100)
	if ok < 0 || oh < 0 {
		t.Fatalf("no tone heard: onsets %d %d", ok, oh)
	}
	// The tone alone, before the person speaks.
	win := 6400
	tk, th := rms(k.samples[ok:ok+win]), rms(h.samples[oh:oh+win])
	if want := 8000 / math.Sqrt2; math.Abs(tk-want) > 0.05*want {
		t.Errorf("kyoko hears its own tone at RMS %.0f, want %.0f (gain 1)", tk, want)
	}
	if r := th / tk; math.Abs(r-DefaultAttenuation) > 0.05 {
		t.Errorf("hana hears kyoko's tone at %.3f of kyoko's level, want %.2f", r, DefaultAttenuation)
	}
	// The delay: the frames of one tick arrive together; the offset in
	// the frame says the rest.
	frames := math.Round(float64(h.at[oh/320].Sub(k.at[ok/320])) / float64(FrameDuration))
	delay := time.Duration(frames)*FrameDuration + time.Duration(oh%320-ok%320)*time.Second/16000
	if d := delay - DefaultDelay; d < -FrameDuration || d > FrameDuration {
		t.Errorf("hana hears kyoko's tone %v late, want %v within a frame", delay, DefaultDelay)
	}
	if ok%320 != 0 || oh%320 != 160 {
		t.Logf("onsets at %d and %d in their frames", ok%320, oh%320)
	}
	// After the tone, both hear the person alike, at gain 1.
	after := ok + 16000 + 640
	sk, sh := k.samples[after:], h.samples[oh-ok+after:]
	n := min(len(sk), len(sh))
	speechRMS := rms(speech)
	if rk, rh := rms(sk[:n]), rms(sh[:n]); rk < 0.3*speechRMS || math.Abs(rk-rh) > 0.1*rk {
		t.Errorf("after the tone kyoko hears RMS %.0f, hana %.0f; the speech is %.0f", rk, rh, speechRMS)
	}
	var sum float64
	for _, x := range [][]int16{k.samples} {
		for _, v := range x {
			sum += float64(v) * float64(v)
		}
	}
	var want float64
	for _, v := range speech {
		want += float64(v) * float64(v)
	}
	want += 16000 * 8000 * 8000 / 2
	if r := sum / want; r < 0.85 || r > 1.15 {
		t.Errorf("kyoko's mic heard %.2f of the energy of the tone and the speech, want ≈1", r)
	}
}

// Drain returns once the audio has played, not before its duration less
// a frame; Abort stops what a mic hears within two frames.
func TestDrainAndAbort(t *testing.T) {
	addr, _ := serve(t, &Server{})
	ctx := t.Context()
	out := &Output{Addr: addr, ID: "kyoko"}
	defer out.Close()

	for _, rate := range []int{16000, 22050} {
		st, err := out.Begin(ctx, "tone")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		pcm := audio.PCM{Rate: rate, Samples: tone(rate, 700*time.Millisecond, 440, 5000)}
		if err := st.Write(ctx, pcm); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 50*time.Millisecond {
			t.Errorf("the first Write took %v: the start is not real", took)
		}
		d, err := st.Drain(ctx)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if d < 690*time.Millisecond || d > 710*time.Millisecond {
			t.Errorf("%d Hz: Drain says %v played, want 700ms", rate, d)
		}
		if took < 700*time.Millisecond-FrameDuration || took > 700*time.Millisecond+300*time.Millisecond {
			t.Errorf("%d Hz: Drain returned after %v, want 700ms", rate, took)
		}
	}

	rec := listen(ctx, t, addr, "kyoko", 1500*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	st, err := out.Begin(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, audio.PCM{Rate: 16000, Samples: tone(16000, 5*time.Second, 440, 5000)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	aborted := time.Now()
	st.Abort()
	if took := time.Since(aborted); took > 50*time.Millisecond {
		t.Errorf("Abort took %v", took)
	}
	r := <-rec
	last := -1
	for i, v := range r.samples {
		if v > 100 || v < -100 {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("the mic heard no tone")
	}
	if at := r.at[last/320]; at.Sub(aborted) > 2*FrameDuration+10*time.Millisecond {
		t.Errorf("the tone went on %v after Abort", at.Sub(aborted))
	}
	// The output plays again after an abort.
	st, err = out.Begin(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	st.Write(ctx, audio.PCM{Rate: 16000, Samples: tone(16000, 100*time.Millisecond, 440, 5000)})
	if _, err := st.Drain(ctx); err != nil {
		t.Errorf("drain after an abort: %v", err)
	}
}

// A mic that never reads does not slow the others, and its drops are
// counted.
func TestMicThatNeverReads(t *testing.T) {
	srv := &Server{}
	addr, _ := serve(t, srv)
	ctx := t.Context()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	c.Write(encodeLine(Hello{Role: RoleMic, ID: "deaf", Rate: 16000}))

	rec := <-listen(ctx, t, addr, "hana", 3*time.Second)
	late := 0
	for i := 1; i < len(rec.at); i++ {
		if gap := rec.at[i].Sub(rec.at[i-1]); gap > 3*FrameDuration {
			late++
		}
	}
	if frames := len(rec.at); frames < 140 || late > 2 {
		t.Errorf("hana got %d frames in 3 s, %d late", frames, late)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Dropped("deaf") == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if srv.Dropped("deaf") == 0 {
		t.Error("no frame dropped for the mic that never reads")
	}
	if srv.Dropped("hana") != 0 {
		t.Errorf("%d frames dropped for hana", srv.Dropped("hana"))
	}
}

// A bad hello is refused with a reason; a frame over the bound closes
// that client only.
func TestRefusals(t *testing.T) {
	addr, _ := serve(t, &Server{ValidID: protocol.ValidIdentity, Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	ctx := t.Context()
	for _, tc := range []struct{ hello, want string }{
		{`{"role":"speaker","id":"kyoko","rate":8000}`, "rate must be the air's 16000 Hz"},
		{`{"role":"dj","id":"kyoko","rate":16000}`, "role must be"},
		{`{"role":"mic","id":"kyo ko","rate":16000}`, "id must not contain spaces"},
		{`{"role":"mic","id":"kyoko","rate":16000,"x":1}`, "unknown field"},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(tc.hello + "\n"))
		b := make([]byte, 512)
		n, _ := c.Read(b)
		r, err := DecodeReply([]byte(strings.TrimSpace(string(b[:n]))))
		if err != nil || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s: got %q (%v), want an error with %q", tc.hello, b[:n], err, tc.want)
		}
		c.Close()
	}
	if err := (&Source{Addr: addr, ID: "kyoko", SampleRate: 8000}).Open(ctx); err == nil || !strings.Contains(err.Error(), "refused: hello: rate must be") {
		t.Errorf("a mic at the wrong rate: %v", err)
	}

	rec := listen(ctx, t, addr, "hana", time.Second)
	c, br, err := dial(ctx, addr, Hello{Role: RoleSpeaker, ID: "rogue", Rate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(AppendFrame(nil, FramePCM, make([]byte, MaxPayload(16000)+2))); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := ReadFrame(br, 0)
	if err != nil || f.Type != FrameError || !strings.Contains(string(f.Payload), "more than 32000") {
		t.Errorf("oversized frame: got %q %q, %v", f.Type, f.Payload, err)
	}
	if _, err := ReadFrame(br, 0); err == nil {
		t.Error("the connection stays open after an oversized frame")
	}
	if r := <-rec; len(r.at) < 40 {
		t.Errorf("hana got %d frames in 1 s while another client was closed", len(r.at))
	}
}

// When the server stops, Drain and Read fail with errors naming it.
func TestServerStops(t *testing.T) {
	addr, stop := serve(t, &Server{})
	ctx := t.Context()
	out := &Output{Addr: addr, ID: "kyoko"}
	defer out.Close()
	st, err := out.Begin(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	st.Write(ctx, audio.PCM{Rate: 16000, Samples: tone(16000, 3*time.Second, 440, 5000)})
	src := &Source{Addr: addr, ID: "kyoko"}
	if err := src.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	time.AfterFunc(300*time.Millisecond, stop)
	start := time.Now()
	if _, err := st.Drain(ctx); err == nil || !strings.Contains(err.Error(), "lost the air server") || !strings.Contains(err.Error(), addr) {
		t.Errorf("Drain: %v", err)
	}
	buf := make([]int16, 320)
	var rerr error
	for rerr == nil {
		_, rerr = src.Read(ctx, buf)
	}
	if !strings.Contains(rerr.Error(), "lost the air server") || !strings.Contains(rerr.Error(), addr) {
		t.Errorf("Read: %v", rerr)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("failing took %v", took)
	}
	if _, err := out.Begin(ctx, "next"); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Begin without a server: %v", err)
	}
}

// The recording is the room as one listener hears it: the person's
// sentence and a robot's tone, each at its length, written when the air
// stops.
func TestRecord(t *testing.T) {
	file := filepath.Join(t.TempDir(), "room.wav")
	s := &Server{Record: file}
	addr, stop := serve(t, s)
	speech := mictest.Speech(t, "", "hello robots")
	if err := Say(t.Context(), addr, speech, 16000); err != nil {
		t.Fatal(err)
	}
	stop()
	p := mictest.ReadWAV(t, file)
	loud := 0
	for _, v := range p.Samples {
		if v > 1000 || v < -1000 {
			loud++
		}
	}
	if p.Rate != 16000 || p.Duration() < time.Duration(len(speech))*time.Second/16000 || loud < len(speech)/10 {
		t.Fatalf("recorded %v at %d Hz, %d loud samples; the sentence has %d samples", p.Duration(), p.Rate, loud, len(speech))
	}
}

// A microphone closed at once after its Read was cancelled (as the
// capture loop stops: Read returns, then Close) is not touched by the
// cancellation's callback, which may still run: a bench run panicked on
// the callback using the connection Close had cleared.
func TestSourceCloseRightAfterACancelledRead(t *testing.T) {
	addr, stop := serve(t, &Server{})
	defer stop()
	for range 300 {
		s := &Source{Addr: addr, ID: "ann"}
		if err := s.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		go func() { time.Sleep(100 * time.Microsecond); cancel() }()
		buf := make([]int16, 1<<20) // more than the air sends at once: Read waits
		for ctx.Err() == nil {
			s.Read(ctx, buf)
		}
		s.Close()
	}
}
