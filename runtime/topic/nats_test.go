package topic

import (
	"strings"
	"testing"
)

func TestNATSSubject(t *testing.T) {
	for _, tt := range []struct{ mqtt, nats string }{
		{"chorus/rooms/lab/states/kyoko", "chorus.rooms.lab.states.kyoko"},
		{"chorus/rooms/+/messages/+", "chorus.rooms.*.messages.*"},
		{"chorus/rooms/+/floor/#", "chorus.rooms.*.floor.>"},
		{"chorus/rooms/lab/messages/dr.who", "chorus.rooms.lab.messages.dr//who"},
		{"chorus/rooms/lab/messages/a*b", "chorus.rooms.lab.messages.a*b"},
	} {
		if got := NATSSubject(tt.mqtt); got != tt.nats {
			t.Errorf("NATSSubject(%q) = %q, want %q", tt.mqtt, got, tt.nats)
		}
	}
}

// natsPermits is how nats-server matches a subject (or a subscription's
// subject) against an allow list: '*' is one token, '>' one or more, and
// a subscription's own wildcard is covered only by a wildcard.
func natsPermits(allow []string, subject string) bool {
	for _, a := range allow {
		if natsCovers(strings.Split(a, "."), strings.Split(subject, ".")) {
			return true
		}
	}
	return false
}

func natsCovers(allow, subj []string) bool {
	for i, a := range allow {
		if a == ">" {
			return len(subj) > i
		}
		if i >= len(subj) {
			return false
		}
		switch {
		case a == "*":
			if subj[i] == ">" {
				return false
			}
		case a != subj[i]:
			return false
		}
	}
	return len(allow) == len(subj)
}

// The users and permissions rendered for NATS say exactly what MayPublish
// says, for every kind of topic and every kind of identity: the room's
// rules are the same on both brokers.
func TestNATSUsersPublishAsMayPublish(t *testing.T) {
	s := New("chorus").WithRoster("lab", []string{"kyoko", "hana"}).WithRoster("hall", []string{"aya"}).
		WithWhisper("lab", "wolves", []string{"kyoko"}).WithVoice("lab", "guest").WithPeople("lab", []string{"alice", "dr.who"}).
		WithHomeAssistant("lab", "homeassistant", "ha", "kyoko_node", "kyoko")
	people := []string{"alice", "guest", "dev-kyoko", "dr.who"}
	users, err := s.NATSUsers(people)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]NATSUser{}
	for _, u := range users {
		byName[u.Name] = u
	}
	for _, want := range []string{"kyoko", "hana", "aya", "floor", "ha", "alice", "guest", "dev-kyoko", "dr.who"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("no NATS user %s among %d", want, len(users))
		}
	}
	var topics []string
	for _, room := range []string{"lab", "hall", "attic"} {
		for _, id := range []string{"kyoko", "hana", "aya", "floor", "ha", "alice", "guest", "dr.who"} {
			topics = append(topics, s.Message(room, id), s.State(room, id), s.Presence(room, id), s.FloorIn(room, id),
				s.FloorOut(room, id), s.FloorHold(room, id), s.Speaking(room, id), s.Heard(room, id), s.Forgot(room, id),
				s.Facts(room, id), s.Forgets(room, id), s.PostIn(room, "wolves", id), s.BroadcastIn(room, "wolves", id),
				s.Queries(id), s.Results(id), s.Probe(id), s.Memory(id, "alice"), s.MemoryAnswer(id, "alice"),
				s.HAState(id, "mute"), s.HACommand(id, "mute"))
		}
		topics = append(topics, s.Turns(room), s.Phase(room), s.FloorLeader(room), s.PhaseIn(room, "wolves"))
	}
	topics = append(topics, s.HAStatus(), s.HADiscovery("kyoko_node"), s.HADiscovery("other"), "elsewhere/x", "chorus/unknown")
	for name, u := range byName {
		for _, tp := range topics {
			if got, want := natsPermits(u.Publish, NATSSubject(tp)), s.MayPublish(name, tp); got != want {
				t.Errorf("%s publishing %s: NATS permits %v, MayPublish says %v", name, tp, got, want)
			}
		}
	}
}

// Every filter chorusd and chorus subscribe to is allowed on NATS to
// exactly those MayRead lets read it (NATS refuses a subscription its
// allow list does not cover, where Mosquitto filters each message).
func TestNATSUsersSubscribeAsMayRead(t *testing.T) {
	s := New("chorus").WithRoster("lab", []string{"kyoko", "hana"}).WithWhisper("lab", "wolves", []string{"kyoko"}).
		WithHomeAssistant("lab", "homeassistant", "ha", "kyoko_node", "kyoko")
	users, err := s.NATSUsers([]string{"alice", "dev-kyoko"})
	if err != nil {
		t.Fatal(err)
	}
	var filters []string
	for _, kind := range []string{"messages", "states", "presence", "speaking", "heard", "forgot", "facts", "forgets", "floor/in", "floor/out", "floor/hold"} {
		filters = append(filters, "chorus/rooms/lab/"+kind+"/+")
	}
	filters = append(filters, s.Turns("lab"), s.Phase("lab"), s.FloorLeader("lab"), s.PostsIn("lab", "wolves"), s.PhaseIn("lab", "wolves"),
		s.HAStatus(), s.HADiscovery("kyoko_node"), s.HACommands("kyoko"))
	for _, dev := range []string{"kyoko", "dev-kyoko", "alice", "floor"} {
		filters = append(filters, s.Queries(dev), s.Results(dev), s.MemoryRequests(dev), s.MemoryAnswer("+", dev))
	}
	for _, u := range users {
		// A device's watchdog reads its own probe (MayRead, the embedded
		// broker's rule, lets anyone read any; the ACL only one's own).
		if !natsPermits(u.Subscribe, NATSSubject(s.Probe(u.Name))) {
			t.Errorf("%s may not read its own probe", u.Name)
		}
		for _, f := range filters {
			if got, want := natsPermits(u.Subscribe, NATSSubject(f)), s.MayRead(u.Name, f); got != want {
				t.Errorf("%s subscribing to %s: NATS permits %v, MayRead says %v", u.Name, f, got, want)
			}
		}
		if natsPermits(u.Subscribe, NATSSubject("chorus/#")) {
			t.Errorf("%s may subscribe to everything", u.Name)
		}
	}
}

func TestNATSUsersRefuseAWildcardIdentity(t *testing.T) {
	s := New("chorus").WithRoster("lab", []string{"kyoko"})
	if _, err := s.NATSUsers([]string{"*"}); err == nil || !strings.Contains(err.Error(), `"*"`) {
		t.Fatalf("an identity \"*\": %v", err)
	}
}

func TestNATSAuthorizationQuotes(t *testing.T) {
	out := NATSAuthorization([]NATSUser{{Name: "kyoko", Publish: []string{"chorus.rooms.lab.states.kyoko"}, Subscribe: []string{"$MQTT.sub.>"}}},
		func(string) string { return `p"w` })
	for _, want := range []string{`user: "kyoko"`, `password: "p\"w"`, `publish: {allow: ["chorus.rooms.lab.states.kyoko"]}`, `subscribe: {allow: ["$MQTT.sub.>"]}`} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s:\n%s", want, out)
		}
	}
}
