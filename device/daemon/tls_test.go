package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/bus/bustest"
	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// A room over TLS with client certificates, from config alone (issue 10):
// one device hosts the embedded broker on a TLS listener that asks for
// client certificates, another joins over ssl:// with its certificate, and
// a user with a certificate is answered.
func TestRoomOverTLSWithClientCertificates(t *testing.T) {
	pki := bustest.NewPKI(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users.yaml")
	os.WriteFile(users, []byte("floor-box: pw-box\nfloor: pw-floor\nbot: pw-bot\nuser: pw-user\n"), 0o600)
	t.Setenv("TEST_BOX_PW", "pw-box")
	t.Setenv("TEST_FLOOR_PW", "pw-floor")
	t.Setenv("TEST_BOT_PW", "pw-bot")
	port := bustest.FreePort(t)
	url := fmt.Sprintf("ssl://127.0.0.1:%d", port)
	tlsYAML := fmt.Sprintf("tls: {ca_file: %s, cert_file: %s, key_file: %s}", pki.CA, pki.ClientCert, pki.ClientKey)
	host := load(t, fmt.Sprintf(`version: 1
device: {id: floor-box}
room: {name: lab, members: [bot], floor: true, vote_timeout: 1s}
mqtt:
  broker: %s
  password_env: TEST_BOX_PW
  floor_password_env: TEST_FLOOR_PW
  %s
  embedded: {enabled: true, listen: "127.0.0.1:%d", users_file: %s, tls_cert: %s, tls_key: %s, tls_client_ca: %s}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`, url, tlsYAML, port, users, pki.ServerCert, pki.ServerKey, pki.CA))
	_, stopHost, hostErr := run(t, host)
	defer func() { stopHost(); <-hostErr }()
	bot := load(t, fmt.Sprintf(`version: 1
device: {id: bot}
room: {name: lab, members: [bot], vote_timeout: 1s, pause: 10ms}
mqtt: {broker: %s, password_env: TEST_BOT_PW, %s}
companion: {id: bot, name: Bot, sample_lines: ["Hi."], language: en}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
`, url, tlsYAML))
	_, stopBot, botErr := run(t, bot)
	defer func() { stopBot(); <-botErr }()

	user, said, closeUser := userInLab(t, bus.Options{Broker: url, Password: "pw-user", TLS: pki.ClientTLS(t, true)}, 4)
	defer closeUser()
	time.Sleep(time.Second) // the floor claims the room
	user.SendMessage(context.Background(), protocol.NewMessage(protocol.NewID(), "user", []string{"bot"}, "Bot, are you there?", ""))
	select {
	case <-said:
	case <-time.After(10 * time.Second):
		t.Fatal("the bot did not answer over TLS")
	}
	// Without a client certificate the broker refuses.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if b, err := bus.Dial(ctx, bus.Options{Broker: url, ClientID: "nocert", Username: "user", Password: "pw-user",
		TLS: pki.ClientTLS(t, false), MaxReconnect: 100 * time.Millisecond}); err == nil {
		b.Close()
		t.Fatal("connected without a client certificate")
	}
}
