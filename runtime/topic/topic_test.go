package topic

import (
	"strings"
	"testing"
)

// access is a case of one user's right to publish to a topic, or to
// subscribe to a filter.
type access struct {
	user, topic string
	want        bool
}

// checkPublish fails t for each case MayPublish answers otherwise.
func checkPublish(t *testing.T, s Scheme, cases []access) {
	t.Helper()
	for _, c := range cases {
		if got := s.MayPublish(c.user, c.topic); got != c.want {
			t.Errorf("MayPublish(%q, %q) = %v, want %v", c.user, c.topic, got, c.want)
		}
	}
}

// checkRead fails t for each case MayRead answers otherwise (topic is the
// filter).
func checkRead(t *testing.T, s Scheme, cases []access) {
	t.Helper()
	for _, c := range cases {
		if got := s.MayRead(c.user, c.topic); got != c.want {
			t.Errorf("MayRead(%q, %q) = %v, want %v", c.user, c.topic, got, c.want)
		}
	}
}

// aclHas renders s's Mosquitto ACL, fails t for each part it lacks and
// returns it.
func aclHas(t *testing.T, s Scheme, parts ...string) string {
	t.Helper()
	acl := s.MosquittoACL()
	for _, want := range parts {
		if !strings.Contains(acl, want) {
			t.Errorf("the ACL lacks %q:\n%s", want, acl)
		}
	}
	return acl
}

func TestParseRoundTrip(t *testing.T) {
	s := New("")
	tests := []struct {
		topic string
		want  Route
	}{
		{s.Message("lr", "kyoko"), Route{Kind: KindMessage, Room: "lr", Identity: "kyoko"}},
		{s.State("lr", "kyoko"), Route{Kind: KindState, Room: "lr", Identity: "kyoko"}},
		{s.Turns("lr"), Route{Kind: KindTurns, Room: "lr"}},
		{s.Presence("lr", "hana"), Route{Kind: KindPresence, Room: "lr", Identity: "hana"}},
		{s.Phase("lr"), Route{Kind: KindPhase, Room: "lr"}},
		{s.FloorIn("lr", "hana"), Route{Kind: KindFloorIn, Room: "lr", Identity: "hana"}},
		{s.FloorOut("lr", "hana"), Route{Kind: KindFloorOut, Room: "lr", Identity: "hana"}},
		{s.FloorLeader("lr"), Route{Kind: KindLeader, Room: "lr"}},
		{s.FloorHold("lr", "kyoko"), Route{Kind: KindHold, Room: "lr", Identity: "kyoko"}},
		{s.Speaking("lr", "kyoko"), Route{Kind: KindSpeaking, Room: "lr", Identity: "kyoko"}},
		{s.Heard("lr", "kyoko"), Route{Kind: KindHeard, Room: "lr", Identity: "kyoko"}},
		{s.Queries("pi5"), Route{Kind: KindQuery, Device: "pi5"}},
		{s.Results("pi5"), Route{Kind: KindResult, Device: "pi5", Identity: "pi5"}},
		{s.Probe("pi5"), Route{Kind: KindProbe, Device: "pi5", Identity: "pi5"}},
		{s.PhaseIn("lr", "wolves"), Route{Kind: KindPhase, Room: "lr", Channel: "wolves"}},
		{s.PostIn("lr", "wolves", "hana"), Route{Kind: KindFloorIn, Room: "lr", Channel: "wolves", Identity: "hana"}},
		{s.AckIn("lr", "wolves", "hana"), Route{Kind: KindFloorOut, Room: "lr", Channel: "wolves", Identity: "hana"}},
		{s.BroadcastIn("lr", "wolves", "floor"), Route{Kind: KindMessage, Room: "lr", Channel: "wolves", Identity: "floor"}},
		{s.PhaseIn("lr", ""), Route{Kind: KindPhase, Room: "lr"}},
	}
	for _, tt := range tests {
		got, ok := s.Parse(tt.topic)
		if !ok || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.topic, got, ok, tt.want)
		}
	}
	for _, bad := range []string{"", "chorus", "other/rooms/lr/turns", "chorus/rooms/lr", "chorus/rooms//turns",
		"chorus/rooms/lr/states/a/b", "chorus/devices/pi5/other", "chorus/rooms/lr/floor/x/y",
		"chorus/rooms/lr/whisper/wolves", "chorus/rooms/lr/whisper/wolves/states/hana", "chorus/rooms/lr/whisper/wolves/floor/hold/hana"} {
		if r, ok := s.Parse(bad); ok {
			t.Errorf("Parse(%q) = %+v, want not ok", bad, r)
		}
	}
}

