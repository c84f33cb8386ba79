// Package metrics holds the Prometheus metrics of a Chorus process and the one
// place where rejected input is counted and logged.
//
// # Usage
//
// One *Metrics is built per process (or per test) with New and handed down to
// every component; WritePrometheus (and Handler, for /metrics) writes them in
// Prometheus's text format. Components accept a nil *Metrics and then keep a
// private one, so tests need not wire it.
//
// The metrics are VictoriaMetrics/metrics counters, gauges and Prometheus
// histograms (docs/choices.md: the Prometheus client linked 1.9 MB of protobuf
// into the robot). The types here give them the shape the code uses: a
// metric with labels is a *CounterVec, *GaugeVec or *HistogramVec whose
// WithLabelValues names one series; labels are written in name order, their
// values escaped.
//
// Rejected input (a malformed payload, a spoof, a late or unknown State) goes
// through Reject, which counts it by source and kind and logs it at most once
// per source, peer and kind per minute (docs/protocol.md: "logged once").
//
// # Concurrency
//
// All methods are safe for concurrent use.
package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	vm "github.com/VictoriaMetrics/metrics"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Metrics is the set of Chorus metrics, kept in one set per Metrics.
type Metrics struct {
	set *set

	Build         *GaugeVec   // version, goversion: 1 for the running build
	BadInput      *CounterVec // source, kind
	Votes         *Counter
	LateStates    *Counter
	DroppedStates *CounterVec // reason
	Grants        *CounterVec // reason
	TurnLatency   *Histogram  // message arrival → grant published
	QueryLatency  *HistogramVec
	QueryErrors   *CounterVec // type, reason
	FirstAudio    *Histogram
	Reconnects    *Counter
	BrainFailures *CounterVec // reason

	Regrants       *Counter    // grants published again until the speaker answered
	FloorActive    *Gauge      // 1 while this process's floor decides for its room
	ClaimFailures  *Counter    // leader claims that did not come back from the broker
	QueueDrops     *CounterVec // component, kind: events a full queue refused
	IgnoredGrants  *CounterVec // reason: grants a companion did not act on
	Resent         *CounterVec // kind: States and Messages a companion published again
	Duplicates     *CounterVec // component, kind: copies delivered again and handled once
	Recovered      *CounterVec // kind: lost messages the room recovered without
	RateLimited    *CounterVec // provider: 429 answers from a model server
	RetryAfter     *GaugeVec   // provider: the last Retry-After a model server asked for
	Clipped        *Counter    // utterances cut to brain.max_utterance
	PublishDropped *CounterVec // component: publishes refused or failed
	Held           *GaugeVec   // what: entries a bounded map or queue holds now

	RealtimeAccepted *Counter    // realtime utterances accepted by the floor
	RealtimeHeld     *Counter    // realtime words an agent did not post: the floor was busy
	RealtimeRejects  *CounterVec // reason: realtime posts the floor refused

	BridgeClients *Gauge      // WebSocket clients connected now
	BridgeFrames  *CounterVec // direction (in, out): frames relayed
	BridgeDropped *CounterVec // reason: clients refused or dropped, frames refused

	Heard        *CounterVec // outcome: heard reports the room's arbiter took or set aside
	Hearing      *CounterVec // event: what a body's ear did with speech (reported, gated, empty, stt_error, ...)
	Eager        *CounterVec // outcome: thinks on a person's words so far (started, adopted, differed, withdrawn)
	HearingDelay *Histogram  // end of speech → report queued on the device (VAD hangover + STT)

	Actions        *CounterVec   // action, outcome: what a body did with the actions it was asked
	ActionDuration *HistogramVec // action: how long a body's actions ran

	limiter limiter
}

