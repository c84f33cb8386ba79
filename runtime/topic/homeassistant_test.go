package topic

import (
	"strings"
	"testing"
)

func TestHomeAssistantACL(t *testing.T) {
	s := New("chorus").WithRoster("lab", []string{"kyoko", "hana"}).
		WithHomeAssistant("lab", "homeassistant", "ha", "kyoko_node", "kyoko").
		WithHomeAssistant("lab", "homeassistant", "ha", "hana", "hana")
	checkPublish(t, s, []access{
		{"kyoko", "homeassistant/device/kyoko_node/config", true},
		{"hana", "homeassistant/device/kyoko_node/config", false},
		{"ha", "homeassistant/device/kyoko_node/config", false},
		{"ha", "homeassistant/status", true},
		{"kyoko", "homeassistant/status", false},
		{"kyoko", "homeassistant/sensor/x/config", false},
		{"kyoko", "chorus/ha/kyoko/state", true},
		{"dan", "chorus/ha/dan/state", false}, // not a robot in Home Assistant
		{"hana", "chorus/ha/kyoko/state", false},
		{"ha", "chorus/ha/kyoko/mute/set", true},
		{"kyoko", "chorus/ha/kyoko/mute/set", false},
		{"mallory", "chorus/ha/kyoko/mute/set", false},
		{"kyoko", "chorus/rooms/lab/messages/ha", true}, // what was typed in the say box
		{"mallory", "chorus/rooms/lab/messages/ha", false},
		{"ha", "chorus/rooms/lab/messages/ha", true},
		{"ha", "chorus/rooms/lab/states/ha", false},
	})
	checkRead(t, s, []access{
		{"ha", "homeassistant/#", true},
		{"kyoko", "homeassistant/status", true},
		{"kyoko", "homeassistant/#", false},
		{"kyoko", "homeassistant/device/kyoko_node/config", true},
		{"kyoko", "homeassistant/device/hana/config", false},
		{"mallory", "homeassistant/status", false},
		{"ha", "chorus/ha/#", true},
		{"ha", "chorus/devices/+/results", false}, // camera frames are for the room's members
	})
	acl := aclHas(t, s, "user kyoko\n", "topic write chorus/ha/kyoko/+", "topic read homeassistant/device/kyoko_node/config", "\nuser ha\ntopic write homeassistant/status\ntopic write chorus/ha/+/+/set\ntopic read homeassistant/#\n",
		"topic write homeassistant/device/kyoko_node/config", "topic write chorus/rooms/lab/messages/ha")
	if strings.Contains(acl, "%u/+") {
		t.Error("a %u pattern before a wildcard: a username with '/' would write another robot's commands")
	}
	ha, _, _ := strings.Cut(acl[strings.Index(acl, "\nuser ha\n")+1:], "\n\n")
	if strings.Contains(ha, "chorus/devices/+/results") {
		t.Error("Home Assistant may read the robots' camera frames")
	}
	if r, ok := s.Parse("chorus/ha/kyoko/mute/set"); !ok || r.Kind != KindHACommand || r.Identity != "kyoko" || r.Entity != "mute" {
		t.Errorf("parse: %+v %v", r, ok)
	}
}