func TestMayPublish(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko", "hana"})
	checkPublish(t, s, []access{
		{"kyoko", s.State("lr", "kyoko"), true},
		{"kyoko", s.State("lr", "hana"), false},
		{"kyoko", s.Presence("lr", "kyoko"), true},
		{"kyoko", s.Presence("lr", "hana"), false},
		{"kyoko", s.Message("lr", "kyoko"), true},
		{"kyoko", s.Message("lr", "user"), false},
		{"kyoko", s.Turns("lr"), false},
		{"floor", s.Turns("lr"), true},
		{"floor", s.Phase("lr"), true},
		{"kyoko", s.Phase("lr"), false},
		{"floor", s.FloorLeader("lr"), true},
		{"kyoko", s.FloorLeader("lr"), false},
		{"pi5", s.Results("pi5"), true},
		{"kyoko", s.FloorHold("lr", "kyoko"), true},
		{"kyoko", s.FloorHold("lr", "hana"), false},
		{"kyoko", s.Speaking("lr", "kyoko"), true},
		{"kyoko", s.Speaking("lr", "hana"), false},
		{"user", s.Speaking("lr", "user"), false}, // a user has no voice in the room's status
		{"pi4", s.Results("pi5"), false},
		{"kyoko", s.Queries("pi5"), true},
		// Anonymous (a loopback broker that admits it): as Mosquitto with the
		// rendered ACL, queries only (issue 27).
		{"", s.Queries("pi5"), true},
		{"", s.Message("lr", "user"), false},
		{"", s.Presence("lr", "kyoko"), false},
		{"", s.Results("pi5"), false},
		{"kyoko", "chorus/other", false},
		{"kyoko", "elsewhere/rooms/lr/states/kyoko", false},
		{"kyoko", "chorus/rooms/+/states/kyoko", false},
		// Users (not on the roster) may speak, never vote or be present.
		{"user", s.Message("lr", "user"), true},
		{"user", s.State("lr", "user"), false},
		{"user", s.Presence("lr", "user"), false},
		{"user", s.FloorHold("lr", "user"), false},
		{"user", s.FloorIn("lr", "user"), false},
		{"kyoko", s.State("other-room", "kyoko"), false},
		{"pi5", s.Probe("pi5"), true},
		{"pi4", s.Probe("pi5"), false},
		// Hearing: a member reports what its body heard under its own
		// name; nobody else may.
		{"kyoko", s.Heard("lr", "kyoko"), true},
		{"kyoko", s.Heard("lr", "hana"), false},
		{"user", s.Heard("lr", "user"), false},
		{"floor", s.Heard("lr", "kyoko"), false},
		// Without a voice for the room, a floor speaks only as itself.
		{"floor", s.Message("lr", "user"), false},
		{"floor", s.Message("lr", "floor"), true},
	})
}

// The floor publishes what a room heard as the room's person (hearing.user),
// and as nobody else: not as a companion, not in another room.
func TestMayPublishHeardVoice(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko", "hana"}).WithVoice("lr", "guest")
	checkPublish(t, s, []access{
		{"floor", s.Message("lr", "guest"), true},
		{"floor", s.Message("lr", "kyoko"), false},
		{"floor", s.Message("lr", "user"), false},
		{"floor", s.Message("kitchen", "guest"), false},
		{"kyoko", s.Message("lr", "guest"), false},
		{"guest", s.Message("lr", "guest"), true},
		// The words so far of the utterance under way (captions).
		{"floor", s.Heard("lr", "guest"), true},
		{"floor", s.Heard("lr", "kyoko"), false},
		{"floor", s.Heard("kitchen", "guest"), false},
		{"kyoko", s.Heard("lr", "guest"), false},
		{"kyoko", s.Heard("lr", "kyoko"), true},
	})
	acl := aclHas(t, s,
		"user kyoko\n",
		"topic write chorus/rooms/lr/heard/kyoko\n",
		"user floor\n",
	)
	floor := acl[strings.Index(acl, "user floor\n"):]
	if !strings.Contains(floor, "topic read chorus/rooms/+/heard/+\n") {
		t.Errorf("the floor cannot read what the robots heard:\n%s", floor)
	}
	if !strings.Contains(floor, "topic write chorus/rooms/lr/messages/guest\n") || !strings.Contains(floor, "topic write chorus/rooms/lr/heard/guest\n") {
		t.Errorf("the floor's block lacks the room's voice:\n%s", floor)
	}
}

