// Package topic builds and parses every Chorus MQTT topic name, and holds the
// publish rules (ACL) that brokers enforce on them. It is the one place where
// the topic scheme of docs/protocol.md ("Topics") is written down in code.
//
// # Usage
//
//	s := topic.New("chorus")
//	s.State("livingroom", "kyoko") // chorus/rooms/livingroom/states/kyoko
//	r, ok := s.Parse(t)            // what a received topic is, and whose
//	s.MayPublish(user, t)          // the ACL rule for user publishing on t
//
// Every topic that carries what one identity says ends in that identity; a
// receiver compares a payload's "from" with Route.Identity and drops spoofs.
//
// # Membership
//
// A room's roster (its companion ids) is configuration. The ACL lets only
// members publish what only companions say — presence, States, realtime
// posts, holds, speaking status — each under its own name; anyone who may
// connect may send Messages under its own name and ask queries (a user).
// A room the scheme has no roster for has no members.
package topic

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// DefaultPrefix is the topic prefix when the config names none.
const DefaultPrefix = "chorus"

// DefaultFloorID is the identity floors publish under.
const DefaultFloorID = "floor"

// Scheme builds topics under one prefix. FloorIDs lists the identities
// allowed to publish grants, phases and floor answers; Rosters holds each
// room's members, for the ACL.
type Scheme struct {
	Prefix   string
	FloorIDs []string
	Rosters  map[string][]string // room -> companion ids
	// Whispers holds each room's whisper channels and their members:
	// only they (and the floor) read a channel's traffic and post in it.
	Whispers map[string]map[string][]string // room -> channel -> companion ids
	// Voices holds the identity of the person each room hears (hearing.user):
	// the floor publishes the Message of a heard utterance under it
	// (docs/protocol.md, "Heard reports": one sentence, one Message).
	Voices map[string]string // room -> the person's identity
	// People holds, per room, the people its robots may know by voice
	// (hearing.people): the floor publishes the Message of an utterance
	// whose voice a robot knew under that person's identity.
	People map[string][]string // room -> identities
	// HA is Home Assistant's topics and identity (homeassistant.go); nil
	// when no robot is in Home Assistant.
	HA *HA
}

// WithVoice returns a copy of s in which room's floor may publish what
// the room heard as user.
func (s Scheme) WithVoice(room, user string) Scheme {
	v := make(map[string]string, len(s.Voices)+1)
	for k, u := range s.Voices {
		v[k] = u
	}
	v[room] = user
	s.Voices = v
	return s
}

// WithPeople returns a copy of s in which room's floor may publish what
// the room heard under each of people (voices its robots know).
func (s Scheme) WithPeople(room string, people []string) Scheme {
	v := make(map[string][]string, len(s.People)+1)
	for k, p := range s.People {
		v[k] = p
	}
	v[room] = slices.Clone(people)
	s.People = v
	return s
}

// voiced reports whether room's floor publishes what the room heard under
// identity: the hearing user's, or a person known by voice.
func (s Scheme) voiced(room, identity string) bool {
	return s.Voices[room] != "" && identity == s.Voices[room] || slices.Contains(s.People[room], identity)
}

// WithWhisper returns a copy of s that knows room's whisper channel and its
// members.
func (s Scheme) WithWhisper(room, channel string, members []string) Scheme {
	w := make(map[string]map[string][]string, len(s.Whispers)+1)
	for r, chs := range s.Whispers {
		w[r] = make(map[string][]string, len(chs))
		for c, m := range chs {
			w[r][c] = m
		}
	}
	if w[room] == nil {
		w[room] = map[string][]string{}
	}
	w[room][channel] = append([]string(nil), members...)
	s.Whispers = w
	return s
}

// InWhisper reports whether id is a member of room's whisper channel.
func (s Scheme) InWhisper(room, channel, id string) bool {
	for _, m := range s.Whispers[room][channel] {
		if m == id {
			return true
		}
	}
	return false
}

// WithRoster returns a copy of s that knows room's members.
func (s Scheme) WithRoster(room string, members []string) Scheme {
	r := make(map[string][]string, len(s.Rosters)+1)
	for k, v := range s.Rosters {
		r[k] = v
	}
	r[room] = append([]string(nil), members...)
	s.Rosters = r
	return s
}

