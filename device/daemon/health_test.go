package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A device whose device id equals its companion id (the default MQTT
// username then is that id too) stays healthy after speaking: before, the
// watchdog's bus probe and the query client shared the results filter on
// one connection, the second handler replaced the first, and /healthz (and
// so systemd's watchdog) failed after the first utterance (issue 9,
// defect 4).
func TestHealthyAfterEachUtteranceWhenDeviceAndCompanionShareAnID(t *testing.T) {
	br := bustest.StartEmbedded(t, bustest.Options{ACL: true, Rosters: map[string][]string{"lab": {"bot"}}})
	port := bustest.FreePort(t)
	_, stop, _ := start(t, load(t, fmt.Sprintf(botYAML+`drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "127.0.0.1:%d"}
`, br.URL(), port)))
	defer stop()
	user, said, closeUser := userInLab(t, bus.Options{Broker: br.URL()}, 16)
	defer closeUser()
	health := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	for i := range 2 {
		if err := user.SendMessage(context.Background(), protocol.NewMessage(protocol.NewID(), "user", []string{"bot"}, "Bot, what do you think?", "")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-said:
		case <-time.After(10 * time.Second):
			t.Fatalf("utterance %d: bot did not answer", i+1)
		}
		if code, body := get(t, health); code != 200 {
			t.Fatalf("after utterance %d: /healthz %d %q", i+1, code, body)
		}
	}
}