// The floor publishes what a room heard under the people its robots know
// by voice (hearing.people), in that room only; captions stay the
// hearing user's.
func TestMayPublishKnownVoices(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko", "hana"}).WithVoice("lr", "guest").WithPeople("lr", []string{"alice", "sam"})
	checkPublish(t, s, []access{
		{"floor", s.Message("lr", "alice"), true},
		{"floor", s.Message("lr", "sam"), true},
		{"floor", s.Message("lr", "guest"), true},
		{"floor", s.Message("lr", "bob"), false},
		{"floor", s.Message("kitchen", "alice"), false},
		{"floor", s.Heard("lr", "alice"), false},
		{"kyoko", s.Message("lr", "alice"), false},
		{"alice", s.Message("lr", "alice"), true},
	})
	acl := aclHas(t, s, "user floor\n")
	floor := acl[strings.Index(acl, "user floor\n"):]
	for _, p := range []string{"alice", "sam"} {
		if !strings.Contains(floor, "topic write chorus/rooms/lr/messages/"+p+"\n") {
			t.Errorf("the floor's block lacks %s:\n%s", p, floor)
		}
	}
}

// A device's results (camera frames) are readable by the rooms' members and
// the device itself only; everything else under the prefix by anyone
// logged in.
func TestMayRead(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko"})
	checkRead(t, s, []access{
		{"user", "chorus/rooms/lr/#", true},
		{"user", "chorus/rooms/+/messages/+", true},
		{"user", "chorus/devices/pi5/queries", true},
		{"user", "chorus/#", false},
		{"user", "chorus/devices/+/results", false},
		{"user", "chorus/devices/pi5/results", false},
		{"user", "chorus/devices/#", false},
		{"user", "chorus/+/+/results", false},
		{"user", "chorus/devices/pi5/#", false},
		{"kyoko", "chorus/devices/pi5/results", true},
		{"kyoko", "chorus/#", true},
		{"pi5", "chorus/devices/pi5/results", true},
		{"pi5", "chorus/devices/pi4/results", false},
		{"user", "other/#", false},
		// Anonymous reads the rooms, never a device's results (issue 27).
		{"", "chorus/rooms/lr/#", true},
		{"", "chorus/rooms/lr/messages/kyoko", true},
		{"", "chorus/devices/pi5/results", false},
		{"", "chorus/#", false},
		// Shared facts are about people: the room's companions read them.
		{"kyoko", "chorus/rooms/lr/facts/hana", true},
		{"kyoko", "chorus/rooms/lr/facts/+", true},
		{"user", "chorus/rooms/lr/facts/kyoko", false},
		{"user", "chorus/rooms/lr/facts/+", false},
		{"", "chorus/rooms/lr/facts/kyoko", false},
		{"kyoko", "chorus/rooms/other/facts/+", false},
		// A person's memory traffic: theirs and the device's.
		{"alice", "chorus/devices/pi5/memory/alice/answer", true},
		{"bob", "chorus/devices/pi5/memory/alice/answer", false},
		{"pi5", "chorus/devices/pi5/memory/alice", true},
		{"kyoko", "chorus/devices/pi5/memory/alice", false},
	})
}

func TestMemoryTopicsArePublishedByTheirOwners(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko", "hana"})
	for _, c := range []struct {
		user, topic string
		want        bool
	}{
		{"kyoko", "chorus/rooms/lr/facts/kyoko", true},
		{"kyoko", "chorus/rooms/lr/facts/hana", false},
		{"user", "chorus/rooms/lr/facts/user", false},
		{"kyoko", "chorus/rooms/lr/forgot/kyoko", true},
		{"user", "chorus/rooms/lr/forgot/user", false},
		{"alice", "chorus/devices/pi5/memory/alice", true},
		{"alice", "chorus/devices/pi5/memory/bob", false},
		{"pi5", "chorus/devices/pi5/memory/alice/answer", true},
		{"alice", "chorus/devices/pi5/memory/alice/answer", false},
	} {
		if got := s.MayPublish(c.user, c.topic); got != c.want {
			t.Errorf("MayPublish(%q, %q) = %v, want %v", c.user, c.topic, got, c.want)
		}
	}
}