// IsMember reports whether id is on room's roster.
func (s Scheme) IsMember(room, id string) bool {
	for _, m := range s.Rosters[room] {
		if m == id {
			return true
		}
	}
	return false
}

// New returns the scheme for prefix ("" means DefaultPrefix) with the
// default floor identity.
func New(prefix string) Scheme {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Scheme{Prefix: prefix, FloorIDs: []string{DefaultFloorID}}
}

func (s Scheme) room(room string, rest ...string) string {
	return s.Prefix + "/rooms/" + room + "/" + strings.Join(rest, "/")
}

// space is a topic of room itself (channel "") or of one of its whisper
// channels: the realtime mode runs the same topics in both.
func (s Scheme) space(room, channel string, rest ...string) string {
	if channel == "" {
		return s.room(room, rest...)
	}
	return s.room(room, append([]string{"whisper", channel}, rest...)...)
}

// PhaseIn is where the floor announces realtime phases in room's channel
// ("" for the room itself).
func (s Scheme) PhaseIn(room, channel string) string { return s.space(room, channel, "phase") }

// PostIn is where companion posts realtime utterances in room's channel.
func (s Scheme) PostIn(room, channel, companion string) string {
	return s.space(room, channel, "floor", "in", companion)
}

// PostsIn is the filter for every realtime post in room's channel.
func (s Scheme) PostsIn(room, channel string) string {
	return s.space(room, channel, "floor", "in", "+")
}

// AckIn is where the floor answers companion's posts in room's channel.
func (s Scheme) AckIn(room, channel, companion string) string {
	return s.space(room, channel, "floor", "out", companion)
}

// BroadcastIn is where sender (the floor) broadcasts accepted utterances
// in room's channel: its messages topic.
func (s Scheme) BroadcastIn(room, channel, sender string) string {
	return s.space(room, channel, "messages", sender)
}

// BroadcastsIn is the filter for every message in room's channel.
func (s Scheme) BroadcastsIn(room, channel string) string {
	return s.space(room, channel, "messages", "+")
}

// Message is where sender publishes a Message in room.
func (s Scheme) Message(room, sender string) string { return s.room(room, "messages", sender) }

// Messages is the filter for every Message in room.
func (s Scheme) Messages(room string) string { return s.room(room, "messages", "+") }

// State is where companion publishes its States in room.
func (s Scheme) State(room, companion string) string { return s.room(room, "states", companion) }

// States is the filter for every State in room.
func (s Scheme) States(room string) string { return s.room(room, "states", "+") }

// Turns is where the floor publishes TurnGrants for room.
func (s Scheme) Turns(room string) string { return s.room(room, "turns") }

// Presence is companion's retained presence in room.
func (s Scheme) Presence(room, companion string) string { return s.room(room, "presence", companion) }

// Presences is the filter for every presence in room.
func (s Scheme) Presences(room string) string { return s.room(room, "presence", "+") }

// Phase is where the floor announces realtime phases in room.
func (s Scheme) Phase(room string) string { return s.room(room, "phase") }

// FloorIn is where companion posts realtime utterances.
func (s Scheme) FloorIn(room, companion string) string { return s.room(room, "floor", "in", companion) }

// FloorIns is the filter for every realtime post in room.
func (s Scheme) FloorIns(room string) string { return s.room(room, "floor", "in", "+") }

// FloorOut is where the floor answers companion's posts.
func (s Scheme) FloorOut(room, companion string) string {
	return s.room(room, "floor", "out", companion)
}

// FloorHold is where a companion's body says a human holds the floor (a
// long button press), retained.
func (s Scheme) FloorHold(room, companion string) string {
	return s.room(room, "floor", "hold", companion)
}

// FloorHolds is the filter for every hold in room.
func (s Scheme) FloorHolds(room string) string { return s.room(room, "floor", "hold", "+") }

// Speaking is companion's retained speaking status in room.
func (s Scheme) Speaking(room, companion string) string { return s.room(room, "speaking", companion) }

