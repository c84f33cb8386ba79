// Package metrics holds the Prometheus metrics of a Chorus process and the one
// place where rejected input is counted and logged.
//
// # Usage
//
// One *Metrics is built per process (or per test) with New and handed down to
// every component; its Registry is what /metrics serves. Components accept a
// nil *Metrics and then keep a private one, so tests need not wire it.
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
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// Metrics is the set of Chorus metrics, registered in Registry.
type Metrics struct {
	Registry *prometheus.Registry

	Build         *prometheus.GaugeVec   // version, goversion: 1 for the running build
	BadInput      *prometheus.CounterVec // source, kind
	Votes         prometheus.Counter
	LateStates    prometheus.Counter
	DroppedStates *prometheus.CounterVec // reason
	Grants        *prometheus.CounterVec // reason
	TurnLatency   prometheus.Histogram   // message arrival → grant published
	QueryLatency  *prometheus.HistogramVec
	QueryErrors   *prometheus.CounterVec // type, reason
	FirstAudio    prometheus.Histogram
	Reconnects    prometheus.Counter
	BrainFailures *prometheus.CounterVec // reason

	Regrants       prometheus.Counter     // grants published again until the speaker answered
	FloorActive    prometheus.Gauge       // 1 while this process's floor decides for its room
	ClaimFailures  prometheus.Counter     // leader claims that did not come back from the broker
	QueueDrops     *prometheus.CounterVec // component, kind: events a full queue refused
	IgnoredGrants  *prometheus.CounterVec // reason: grants a companion did not act on
	Resent         *prometheus.CounterVec // kind: States and Messages a companion published again
	Duplicates     *prometheus.CounterVec // component, kind: copies delivered again and handled once
	Recovered      *prometheus.CounterVec // kind: lost messages the room recovered without
	RateLimited    *prometheus.CounterVec // provider: 429 answers from a model server
	RetryAfter     *prometheus.GaugeVec   // provider: the last Retry-After a model server asked for
	Clipped        prometheus.Counter     // utterances cut to brain.max_utterance
	PublishDropped *prometheus.CounterVec // component: publishes refused or failed
	Held           *prometheus.GaugeVec   // what: entries a bounded map or queue holds now

	RealtimeAccepted prometheus.Counter     // realtime utterances accepted by the floor
	RealtimeHeld     prometheus.Counter     // realtime words an agent did not post: the floor was busy
	RealtimeRejects  *prometheus.CounterVec // reason: realtime posts the floor refused

	BridgeClients prometheus.Gauge       // WebSocket clients connected now
	BridgeFrames  *prometheus.CounterVec // direction (in, out): frames relayed
	BridgeDropped *prometheus.CounterVec // reason: clients refused or dropped, frames refused

	Heard        *prometheus.CounterVec // outcome: heard reports the room's arbiter took or set aside
	Hearing      *prometheus.CounterVec // event: what a body's ear did with speech (reported, gated, empty, stt_error, ...)
	Eager        *prometheus.CounterVec // outcome: thinks on a person's words so far (started, adopted, differed, withdrawn)
	HearingDelay prometheus.Histogram   // end of speech → report queued on the device (VAD hangover + STT)

	Actions        *prometheus.CounterVec   // action, outcome: what a body did with the actions it was asked
	ActionDuration *prometheus.HistogramVec // action: how long a body's actions ran

	limiter limiter
}