// A whisper channel's traffic is its members' and the floor's only: they
// post in it, the floor speaks in it, and a filter naming it is refused to
// anyone else (issue 12). A wildcard filter over the room subscribes, and
// the broker then checks each message by its topic.
func TestWhisperChannels(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko", "hana", "aya"}).WithWhisper("lr", "wolves", []string{"kyoko", "hana"})
	checkPublish(t, s, []access{
		{"kyoko", s.PostIn("lr", "wolves", "kyoko"), true},
		{"aya", s.PostIn("lr", "wolves", "aya"), false}, // a member of the room, not of the channel
		{"kyoko", s.PostIn("lr", "wolves", "hana"), false},
		{"floor", s.PhaseIn("lr", "wolves"), true},
		{"floor", s.AckIn("lr", "wolves", "kyoko"), true},
		{"floor", s.BroadcastIn("lr", "wolves", "floor"), true},
		{"kyoko", s.BroadcastIn("lr", "wolves", "kyoko"), false},
		{"kyoko", s.PhaseIn("lr", "wolves"), false},
	})
	checkRead(t, s, []access{
		{"kyoko", "chorus/rooms/lr/whisper/wolves/#", true},
		{"kyoko", s.BroadcastIn("lr", "wolves", "floor"), true},
		{"floor", s.PostIn("lr", "wolves", "kyoko"), true},
		{"aya", "chorus/rooms/lr/whisper/wolves/#", false},
		{"aya", s.BroadcastIn("lr", "wolves", "floor"), false},
		{"user", s.PhaseIn("lr", "wolves"), false},
		{"user", "chorus/rooms/lr/#", true},           // subscribes; the broker filters each message
		{"user", "chorus/rooms/lr/whisper/+/#", true}, // the same
		{"user", "chorus/rooms/lr/phase", true},
	})
	acl := aclHas(t, s,
		"user hana\ntopic write chorus/rooms/lr/presence/hana",
		"topic write chorus/rooms/lr/whisper/wolves/floor/in/hana\ntopic read chorus/rooms/lr/whisper/wolves/#",
		"topic read chorus/rooms/+/whisper/#",
	)
	if strings.Contains(acl, "pattern read chorus/rooms/#") {
		t.Errorf("the ACL lets anyone read every whisper channel:\n%s", acl)
	}
}

// Mosquitto warns, on every start, of each pattern line without %u or %c
// ("ACL pattern '…' does not contain '%c' or '%u'"): the rules for
// everyone are written into each identity's block instead, the people's
// included, and for clients without a username before the first user.
func TestMosquittoACLHasNoPatternMosquittoWarnsOf(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko", "hana"}).WithVoice("lr", "guest")
	acl := s.MosquittoACL("sam", "kyoko")
	for _, line := range strings.Split(acl, "\n") {
		if strings.HasPrefix(line, "pattern ") && !strings.Contains(line, "%u") && !strings.Contains(line, "%c") {
			t.Errorf("Mosquitto warns of %q", line)
		}
	}
	blocks := map[string]string{}
	for _, b := range strings.Split(acl, "\n\n") {
		if name, ok := strings.CutPrefix(b, "user "); ok {
			name, rest, _ := strings.Cut(name, "\n")
			if _, twice := blocks[name]; twice {
				t.Errorf("user %s has two blocks", name)
			}
			blocks[name] = rest
		}
	}
	anonymous := acl[:strings.Index(acl, "\nuser ")]
	for _, who := range []string{"", "kyoko", "hana", "sam", "floor"} {
		block, ok := blocks[who]
		if who == "" {
			block, ok = anonymous, true
		}
		if !ok {
			t.Errorf("no block for %q:\n%s", who, acl)
			continue
		}
		for _, want := range []string{"topic read chorus/rooms/+/messages/+\n", "topic read chorus/rooms/+/turns\n", "topic write chorus/devices/+/queries\n"} {
			if !strings.Contains(block, want) {
				t.Errorf("%q's block lacks %q", who, want)
			}
		}
	}
	if _, ok := blocks["mallory"]; ok {
		t.Error("an identity nobody named has a block")
	}
	if !strings.Contains(acl, "pattern write chorus/rooms/+/messages/%u\n") {
		t.Error("the identities' own messages are no longer a %u pattern")
	}
}