// Speakings is the filter for every speaking status in room.
func (s Scheme) Speakings(room string) string { return s.room(room, "speaking", "+") }

// Heard is where companion's body reports what its microphone heard in
// room.
func (s Scheme) Heard(room, companion string) string { return s.room(room, "heard", companion) }

// Heards is the filter for every heard report in room.
func (s Scheme) Heards(room string) string { return s.room(room, "heard", "+") }

// FloorLeader is the retained claim of the active floor of room.
func (s Scheme) FloorLeader(room string) string { return s.room(room, "floor", "leader") }

// Queries is where queries to device are published.
func (s Scheme) Queries(device string) string { return s.Prefix + "/devices/" + device + "/queries" }

// Results is where device publishes its query results.
func (s Scheme) Results(device string) string { return s.Prefix + "/devices/" + device + "/results" }

// Probe is device's own loopback topic: its watchdog publishes there and
// waits to hear itself (no other subscriber shares it).
func (s Scheme) Probe(device string) string { return s.Prefix + "/devices/" + device + "/probe" }

// Forgot is where companion reports what it forgot about a person
// (issue 29).
func (s Scheme) Forgot(room, companion string) string { return s.room(room, "forgot", companion) }

// Forgots is the filter for every Forgot report of a room.
func (s Scheme) Forgots(room string) string { return s.room(room, "forgot", "+") }

// Facts is where companion shares the facts it learned with the other
// companions of its room, when the room shares memory (issue 29): only
// the room's members read them.
func (s Scheme) Facts(room, companion string) string { return s.room(room, "facts", companion) }

// FactsOf is the filter for every companion's shared facts in room.
func (s Scheme) FactsOf(room string) string { return s.room(room, "facts", "+") }

// Forgets is companion's retained log of who asked the room to forget
// them (protocol.ForgetLog): only the room's members read it.
func (s Scheme) Forgets(room, companion string) string { return s.room(room, "forgets", companion) }

// ForgetsOf is the filter for every member's forget log in room.
func (s Scheme) ForgetsOf(room string) string { return s.room(room, "forgets", "+") }

// Memory is where identity asks device about its memory: only identity
// publishes there, only the device reads it.
func (s Scheme) Memory(device, identity string) string {
	return s.Prefix + "/devices/" + device + "/memory/" + identity
}

// MemoryRequests is the filter of every memory request to device.
func (s Scheme) MemoryRequests(device string) string {
	return s.Prefix + "/devices/" + device + "/memory/+"
}

// MemoryAnswer is where device answers identity's memory requests: only
// the device publishes there, only identity reads it (its facts).
func (s Scheme) MemoryAnswer(device, identity string) string {
	return s.Memory(device, identity) + "/answer"
}

// Kind names what a topic carries.
type Kind string

const (
	KindMessage      Kind = "message"
	KindState        Kind = "state"
	KindTurns        Kind = "grant"
	KindPresence     Kind = "presence"
	KindPhase        Kind = "phase"
	KindFloorIn      Kind = "post"
	KindFloorOut     Kind = "postack"
	KindLeader       Kind = "leader"
	KindHold         Kind = "hold"
	KindSpeaking     Kind = "speaking"
	KindHeard        Kind = "heard"
	KindQuery        Kind = "query"
	KindResult       Kind = "result"
	KindProbe        Kind = "probe"
	KindForgot       Kind = "forgot"
	KindFacts        Kind = "facts"
	KindForgets      Kind = "forgets"
	KindMemory       Kind = "memory"
	KindMemoryAnswer Kind = "memory-answer"
)

// Route is a parsed topic: its kind, room or device, and the identity it
// belongs to (empty for topics that carry no single identity).
type Route struct {
	Kind     Kind
	Room     string // for room topics
	Channel  string // for a whisper channel's topics
	Device   string // for device topics
	Identity string // the last segment for per-identity topics
	Entity   string // for Home Assistant topics: the entity
}

