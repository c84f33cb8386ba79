//go:build bench

// chorus bench: every benchmark, with the fake servers they measure
// against (a paced model server, a Wyoming recogniser, an I²C bus), and
// chorus fakemodel, the paced model server on its own. Built only with
// the tag bench, so the chorus a user installs links no test fake (issue
// 30, item 5): go run -tags bench ./cmd/chorus bench ….

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/cmd/chorus/internal/bench"
	"github.com/chorus-robotics/chorus/drivers/tts"
	"github.com/chorus-robotics/chorus/drivers/tts/espeak"

	"github.com/chorus-robotics/chorus/runtime/broker"
)

func init() {
	commands["bench"] = command{"measure: bench bus | floor | realtime | vision | speak | turngap | gap | voice | actions | startup | stream | eager | memory | building (see BENCHMARKS.md)", runBench}
	commands["fakemodel"] = command{"serve a fake OpenAI-compatible model at a model's pace, to try a room with LLM brains without an API key", runFakeModel}
}

func runFakeModel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fakemodel", stderr)
	listen := fs.String("listen", "127.0.0.1:8088", "loopback address to serve on")
	ttft := fs.Duration("ttft", 400*time.Millisecond, "time to the first token of every answer")
	tps := fs.Float64("tps", 60, "tokens per second after the first (a token is about four characters)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return bench.ServeModel(ctx, stdout, *listen, *ttft, *tps)
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || !strings.Contains(" bus floor realtime vision speak turngap gap voice actions startup stream eager memory building ", " "+args[0]+" ") {
		return errors.New("usage: chorus bench bus|floor|realtime|vision|speak|turngap|gap|voice|actions|startup|stream|eager|memory|building [-broker URL] [flags]")
	}
	what := args[0]
	fs := newFlags("bench "+what, stderr)
	url := fs.String("broker", "", "broker URL (default: start the embedded broker on a free loopback port)")
	rounds := fs.Int("rounds", 1000, "measurements per case")
	ns := fs.String("n", "2,5,10,50", "floor: companion counts; stream: messages per measurement and mode (default 10); eager: person turns per path (default 10); memory: messages per mode, on and off (default 20)")
	chorusd := fs.String("chorusd", "", "startup: the chorusd binary (default: beside this program, else on PATH)")
	devCfg := fs.String("config", "firmware-configs/demo/kyoko.yaml", "startup: the device config (a file)")
	engines := fs.String("tts", "tone,espeak-ng,open_jtalk", "gap: the TTS engines (tone is paced null audio of beeps)")
	latencies := fs.String("latency", "300ms,1s", "gap: the model server's time per call")
	pairs := fs.Int("pairs", 3, "realtime: runs with and without the client that never reads, alternating")
	ttft := fs.Duration("ttft", 400*time.Millisecond, "stream, eager, memory: the model's time to the first token")
	tps := fs.Float64("tps", 60, "stream, eager, memory: the model's tokens per second")
	facts := fs.Int("facts", 2000, "memory: facts in each store (over 20 people)")
	turns := fs.Int("turns", 10000, "memory: user turns written for the disk figure; building: person turns per room and step (default 4)")
	messages := fs.Int("messages", 1000, "memory: messages whose prompt is rendered and whose recall is timed")
	modes := fs.String("stream", "both", "stream: brain.stream to measure: both (alternating), on or off")
	say := fs.String("say", "", "eager: what the person says (default: "+strconv.Quote(bench.VoiceQuestion)+")")
	rooms := fs.String("rooms", "1,5,20", "building: room counts, one step each")
	companions := fs.Int("companions", 5, "building: companions in each room")
	duration := fs.Duration("duration", 0, "building: person turns for this long per room and step, instead of -turns")
	brokers := fs.String("brokers", "", "building: the cluster's other nodes, comma-separated (mqtt.brokers)")
	spread := fs.Bool("spread", false, "building: give the rooms the endpoints in turn (room 1 -broker, room 2 the first of -brokers, …), each with the others as its fallbacks")
	qos := fs.Int("qos", 1, "building: mqtt.qos of every connection, 0 or 1 (0 on NATS)")
	pids := fs.String("broker-pids", "", "building: the broker's process ids, comma-separated, for its CPU per room")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if what == "stream" {
		o := bench.StreamOptions{TTFT: *ttft, TPS: *tps, N: 10, Modes: map[string][]bool{"both": {true, false}, "on": {true}, "off": {false}}[*modes]}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "n" {
				o.N, _ = strconv.Atoi(*ns)
			}
		})
		switch {
		case o.Modes == nil:
			return fmt.Errorf("-stream: want both, on or off, got %q", *modes)
		case o.N < 1 || o.N > 1000:
			return fmt.Errorf("-n: want a message count from 1 to 1000, got %q", *ns)
		}
		if err := bench.CheckPace(*ttft, *tps); err != nil {
			return err
		}
		return bench.Stream(ctx, stdout, o)
	}
	if what == "eager" {
		o := bench.EagerOptions{TTFT: *ttft, TPS: *tps, N: 10, Say: *say}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "n" {
				o.N, _ = strconv.Atoi(*ns)
			}
		})
		if o.N < 1 || o.N > 1000 {
			return fmt.Errorf("-n: want a person-turn count from 1 to 1000, got %q", *ns)
		}
		if err := bench.CheckPace(*ttft, *tps); err != nil {
			return err
		}
		return bench.Eager(ctx, stdout, o)
	}
	if what == "memory" {
		o := bench.MemoryOptions{N: 20, Messages: *messages, Facts: *facts, Turns: *turns, TTFT: *ttft, TPS: *tps}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "n" {
				o.N, _ = strconv.Atoi(*ns)
			}
		})
		switch {
		case o.N < 1 || o.N > 1000:
			return fmt.Errorf("-n: want a message count from 1 to 1000, got %q", *ns)
		case o.Messages < 1 || o.Messages > 1000000:
			return fmt.Errorf("-messages: want 1 to 1000000, got %d", o.Messages)
		case o.Turns < 1 || o.Turns > 10000000:
			return fmt.Errorf("-turns: want 1 to 10000000, got %d", o.Turns)
		}
		if err := bench.CheckPace(*ttft, *tps); err != nil {
			return err
		}
		return bench.Memory(ctx, stdout, o)
	}
	if what == "building" {
		o := bench.BuildingOptions{Broker: *url, QoS: *qos, Spread: *spread, Companions: *companions, Turns: 4, Duration: *duration}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "turns" {
				o.Turns = *turns
			}
		})
		var err error
		if o.Rooms, err = ints(*rooms); err != nil {
			return fmt.Errorf("-rooms: %w", err)
		}
		if o.BrokerPIDs, err = ints(*pids); err != nil {
			return fmt.Errorf("-broker-pids: %w", err)
		}
		if *brokers != "" {
			o.Brokers = strings.Split(*brokers, ",")
		}
		if o.Broker == "" {
			br, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", AllowAnonymous: true, OpenACL: true})
			if err != nil {
				return err
			}
			defer br.Close()
			o.Broker = br.URL()
		}
		_, err = bench.Building(ctx, stdout, o)
		return err
	}
	if what == "gap" {
		return benchGap(ctx, stdout, min(*rounds, 30), *engines, *latencies)
	}
	if what == "voice" {
		return benchVoice(ctx, stdout, min(*rounds, 20))
	}
	if what == "actions" {
		return benchActions(ctx, stdout, min(*rounds, 50), min(*rounds, 1000))
	}
	if what == "startup" {
		bin := *chorusd
		if bin == "" {
			var err error
			if bin, err = findChorusd(); err != nil {
				return fmt.Errorf("%w: CGO_ENABLED=0 go build -o chorusd ./cmd/chorusd, then pass -chorusd", err)
			}
		}
		n := min(*rounds, 10)
		var readies []time.Duration
		var mems []bench.Resident
		for range n {
			r, m, err := bench.Startup(ctx, bin, *devCfg, 2*time.Second)
			if err != nil {
				return err
			}
			readies = append(readies, r)
			mems = append(mems, m)
		}
		sort.Slice(mems, func(i, j int) bool { return mems[i].RSS < mems[j].RSS })
		med := mems[len(mems)/2]
		fmt.Fprintf(stdout, "chorusd %s with %s, %d cold starts\n  start → READY: %v\n  idle RSS after 2 s: median %d kB (anonymous %d kB, file-backed %d kB), max %d kB\n",
			bin, *devCfg, n, bench.Summarize(readies), med.RSS, med.Anon, med.File, mems[len(mems)-1].RSS)
		return nil
	}
	name := *url
	if *url == "" {
		br, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", AllowAnonymous: true, Scheme: bench.Scheme()})
		if err != nil {
			return err
		}
		defer br.Close()
		*url, name = br.URL(), "embedded"
	}
	switch what {
	case "bus":
		fmt.Fprintf(stdout, "bus round trip, 64-byte payload, %d messages, broker %s\n", *rounds, name)
		for _, qos := range []byte{0, 1} {
			raw, err := bench.RawRoundTrip(ctx, *url, qos, *rounds)
			if err != nil {
				return err
			}
			b, err := bench.BusRoundTrip(ctx, *url, qos, *rounds)
			if err != nil {
				return err
			}
			rs, bs := bench.Summarize(raw), bench.Summarize(b)
			fmt.Fprintf(stdout, "  qos%d raw paho: %v\n  qos%d bus:      %v  (p50 %.2f×, p99 %.2f× raw)\n", qos, rs, qos, bs,
				float64(bs.P50)/float64(rs.P50), float64(bs.P99)/float64(rs.P99))
		}
	case "realtime":
		return benchRealtime(ctx, stdout, *url, name, *rounds, max(1, *pairs))
	case "vision":
		ds, err := bench.VisionRoundTrip(ctx, *url, 640, 480, *rounds)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "vision query 640x480, published → result at the companion, broker %s\n  %v\n", name, bench.Summarize(ds))
	case "speak":
		if !tts.Available("espeak-ng") {
			return errors.New("espeak-ng is not installed (apt-get install espeak-ng)")
		}
		n := min(*rounds, 200)
		fmt.Fprintf(stdout, "speak, time to first audio, three sentences with espeak-ng, %d runs\n", n)
		for _, whole := range []bool{false, true} {
			ds, err := bench.FirstAudio(ctx, &espeak.Engine{}, bench.ThreeSentences, whole, n)
			if err != nil {
				return err
			}
			label := "sentence by sentence"
			if whole {
				label = "whole text         "
			}
			fmt.Fprintf(stdout, "  %s %v\n", label, bench.Summarize(ds))
		}
	case "turngap":
		n := min(*rounds, 30)
		fmt.Fprintf(stdout, "turn gap: user message → granted companion's message, 3 companions, model server 300 ms/call, %d rounds, embedded broker\n", n)
		var p50 [2]float64
		for i, draft := range []bool{true, false} {
			ds, err := bench.TurnGap(ctx, 300*time.Millisecond, draft, n)
			if err != nil {
				return err
			}
			st := bench.Summarize(ds)
			p50[i] = float64(st.P50)
			label := map[bool]string{true: "one call (draft)   ", false: "two calls (no draft)"}[draft]
			fmt.Fprintf(stdout, "  %s %v\n", label, st)
		}
		fmt.Fprintf(stdout, "  one-call / two-call at p50: %.2f\n", p50[0]/p50[1])
	case "floor":
		fmt.Fprintf(stdout, "floor: message published → grant at every companion (instant brain), %d rounds, broker %s\n", *rounds, name)
		for _, f := range strings.Split(*ns, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 500 {
				return fmt.Errorf("-n: bad companion count %q", f)
			}
			ds, err := bench.FloorLatency(ctx, *url, n, *rounds)
			if err != nil {
				return fmt.Errorf("n=%d: %w", n, err)
			}
			fmt.Fprintf(stdout, "  N=%-3d %v\n", n, bench.Summarize(ds))
		}
	}
	return nil
}

