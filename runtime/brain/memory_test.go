package brain

import (
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/tool"
)

// The card's word "body" allows every knowledge tool the body declared,
// and no other tool it does not name; an MCP server's tool is the
// robot's config's to allow.
func TestCardAllowsKnowledge(t *testing.T) {
	ts := []tool.Tool{
		{Name: "weather", Source: tool.FromBody},
		{Name: "date_time"},
		{Name: "news", Source: tool.FromBody},
		{Name: "ha_HassTurnOn", Source: tool.FromMCP("ha")},
		{Name: "body_HassTurnOff", Source: tool.FromMCP("body")}, // a server may be named body
	}
	for _, tc := range []struct {
		list []string
		want string
	}{
		{nil, "ha_HassTurnOn,body_HassTurnOff"},
		{[]string{"body"}, "weather,news,ha_HassTurnOn,body_HassTurnOff"},
		{[]string{"body", "date_time"}, "weather,date_time,news,ha_HassTurnOn,body_HassTurnOff"},
		{[]string{"news"}, "news,ha_HassTurnOn,body_HassTurnOff"},
		{[]string{"date_time"}, "date_time,ha_HassTurnOn,body_HassTurnOff"},
	} {
		var names []string
		for _, tl := range ts {
			if (Card{Knowledge: tc.list}).AllowsKnowledge(tl) {
				names = append(names, tl.Name)
			}
		}
		if got := strings.Join(names, ","); got != tc.want {
			t.Errorf("card.knowledge %v allows %s, want %s", tc.list, got, tc.want)
		}
	}
}