// New builds a Metrics with a fresh registry that also carries the Go and
// process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	f := func(c prometheus.Collector) prometheus.Collector { r.MustRegister(c); return c }
	lat := []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30}
	m := &Metrics{
		Registry: r,
		Build: f(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "chorus_build_info",
			Help: "The running build: 1, labelled with its version and Go toolchain."},
			[]string{"version", "goversion"})).(*prometheus.GaugeVec),
		BadInput: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_bad_input_total",
			Help: "Payloads rejected, by source (message, state, grant, ...) and kind (oversize, syntax, spoof, ...)."},
			[]string{"source", "kind"})).(*prometheus.CounterVec),
		Votes: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_floor_votes_total",
			Help: "States counted by the floor."})).(prometheus.Counter),
		LateStates: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_floor_late_states_total",
			Help: "States that arrived after their message was decided."})).(prometheus.Counter),
		DroppedStates: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_floor_dropped_states_total",
			Help: "States dropped by the floor, by reason."}, []string{"reason"})).(*prometheus.CounterVec),
		Grants: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_floor_grants_total",
			Help: "Turn grants published, by reason."}, []string{"reason"})).(*prometheus.CounterVec),
		TurnLatency: f(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chorus_floor_turn_latency_seconds",
			Help: "From a message's arrival at the floor to its grant.", Buckets: lat})).(prometheus.Histogram),
		QueryLatency: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chorus_query_latency_seconds",
			Help: "Query round trip as the client sees it, by type.", Buckets: lat}, []string{"type"})).(*prometheus.HistogramVec),
		QueryErrors: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_query_errors_total",
			Help: "Queries that failed, by type and reason."}, []string{"type", "reason"})).(*prometheus.CounterVec),
		FirstAudio: f(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chorus_speak_first_audio_seconds",
			Help: "From a speak query's arrival to its first PCM frame at the audio driver.", Buckets: lat})).(prometheus.Histogram),
		Reconnects: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_mqtt_reconnects_total",
			Help: "MQTT connections re-established after a loss."})).(prometheus.Counter),
		BrainFailures: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_brain_failures_total",
			Help: "Brain calls that fell back to listen, by reason."}, []string{"reason"})).(*prometheus.CounterVec),
		Regrants: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_floor_regrants_total",
			Help: "Grants published again because the granted speaker had not answered yet (a lost grant or answer is recovered this way)."})).(prometheus.Counter),
		FloorActive: f(prometheus.NewGauge(prometheus.GaugeOpts{Name: "chorus_floor_active",
			Help: "1 while this process's floor decides for its room, 0 while it stands by or cannot claim."})).(prometheus.Gauge),
		ClaimFailures: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_floor_claim_failures_total",
			Help: "Leader claims that did not come back from the broker in time (an ACL that denies floor/leader?)."})).(prometheus.Counter),
		QueueDrops: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_queue_drops_total",
			Help: "Events a full queue refused, by component and kind."}, []string{"component", "kind"})).(*prometheus.CounterVec),
		IgnoredGrants: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_companion_ignored_grants_total",
			Help: "Grants for this companion it did not act on, by reason (already_answered, stale, not_voted, terminal, muted, speaking)."},
			[]string{"reason"})).(*prometheus.CounterVec),
		Resent: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_companion_resent_total",
			Help: "States and answers a companion published again, by kind (a lost one is recovered this way)."}, []string{"kind"})).(*prometheus.CounterVec),
		Duplicates: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_duplicates_total",
			Help: "Copies of a message delivered again (at-least-once delivery, a repeated answer) and handled once, by component and kind."},
			[]string{"component", "kind"})).(*prometheus.CounterVec),
		Recovered: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_floor_recovered_total",
			Help: "Messages the floor never received but decided on from the States that named them, by kind."}, []string{"kind"})).(*prometheus.CounterVec),
		RateLimited: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_brain_rate_limited_total",
			Help: "429 answers from the model server, by provider."}, []string{"provider"})).(*prometheus.CounterVec),
		RetryAfter: f(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "chorus_brain_retry_after_seconds",
			Help: "The last Retry-After a model server asked for, by provider."}, []string{"provider"})).(*prometheus.GaugeVec),
		Clipped: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_brain_clipped_total",
			Help: "Utterances a model wrote longer than brain.max_utterance, cut at a sentence boundary."})).(prometheus.Counter),
		PublishDropped: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_publish_dropped_total",
			Help: "Publishes refused by a full outbox or failed, by component."}, []string{"component"})).(*prometheus.CounterVec),
		RealtimeAccepted: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_realtime_accepted_total",
			Help: "Realtime utterances the floor accepted and broadcast."})).(prometheus.Counter),
		RealtimeHeld: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "chorus_realtime_held_total",
			Help: "Realtime words an agent wrote but did not post, because another robot's accepted words held the floor (overlap false)."})).(prometheus.Counter),
		RealtimeRejects: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_realtime_rejected_total",
			Help: "Realtime posts the floor refused, by reason (rate_limited, quota_exhausted, phase_closed, not_member, empty, floor_busy)."},
			[]string{"reason"})).(*prometheus.CounterVec),
		BridgeClients: f(prometheus.NewGauge(prometheus.GaugeOpts{Name: "chorus_bridge_clients",
			Help: "WebSocket bridge clients connected now."})).(prometheus.Gauge),
		BridgeFrames: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_bridge_frames_total",
			Help: "Frames the WebSocket bridge relayed, by direction (in: from clients to the room, out: to clients)."}, []string{"direction"})).(*prometheus.CounterVec),
		BridgeDropped: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_bridge_dropped_total",
			Help: "WebSocket clients refused or dropped and frames refused, by reason (no_token, bad_token, too_many, slow, no_pong, oversize, not_json, forbidden, invalid, not_addressed, rate_limited, publish_failed)."},
			[]string{"reason"})).(*prometheus.CounterVec),
		Heard: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_heard_reports_total",
			Help: "Heard reports the room's arbiter handled, by outcome (taken: published as the person's Message; same: another robot's report of the same utterance; late: arrived after its utterance was decided; duplicate: seen before; standby: decided while another floor leads; caption: the words so far of the utterance under way forwarded)."},
			[]string{"outcome"})).(*prometheus.CounterVec),
		Hearing: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_hearing_total",
			Help: "What a robot's ear did, by event (utterance, reported, partial: the words so far told as they grow; tentative: the words so far told at a pause; resumed: taken back, the person went on; gated, muted, too_short, cut, empty, stt_error, stt_rate_limited, mic_error, mic_dropped_frames, publish_failed)."},
			[]string{"event"})).(*prometheus.CounterVec),
		Eager: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_eager_thinks_total",
			Help: "Thinks on a person's words so far (eager end of turn), by outcome (started; adopted: their Message said the same words; differed: it said others and was thought on again; withdrawn: cancelled, the person went on or the words were void)."},
			[]string{"outcome"})).(*prometheus.CounterVec),
		HearingDelay: f(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chorus_hearing_delay_seconds",
			Help:    "From the end of a person's speech to its report being queued on the device (the VAD's hangover plus the speech-to-text engine).",
			Buckets: []float64{.1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 10}})).(prometheus.Histogram),
		Actions: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_actions_total",
			Help: "Actions a robot's body was asked to do, by action and outcome (done; replaced: a newer action of the same part ended it; unknown: no such action; bad_args: the arguments failed its schema; failed: the driver failed; late: it came long after its words had ended, not done; sent: handed to a body that does not answer)."},
			[]string{"action", "outcome"})).(*prometheus.CounterVec),
		ActionDuration: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chorus_action_seconds",
			Help:    "How long a body's actions ran, from their start (with their utterance's first audio, when tied to one) to their end.",
			Buckets: []float64{.001, .005, .02, .05, .1, .25, .5, 1, 2, 5, 10}}, []string{"action"})).(*prometheus.HistogramVec),
		Held: f(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "chorus_held_entries",
			Help: "Entries a bounded map or queue holds now, by what (floor_ballots, companion_thinking, query_pending, ...): work in progress drains to 0 when the room rests; books of recent ids stay at or below their cap."},
			[]string{"what"})).(*prometheus.GaugeVec),
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
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.limiter.every = time.Minute
	return m
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