// ints parses a comma-separated list of numbers ("" is none).
func ints(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// benchGap measures the silences between robots, overlapped turns against
// the sequential order in the same run (issue 13).
func benchGap(ctx context.Context, stdout io.Writer, rounds int, engines, latencies string) error {
	fmt.Fprintf(stdout, "silence between robots: one robot's audio end → the next one's start, 3 companions, paced audio, pause %v, %d turns per room\n", bench.Pause, rounds)
	for _, e := range strings.Split(engines, ",") {
		e = strings.TrimSpace(e)
		if e != "tone" && !tts.Available(e) {
			fmt.Fprintf(stdout, "  %s: not installed, skipped\n", e)
			continue
		}
		for _, l := range strings.Split(latencies, ",") {
			lat, err := time.ParseDuration(strings.TrimSpace(l))
			if err != nil {
				return fmt.Errorf("-latency: %w", err)
			}
			for _, order := range []string{"overlapped", "sequential"} {
				res, err := bench.Gap(ctx, bench.GapCase{Latency: lat, TTS: e, Turns: order, Rounds: rounds})
				if err != nil {
					return fmt.Errorf("%s, %v, %s: %w", e, lat, order, err)
				}
				st := bench.Summarize(res.Gaps)
				fmt.Fprintf(stdout, "  %-10s model %-6v %-10s p50 %-8v p99 %-8v max %-8v overlaps %d (utterances: median %v)\n",
					e, lat, order, st.P50.Round(time.Millisecond), st.P99.Round(time.Millisecond), st.Max.Round(time.Millisecond),
					res.Overlaps, res.Spoken.Round(10*time.Millisecond))
			}
		}
	}
	return nil
}

// benchVoice measures voice to voice (issue 21): the person's end of
// speech to the first robot audio, with a fixed 200 ms speech-to-text
// server and with pocketsphinx, one microphone and three, a 300 ms model
// and espeak-ng; and Chorus's own share, the rest once the hangover,
// the speech to text and the model are taken off (the TTS runs while
// the room votes).
func benchVoice(ctx context.Context, stdout io.Writer, rounds int) error {
	const model = 300 * time.Millisecond
	fmt.Fprintf(stdout, "voice to voice: the person's end of speech → the first robot audio; 3 robots in a shared air, espeak-ng, model %v, %d questions per room\n", model, rounds)
	ms := func(d time.Duration) string { return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds()) }
	p50 := map[string]time.Duration{}
	for _, sttKind := range []string{"fixed", "pocketsphinx"} {
		for _, mics := range []int{1, 3} {
			res, err := bench.Voice(ctx, bench.VoiceCase{STT: sttKind, Mics: mics, Model: model, Rounds: rounds})
			if err != nil {
				return fmt.Errorf("%s, %d microphones: %w", sttKind, mics, err)
			}
			total, heard := bench.Summarize(res.Total), bench.Summarize(res.Heard)
			stt, ttsFirst := bench.Summarize(res.STT).P50, bench.Summarize(res.TTS).P50
			// The companion synthesizes its draft while the vote runs
			// (overlapped turns: speak.start), so the TTS's first audio
			// is not on the path; it is shown, not taken off.
			own := total.P50 - res.Hangover - stt - model
			p50[fmt.Sprintf("%s/%d", sttKind, mics)] = total.P50
			fmt.Fprintf(stdout, "  %-12s %d mic%s  total p50 %-7s p99 %-7s  heard (Message) p50 %-7s  parts p50: hangover %s, STT %s, model %s (TTS first audio %s, prepared during the vote)  → Chorus's own %s\n",
				sttKind, mics, map[bool]string{true: " ", false: "s"}[mics == 1], ms(total.P50), ms(total.P99), ms(heard.P50),
				ms(res.Hangover), ms(stt), ms(model), ms(ttsFirst), ms(own))
		}
	}
	for _, k := range []string{"fixed", "pocketsphinx"} {
		fmt.Fprintf(stdout, "  arbitration, %s: three microphones − one, p50 %s\n", k, ms(p50[k+"/3"]-p50[k+"/1"]))
	}
	return nil
}