// New builds a Metrics with a fresh set. Its exposition also carries the Go
// runtime's and the process's own metrics (go_goroutines, process_*).
func New() *Metrics {
	r := &set{s: vm.NewSet(), help: make(map[string]string)}
	lat := []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30}
	m := &Metrics{
		set: r,
		Build: newGaugeVec(r, "chorus_build_info", "The running build: 1, labelled with its version and Go toolchain.",
			"version", "goversion"),
		BadInput: newCounterVec(r, "chorus_bad_input_total", "Payloads rejected, by source (message, state, grant, ...) and kind (oversize, syntax, spoof, ...).",
			"source", "kind"),
		Votes:         newCounter(r, "chorus_floor_votes_total", "States counted by the floor."),
		LateStates:    newCounter(r, "chorus_floor_late_states_total", "States that arrived after their message was decided."),
		DroppedStates: newCounterVec(r, "chorus_floor_dropped_states_total", "States dropped by the floor, by reason.", "reason"),
		Grants:        newCounterVec(r, "chorus_floor_grants_total", "Turn grants published, by reason.", "reason"),
		TurnLatency:   newHistogram(r, "chorus_floor_turn_latency_seconds", "From a message's arrival at the floor to its grant.", lat),
		QueryLatency:  newHistogramVec(r, "chorus_query_latency_seconds", "Query round trip as the client sees it, by type.", lat, "type"),
		QueryErrors:   newCounterVec(r, "chorus_query_errors_total", "Queries that failed, by type and reason.", "type", "reason"),
		FirstAudio:    newHistogram(r, "chorus_speak_first_audio_seconds", "From a speak query's arrival to its first PCM frame at the audio driver.", lat),
		Reconnects:    newCounter(r, "chorus_mqtt_reconnects_total", "MQTT connections re-established after a loss."),
		BrainFailures: newCounterVec(r, "chorus_brain_failures_total", "Brain calls that fell back to listen, by reason.", "reason"),
		Regrants:      newCounter(r, "chorus_floor_regrants_total", "Grants published again because the granted speaker had not answered yet (a lost grant or answer is recovered this way)."),
		FloorActive:   newGauge(r, "chorus_floor_active", "1 while this process's floor decides for its room, 0 while it stands by or cannot claim."),
		ClaimFailures: newCounter(r, "chorus_floor_claim_failures_total", "Leader claims that did not come back from the broker in time (an ACL that denies floor/leader?)."),
		QueueDrops:    newCounterVec(r, "chorus_queue_drops_total", "Events a full queue refused, by component and kind.", "component", "kind"),
		IgnoredGrants: newCounterVec(r, "chorus_companion_ignored_grants_total", "Grants for this companion it did not act on, by reason (already_answered, stale, not_voted, terminal, muted, speaking).",
			"reason"),
		Resent: newCounterVec(r, "chorus_companion_resent_total", "States and answers a companion published again, by kind (a lost one is recovered this way).", "kind"),
		Duplicates: newCounterVec(r, "chorus_duplicates_total", "Copies of a message delivered again (at-least-once delivery, a repeated answer) and handled once, by component and kind.",
			"component", "kind"),
		Recovered:        newCounterVec(r, "chorus_floor_recovered_total", "Messages the floor never received but decided on from the States that named them, by kind.", "kind"),
		RateLimited:      newCounterVec(r, "chorus_brain_rate_limited_total", "429 answers from the model server, by provider.", "provider"),
		RetryAfter:       newGaugeVec(r, "chorus_brain_retry_after_seconds", "The last Retry-After a model server asked for, by provider.", "provider"),
		Clipped:          newCounter(r, "chorus_brain_clipped_total", "Utterances a model wrote longer than brain.max_utterance, cut at a sentence boundary."),
		PublishDropped:   newCounterVec(r, "chorus_publish_dropped_total", "Publishes refused by a full outbox or failed, by component.", "component"),
		RealtimeAccepted: newCounter(r, "chorus_realtime_accepted_total", "Realtime utterances the floor accepted and broadcast."),
		RealtimeHeld:     newCounter(r, "chorus_realtime_held_total", "Realtime words an agent wrote but did not post, because another robot's accepted words held the floor (overlap false)."),
		RealtimeRejects: newCounterVec(r, "chorus_realtime_rejected_total", "Realtime posts the floor refused, by reason (rate_limited, quota_exhausted, phase_closed, not_member, empty, floor_busy).",
			"reason"),
		BridgeClients: newGauge(r, "chorus_bridge_clients", "WebSocket bridge clients connected now."),
		BridgeFrames:  newCounterVec(r, "chorus_bridge_frames_total", "Frames the WebSocket bridge relayed, by direction (in: from clients to the room, out: to clients).", "direction"),
		BridgeDropped: newCounterVec(r, "chorus_bridge_dropped_total", "WebSocket clients refused or dropped and frames refused, by reason (no_token, bad_token, too_many, slow, no_pong, oversize, not_json, forbidden, invalid, not_addressed, rate_limited, publish_failed).",
			"reason"),
		Heard: newCounterVec(r, "chorus_heard_reports_total", "Heard reports the room's arbiter handled, by outcome (taken: published as the person's Message; same: another robot's report of the same utterance; late: arrived after its utterance was decided; duplicate: seen before; standby: decided while another floor leads; caption: the words so far of the utterance under way forwarded).",
			"outcome"),
		Hearing: newCounterVec(r, "chorus_hearing_total", "What a robot's ear did, by event (utterance, reported, partial: the words so far told as they grow; tentative: the words so far told at a pause; resumed: taken back, the person went on; gated, muted, too_short, cut, empty, stt_error, stt_rate_limited, mic_error, mic_dropped_frames, publish_failed).",
			"event"),
		Eager: newCounterVec(r, "chorus_eager_thinks_total", "Thinks on a person's words so far (eager end of turn), by outcome (started; adopted: their Message said the same words; differed: it said others and was thought on again; withdrawn: cancelled, the person went on or the words were void).",
			"outcome"),
		HearingDelay: newHistogram(r, "chorus_hearing_delay_seconds", "From the end of a person's speech to its report being queued on the device (the VAD's hangover plus the speech-to-text engine).", []float64{.1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 10}),
		Actions: newCounterVec(r, "chorus_actions_total", "Actions a robot's body was asked to do, by action and outcome (done; replaced: a newer action of the same part ended it; unknown: no such action; bad_args: the arguments failed its schema; failed: the driver failed; late: it came long after its words had ended, not done; sent: handed to a body that does not answer).",
			"action", "outcome"),
		ActionDuration: newHistogramVec(r, "chorus_action_seconds", "How long a body's actions ran, from their start (with their utterance's first audio, when tied to one) to their end.", []float64{.001, .005, .02, .05, .1, .25, .5, 1, 2, 5, 10}, "action"),
		Held: newGaugeVec(r, "chorus_held_entries", "Entries a bounded map or queue holds now, by what (floor_ballots, companion_thinking, query_pending, ...): work in progress drains to 0 when the room rests; books of recent ids stay at or below their cap.",
			"what"),
	}
	// Export the zero series too, so dashboards and alerts see them before
	// the first bad input.
	for _, src := range []string{"message", "state", "grant", "presence", "query", "result", "hold", "speaking", "heard"} {
		for _, k := range protocol.Kinds {
			m.BadInput.WithLabelValues(src, string(k))
		}
	}
	for _, r := range []string{"late", "unknown_message", "not_participant", "duplicate_message", "queue_full"} {
		m.DroppedStates.WithLabelValues(r)
	}
	m.limiter.every = time.Minute
	return m
}

