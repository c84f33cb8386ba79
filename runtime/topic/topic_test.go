package topic

import "testing"

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
		{s.Queries("pi5"), Route{Kind: KindQuery, Device: "pi5"}},
		{s.Results("pi5"), Route{Kind: KindResult, Device: "pi5", Identity: "pi5"}},
		{s.Probe("pi5"), Route{Kind: KindProbe, Device: "pi5", Identity: "pi5"}},
	}
	for _, tt := range tests {
		got, ok := s.Parse(tt.topic)
		if !ok || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.topic, got, ok, tt.want)
		}
	}
	for _, bad := range []string{"", "chorus", "other/rooms/lr/turns", "chorus/rooms/lr", "chorus/rooms//turns",
		"chorus/rooms/lr/states/a/b", "chorus/devices/pi5/other", "chorus/rooms/lr/floor/x/y"} {
		if r, ok := s.Parse(bad); ok {
			t.Errorf("Parse(%q) = %+v, want not ok", bad, r)
		}
	}
}

func TestMayPublish(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko", "hana"})
	tests := []struct {
		user, topic string
		want        bool
	}{
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
		{"", s.Queries("pi5"), false},
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
	}
	for _, tt := range tests {
		if got := s.MayPublish(tt.user, tt.topic); got != tt.want {
			t.Errorf("MayPublish(%q, %q) = %v, want %v", tt.user, tt.topic, got, tt.want)
		}
	}
}

// A device's results (camera frames) are readable by the rooms' members and
// the device itself only; everything else under the prefix by anyone
// logged in.
func TestMayRead(t *testing.T) {
	s := New("chorus").WithRoster("lr", []string{"kyoko"})
	tests := []struct {
		user, filter string
		want         bool
	}{
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
		{"", "chorus/rooms/lr/#", false},
	}
	for _, tt := range tests {
		if got := s.MayRead(tt.user, tt.filter); got != tt.want {
			t.Errorf("MayRead(%q, %q) = %v, want %v", tt.user, tt.filter, got, tt.want)
		}
	}
}
