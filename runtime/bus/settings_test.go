package bus

import (
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/settings"
)

func TestBrokersAreChecked(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string // "" when none
	}{
		{Settings{Broker: "tcp://a:1883", Brokers: []string{"tcp://b:1883", "tcp://c:1883"}}, ""},
		{Settings{Broker: "tcp://a:1883", Brokers: []string{"http://b"}}, "brokers[0]: must be tcp://host:port or ssl://host:port"},
		{Settings{Broker: "ssl://a:8883", Brokers: []string{"tcp://b:1883"}}, "brokers[0]: \"tcp://b:1883\": every endpoint of one room uses the same scheme"},
		{Settings{Broker: "tcp://a:1883", Brokers: make([]string, 17)}, "brokers: at most 16 endpoints"},
	} {
		c.s.SetDefaults()
		c.s.Username = "kyoko"
		var p settings.Problems
		c.s.Check(p.In("mqtt"))
		got := strings.Join(p.List(), "\n")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, "mqtt."+c.want) {
			t.Errorf("%+v: problems %q, want %q", c.s.Brokers, got, c.want)
		}
	}
}