// WritePrometheus writes every metric in Prometheus's text format, then the
// Go runtime's and the process's own.
func (m *Metrics) WritePrometheus(w io.Writer) error { return m.set.write(w) }

// Handler serves WritePrometheus: /metrics.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WritePrometheus(w)
	})
}

// OrNew returns m, or a fresh Metrics when m is nil.
func OrNew(m *Metrics) *Metrics {
	if m == nil {
		return New()
	}
	return m
}

// RateLimitedBy is a hook for modelhttp.Client.OnRateLimited: it counts a
// 429 of provider's (chorus_brain_rate_limited_total) and keeps the wait
// it asked for (chorus_brain_retry_after_seconds). m may be nil.
func (m *Metrics) RateLimitedBy(provider string) func(wait time.Duration) {
	m = OrNew(m)
	return func(wait time.Duration) {
		m.RateLimited.WithLabelValues(provider).Inc()
		m.RetryAfter.WithLabelValues(provider).Set(wait.Seconds())
	}
}

// Reject counts one rejected input and logs it, at most once per minute for
// the same source, peer and kind.
func (m *Metrics) Reject(log *slog.Logger, source, peer, kind string, err error) {
	m.BadInput.WithLabelValues(source, kind).Inc()
	if log != nil && m.limiter.allow(source+"\x00"+peer+"\x00"+kind, time.Now()) {
		log.Warn("rejected input", "source", source, "peer", peer, "kind", kind, "err", err)
	}
}

// maxLimiterKeys bounds the limiter's memory: a flood of distinct peers can
// cost at most this many entries.
const maxLimiterKeys = 4096

// limiter lets one event per key through per period.
type limiter struct {
	mu    sync.Mutex
	every time.Duration
	last  map[string]time.Time
}

func (l *limiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = make(map[string]time.Time)
	}
	if t, ok := l.last[key]; ok && now.Sub(t) < l.every {
		return false
	}
	if len(l.last) >= maxLimiterKeys {
		for k, t := range l.last {
			if now.Sub(t) >= l.every {
				delete(l.last, k)
			}
		}
		if len(l.last) >= maxLimiterKeys {
			return false // still full of recent keys: stay quiet rather than grow
		}
	}
	l.last[key] = now
	return true
}