// benchActions times a robot's gesture against its words, and the action
// query's round trip against the bare query path (issue 22).
func benchActions(ctx context.Context, stdout io.Writer, turns, queries int) error {
	res, err := bench.Actions(ctx, turns, queries)
	if err != nil {
		return err
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
	line := func(label string, ds []time.Duration) bench.Stats {
		s := bench.Summarize(ds)
		fmt.Fprintf(stdout, "  %-44s p50 %-9s p99 %-9s max %s\n", label, ms(s.P50), ms(s.P99), ms(s.Max))
		return s
	}
	fmt.Fprintf(stdout, "actions: a robot that nods when spoken to (rule brain, servo head and face on a fake I²C bus, tone TTS, paced audio), %d turns, embedded broker\n", turns)
	line("grant → first audio", res.GrantToAudio)
	line("grant → first servo write of the nod", res.GrantToServo)
	sync := line("first audio → first servo write (goal ≤ 50 ms)", res.AudioToServo)
	fmt.Fprintf(stdout, "action query round trip, %d queries each, alternating, embedded broker\n", queries)
	base := line("bare query path (speak.start, nothing held)", res.Baseline)
	act := line("action: the face shows an emotion", res.RoundTrip)
	fmt.Fprintf(stdout, "  action / bare: p50 %.2f×, p99 %.2f×\n", float64(act.P50)/float64(base.P50), float64(act.P99)/float64(base.P99))
	if sync.P99 > 50*time.Millisecond {
		fmt.Fprintf(stdout, "  the gesture lagged the words by more than 50 ms at p99\n")
	}
	return nil
}

// benchRealtime measures a realtime post → its broadcast at all 13
// players, beside the raw fan-out of the same broker, and then with a
// client that never reads its socket (issue 12). A p99 of one run moves
// by a third from run to run, so the runs with and without the stalled
// client alternate, pairs of each, and their medians are compared.
func benchRealtime(ctx context.Context, stdout io.Writer, url, name string, posts, pairs int) error {
	fmt.Fprintf(stdout, "realtime: post → broadcast at all %d players (open loop), broker %s, %d posts per run\n", bench.RealtimePlayers, name, posts)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
	for _, rate := range []float64{40, 400} {
		raw, err := bench.RawFanout(ctx, url, bench.RealtimePlayers, rate, posts)
		if err != nil {
			return err
		}
		rs := bench.Summarize(raw)
		fmt.Fprintf(stdout, "  %3.0f/s raw fan-out (paho, no floor)      p50 %-8s p99 %-8s max %s\n", rate, ms(rs.P50), ms(rs.P99), ms(rs.Max))
		var runs [2][]bench.Stats
		var late time.Duration
		for range pairs {
			for i, slow := range []bool{false, true} {
				res, err := bench.Realtime(ctx, bench.RealtimeCase{URL: url, Rate: rate, Posts: posts, SlowReader: slow})
				if err != nil {
					return err
				}
				if res.Refused > 0 {
					return fmt.Errorf("realtime bench: the floor refused %d posts %v", res.Refused, res.Refusals)
				}
				if res.TimerLate < 0 {
					return fmt.Errorf("realtime bench: the silence end came %v before its time", -res.TimerLate)
				}
				runs[i] = append(runs[i], bench.Summarize(res.Latencies))
				late = max(late, res.TimerLate)
			}
		}
		med := func(ss []bench.Stats, f func(bench.Stats) time.Duration) time.Duration {
			ds := make([]time.Duration, len(ss))
			for i, s := range ss {
				ds[i] = f(s)
			}
			return bench.Summarize(ds).P50
		}
		p50 := func(s bench.Stats) time.Duration { return s.P50 }
		p99 := func(s bench.Stats) time.Duration { return s.P99 }
		each := func(ss []bench.Stats) string {
			out := ""
			for _, s := range ss {
				out += " " + ms(s.P99)
			}
			return out
		}
		n, s := runs[0], runs[1]
		fmt.Fprintf(stdout, "  %3.0f/s post → all players (median of %d)  p50 %-8s p99 %-8s (p50 %.2f×, p99 %.2f× raw; p99 of each run:%s)\n",
			rate, pairs, ms(med(n, p50)), ms(med(n, p99)), float64(med(n, p50))/float64(rs.P50), float64(med(n, p99))/float64(rs.P99), each(n))
		fmt.Fprintf(stdout, "  %3.0f/s … one client never reads (median) p50 %-8s p99 %-8s (p99 %+.0f %% against the runs without it; each:%s)\n",
			rate, ms(med(s, p50)), ms(med(s, p99)), 100*(float64(med(s, p99))/float64(med(n, p99))-1), each(s))
		fmt.Fprintf(stdout, "  %3.0f/s the silence end came at most %s after its time in these %d runs (from the last accepted post's send: with its trip to the floor and the end's trip back)\n", rate, ms(late), 2*pairs)
	}
	return nil
}