// Parse tells what t is. ok is false for topics outside the scheme.
func (s Scheme) Parse(t string) (r Route, ok bool) {
	rest, found := strings.CutPrefix(t, s.Prefix+"/")
	if !found {
		return Route{}, false
	}
	seg := strings.Split(rest, "/")
	for _, p := range seg {
		if p == "" {
			return Route{}, false
		}
	}
	switch {
	case len(seg) == 3 && seg[0] == "devices" && seg[2] == "queries":
		return Route{Kind: KindQuery, Device: seg[1]}, true
	case len(seg) == 3 && seg[0] == "devices" && seg[2] == "results":
		return Route{Kind: KindResult, Device: seg[1], Identity: seg[1]}, true
	case len(seg) == 3 && seg[0] == "devices" && seg[2] == "probe":
		return Route{Kind: KindProbe, Device: seg[1], Identity: seg[1]}, true
	case len(seg) == 4 && seg[0] == "devices" && seg[2] == "memory":
		return Route{Kind: KindMemory, Device: seg[1], Identity: seg[3]}, true
	case len(seg) == 5 && seg[0] == "devices" && seg[2] == "memory" && seg[4] == "answer":
		return Route{Kind: KindMemoryAnswer, Device: seg[1], Identity: seg[3]}, true
	case seg[0] == "ha":
		return parseHA(seg)
	case len(seg) < 3 || seg[0] != "rooms":
		return Route{}, false
	}
	room := seg[1]
	if len(seg) >= 5 && seg[2] == "whisper" {
		// A whisper channel runs the realtime topics: phase, messages,
		// floor/in, floor/out.
		ch := seg[3]
		rest := seg[4:]
		switch {
		case len(rest) == 1 && rest[0] == "phase":
			return Route{Kind: KindPhase, Room: room, Channel: ch}, true
		case len(rest) == 2 && rest[0] == "messages":
			return Route{Kind: KindMessage, Room: room, Channel: ch, Identity: rest[1]}, true
		case len(rest) == 3 && rest[0] == "floor" && rest[1] == "in":
			return Route{Kind: KindFloorIn, Room: room, Channel: ch, Identity: rest[2]}, true
		case len(rest) == 3 && rest[0] == "floor" && rest[1] == "out":
			return Route{Kind: KindFloorOut, Room: room, Channel: ch, Identity: rest[2]}, true
		}
		return Route{}, false
	}
	switch {
	case len(seg) == 3 && seg[2] == "turns":
		return Route{Kind: KindTurns, Room: room}, true
	case len(seg) == 3 && seg[2] == "phase":
		return Route{Kind: KindPhase, Room: room}, true
	case len(seg) == 4 && seg[2] == "messages":
		return Route{Kind: KindMessage, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "states":
		return Route{Kind: KindState, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "presence":
		return Route{Kind: KindPresence, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "speaking":
		return Route{Kind: KindSpeaking, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "heard":
		return Route{Kind: KindHeard, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "forgot":
		return Route{Kind: KindForgot, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "facts":
		return Route{Kind: KindFacts, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "forgets":
		return Route{Kind: KindForgets, Room: room, Identity: seg[3]}, true
	case len(seg) == 4 && seg[2] == "floor" && seg[3] == "leader":
		return Route{Kind: KindLeader, Room: room}, true
	case len(seg) == 5 && seg[2] == "floor" && seg[3] == "in":
		return Route{Kind: KindFloorIn, Room: room, Identity: seg[4]}, true
	case len(seg) == 5 && seg[2] == "floor" && seg[3] == "hold":
		return Route{Kind: KindHold, Room: room, Identity: seg[4]}, true
	case len(seg) == 5 && seg[2] == "floor" && seg[3] == "out":
		return Route{Kind: KindFloorOut, Room: room, Identity: seg[4]}, true
	}
	return Route{}, false
}

// IsFloor reports whether id is one of the floor identities.
func (s Scheme) IsFloor(id string) bool {
	for _, f := range s.FloorIDs {
		if f == id {
			return true
		}
	}
	return false
}

// MayPublish is the ACL rule: whether the client authenticated as user may
// publish on t. Per-identity topics are writable by that identity only,
// and those only companions speak on (presence, States, posts, holds,
// speaking status, heard reports) by
// members of the room only; grants, phases, floor answers and the floor
// leader claim by a floor identity only; queries by anyone authenticated;
// nothing else at all.
func (s Scheme) MayPublish(user, t string) bool {
	if strings.ContainsAny(t, "+#") {
		return false
	}
	if user == "" { // anonymous: queries only, as the rendered ACL's one pattern without %u
		r, ok := s.Parse(t)
		return ok && r.Channel == "" && r.Kind == KindQuery
	}
	if allowed, known := s.mayPublishHA(user, t); known {
		return allowed
	}
	r, ok := s.Parse(t)
	if !ok {
		return false
	}
	if r.Channel != "" { // a whisper channel: its members post, the floor speaks
		switch r.Kind {
		case KindFloorIn:
			return r.Identity == user && s.InWhisper(r.Room, r.Channel, user)
		case KindMessage:
			return r.Identity == user && s.IsFloor(user)
		case KindPhase, KindFloorOut:
			return s.IsFloor(user)
		}
		return false
	}
	switch r.Kind {
	case KindMessage:
		// A floor may speak into a room (realtime broadcasts) under its own
		// name, and publish what the room heard under the person's.
		// A member of a room whose robots are in Home Assistant sends what
		// its user typed there under that user's name.
		return r.Identity == user || (s.IsFloor(user) && s.voiced(r.Room, r.Identity)) ||
			(s.HA != nil && s.HA.Rooms[r.Room] && r.Identity == s.HA.User && s.IsMember(r.Room, user))
	case KindHeard:
		// A member reports what its body heard; a floor forwards the words
		// so far of the utterance under way under the person's name
		// (captions, runtime/hearing).
		return r.Identity == user && s.IsMember(r.Room, user) || (s.IsFloor(user) && s.Voices[r.Room] != "" && r.Identity == s.Voices[r.Room])
	case KindState, KindPresence, KindFloorIn, KindHold, KindSpeaking, KindForgot, KindFacts, KindForgets:
		return r.Identity == user && s.IsMember(r.Room, user)
	case KindResult, KindProbe:
		return r.Identity == user
	case KindMemory: // a request under one's own name
		return r.Identity == user
	case KindMemoryAnswer: // the device answers
		return r.Device == user
	case KindTurns, KindPhase, KindFloorOut, KindLeader:
		return s.IsFloor(user)
	case KindQuery:
		return true
	case KindHAState:
		return r.Identity == user && s.isHANode(user)
	case KindHACommand:
		return s.HA != nil && user == s.HA.User
	}
	return false
}

// MayRead is the read rule: any client — logged in, or anonymous ("")
// where a broker admits anonymous clients — may subscribe under the
// prefix, nothing outside it, and a filter that could match a device's
// results (its camera frames) only when the client is a member of a room
// or the device itself.
func (s Scheme) MayRead(user, filter string) bool {
	if allowed, known := s.mayReadHA(user, filter); known && user != "" {
		return allowed
	}
	if filter != s.Prefix+"/#" && !strings.HasPrefix(filter, s.Prefix+"/") {
		return false
	}
	if r, ok := s.Parse(filter); ok && (r.Kind == KindMemory || r.Kind == KindMemoryAnswer) {
		// A person's memory traffic: theirs and the device's only.
		return r.Identity == user || r.Device == user
	}
	if room, named := s.namesFacts(filter); named {
		return s.IsMember(room, user) // facts about people: the room's companions only
	}
	if room, ch, named := s.namesWhisper(filter); named && !s.IsFloor(user) && !s.InWhisper(room, ch, user) {
		return false // a whisper channel's traffic is for its members only
	}
	device, covers := s.coversResults(filter)
	return !covers || s.isAnyMember(user) || (device != "" && device == user)
}

// namesFacts reports whether filter is (or names only) one room's shared
// facts or forget logs topics (its members' only), and which room.
func (s Scheme) namesFacts(filter string) (room string, named bool) {
	rest, _ := strings.CutPrefix(filter, s.Prefix+"/")
	seg := strings.Split(rest, "/")
	if len(seg) != 4 || seg[0] != "rooms" || (seg[2] != "facts" && seg[2] != "forgets") || strings.ContainsAny(seg[1], "+#") {
		return "", false
	}
	return seg[1], true
}

// namesWhisper reports whether filter names one whisper channel of one
// room (a wildcard filter over many is allowed to subscribe; the broker
// then checks each message it would deliver, by its topic, and a
// non-member gets none of a channel's).
func (s Scheme) namesWhisper(filter string) (room, channel string, named bool) {
	rest, _ := strings.CutPrefix(filter, s.Prefix+"/")
	seg := strings.Split(rest, "/")
	if len(seg) < 4 || seg[0] != "rooms" || seg[2] != "whisper" {
		return "", "", false
	}
	if strings.ContainsAny(seg[1], "+#") || strings.ContainsAny(seg[3], "+#") {
		return "", "", false
	}
	return seg[1], seg[3], true
}

// coversResults reports whether filter could match some device's results
// topic, and which device it names ("" for a wildcard).
func (s Scheme) coversResults(filter string) (device string, covers bool) {
	rest, _ := strings.CutPrefix(filter, s.Prefix+"/")
	if filter == s.Prefix+"/#" {
		return "", true
	}
	want := []string{"devices", "", "results"}
	seg := strings.Split(rest, "/")
	for i, p := range seg {
		switch {
		case p == "#":
			return device, true
		case i >= len(want):
			return "", false
		case p == "+":
		case i == 1:
			device = p
		case p != want[i]:
			return "", false
		}
	}
	return device, len(seg) == len(want)
}

func (s Scheme) isAnyMember(user string) bool {
	for room := range s.Rosters {
		if s.IsMember(room, user) {
			return true
		}
	}
	return false
}

// ACL is the scheme's access rules in a broker-neutral form, rendered for
// Mosquitto (MosquittoACL) and for NATS (NATSUsers): patterns that hold
// for every identity (%u is the identity), and each named identity's own
// topics and filters.
type ACL struct {
	Patterns []Grant            // for everyone; "%u" stands for the identity
	Users    map[string][]Grant // the topics each identity writes and the filters it reads besides
}

// Grant is one ACL line: a topic written, or a filter read.
type Grant struct {
	Write bool
	Topic string
}

// add appends grants to user's list.
func (a *ACL) add(user string, write bool, topics ...string) {
	for _, t := range topics {
		a.Users[user] = append(a.Users[user], Grant{Write: write, Topic: t})
	}
}

// Identities is every identity the ACL names and the people given,
// sorted, each once.
func (a ACL) Identities(people []string) []string {
	names := a.Names()
	for _, p := range people {
		if _, ok := a.Users[p]; !ok {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	return dedupe(names)
}

// Names is every identity the ACL names, sorted.
func (a ACL) Names() []string {
	names := make([]string, 0, len(a.Users))
	for u := range a.Users {
		names = append(names, u)
	}
	sort.Strings(names)
	return names
}

// ACL is the rules of MayPublish and MayRead as ACL lines: what anyone
// may say under its own name and read, what only a room's companions say
// (and the devices' results they read), and what floors say.
func (s Scheme) ACL() ACL {
	p := s.Prefix
	a := ACL{Users: map[string][]Grant{}}
	for _, t := range []string{
		// Everything of a room but its whisper channels.
		"/rooms/+/messages/+",
		"/rooms/+/states/+",
		"/rooms/+/turns",
		"/rooms/+/presence/+",
		"/rooms/+/phase",
		"/rooms/+/floor/#",
		"/rooms/+/speaking/+",
		"/rooms/+/heard/+",
		"/rooms/+/forgot/+",
		"/devices/%u/memory/+",
		"/devices/+/memory/%u/answer",
		"/devices/+/queries",
		"/devices/%u/queries", // a body the ACL does not list (behind a robot's bridge) reads its own
		"/devices/%u/results",
		"/devices/%u/probe",
	} {
		a.Patterns = append(a.Patterns, Grant{Topic: p + t})
	}
	for _, t := range []string{
		"/devices/+/memory/%u",
		"/devices/%u/memory/+/answer",
		"/rooms/+/messages/%u",
		"/devices/%u/results",
		"/devices/%u/probe",
		"/devices/+/queries",
	} {
		a.Patterns = append(a.Patterns, Grant{Write: true, Topic: p + t})
	}
	rooms := make([]string, 0, len(s.Rosters))
	for room := range s.Rosters {
		rooms = append(rooms, room)
	}
	sort.Strings(rooms)
	for _, room := range rooms {
		for _, m := range s.Rosters[room] {
			a.add(m, true, s.Presence(room, m), s.State(room, m), s.FloorIn(room, m), s.FloorHold(room, m), s.Speaking(room, m), s.Heard(room, m), s.Forgot(room, m), s.Facts(room, m), s.Forgets(room, m))
		}
	}
	for _, room := range rooms {
		chs := make([]string, 0, len(s.Whispers[room]))
		for ch := range s.Whispers[room] {
			chs = append(chs, ch)
		}
		sort.Strings(chs)
		for _, ch := range chs {
			for _, m := range s.Whispers[room][ch] {
				a.add(m, true, s.PostIn(room, ch, m))
				a.add(m, false, s.space(room, ch, "#"))
			}
		}
	}
	a.Patterns = append(a.Patterns, s.haACL(&a)...)
	for _, u := range a.Names() {
		for _, room := range rooms {
			if s.IsMember(room, u) { // facts about people: the room's companions only
				a.add(u, false, s.FactsOf(room), s.ForgetsOf(room))
			}
		}
		if s.isAnyMember(u) {
			// Members ask devices to look: they read the results (camera frames).
			a.add(u, false, p+"/devices/+/results")
		}
	}
	for _, f := range s.FloorIDs {
		for _, t := range []string{"turns", "phase", "floor/out/+", "floor/leader",
			"whisper/+/phase", "whisper/+/floor/out/+", "whisper/+/messages/" + f} {
			a.add(f, true, p+"/rooms/+/"+t)
		}
		a.add(f, false, p+"/rooms/+/whisper/#")
		for _, room := range slices.Sorted(maps.Keys(s.Voices)) {
			if u := s.Voices[room]; u != "" {
				a.add(f, true, s.Message(room, u), s.Heard(room, u))
			}
		}
		for _, room := range slices.Sorted(maps.Keys(s.People)) {
			for _, p := range s.People[room] {
				a.add(f, true, s.Message(room, p))
			}
		}
	}
	return a
}

// MosquittoACL renders the ACL as a Mosquitto acl_file for every identity
// the scheme names and the people given (the persons' apps and any other
// identity with a password): a pattern line per rule that names the
// identity (%u), then a block per identity with the rules that hold for
// everyone written out after its own, as topic lines (writes first). A rule
// for everyone is never a pattern without %u: Mosquitto warns of each on
// every start. The topic lines before the first user are for clients
// without a username, where anonymous clients are admitted. An identity
// the file does not list only has the %u patterns: it publishes under
// its own name and reads nothing of the rooms.
func (s Scheme) MosquittoACL(people ...string) string {
	a := s.ACL()
	var named, everyone []Grant
	for _, g := range a.Patterns {
		if strings.Contains(g.Topic, "%u") {
			named = append(named, g)
		} else {
			everyone = append(everyone, g)
		}
	}
	var b strings.Builder
	b.WriteString("# Chorus ACL, generated by runtime/topic: every identity publishes only under its own name;\n")
	b.WriteString("# only a room's members (its companions) announce presence, vote, post and hold.\n")
	for _, g := range named {
		b.WriteString("pattern " + g.access() + " " + g.Topic + "\n")
	}
	b.WriteString("\n# Clients without a username, where anonymous clients are admitted.\n")
	for _, g := range everyone {
		b.WriteString("topic " + g.access() + " " + g.Topic + "\n")
	}
	for _, u := range a.Identities(people) {
		b.WriteString("\nuser " + u + "\n")
		for _, gs := range [][]Grant{a.Users[u], everyone} {
			gs = slices.Clone(gs)
			sort.SliceStable(gs, func(i, j int) bool { return gs[i].Write && !gs[j].Write })
			for _, g := range gs {
				b.WriteString("topic " + g.access() + " " + g.Topic + "\n")
			}
		}
	}
	return b.String()
}

func (g Grant) access() string {
	if g.Write {
		return "write"
	}
	return "read"
}
