package system

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const floorInstanceYAML = `version: 1
device: {id: %[1]s}
room: {name: lab, members: [ann, ben, cat], floor: true, vote_timeout: 3s}
mqtt: {broker: %[2]s}
drivers: {audio: {kind: null}, tts: {kind: tone}}
http: {listen: "off"}
log: {level: info}
`

// TestStandbyFloorTakesOver runs two floor processes for one room, kills
// the active one, and checks that the standby grants the next turn within
// the 3 s the issue allows.
func TestStandbyFloorTakesOver(t *testing.T) {
	chorusd, chorus := buildBinaries(t)
	url := startMosquittoURL(t)
	dir := t.TempDir()
	o := observe(t, url)
	floors := map[string]*proc{}
	for _, id := range []string{"floor-a", "floor-b"} {
		cfg := filepath.Join(dir, id+".yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(floorInstanceYAML, id, url)), 0o644)
		floors[id] = start(t, chorusd, cfg, id)
		time.Sleep(800 * time.Millisecond) // floor-a claims the room first
	}
	for _, id := range []string{"ann", "ben"} {
		cfg := filepath.Join(dir, id+".yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(companionYAML, id, url, "0s")), 0o644)
		start(t, chorusd, cfg, id)
	}
	o.waitOnline(t, "ann", "ben")
	time.Sleep(300 * time.Millisecond)

	floors["floor-a"].cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	time.Sleep(100 * time.Millisecond)
	id := say(t, chorus, url, "Is anyone still deciding?")
	select {
	case g := <-waitGrant(o, id):
		if took := time.Since(killed); took > 3*time.Second {
			t.Fatalf("the standby granted after %v", took)
		}
		if g.Speaker == nil {
			t.Fatalf("grant %+v", g)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("no grant after the active floor died")
	}
}
