package air

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
)

// `chorus air serve` and `chorus air say -text` as separate processes: a
// mic in the test hears the sentence.
func TestProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds chorus")
	}
	mictest.Need(t, "espeak-ng")
	bin := filepath.Join(t.TempDir(), "chorus")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/chorus")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	srv := exec.CommandContext(ctx, bin, "air", "serve", "-listen", "127.0.0.1:0", "-log", "warn")
	srv.Stderr = os.Stderr
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		if err := srv.Wait(); err != nil {
			t.Errorf("chorus air serve after SIGTERM: %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("chorus air serve printed no address: %v", err)
	}
	addr := strings.TrimSpace(line)

	const text = "Good morning robots, it is a lovely day for a walk."
	rec := listen(ctx, t, addr, "hana", 6*time.Second)
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if out, err := exec.CommandContext(ctx, bin, "air", "say", "-air", addr, "-text", text).CombinedOutput(); err != nil {
		t.Fatalf("chorus air say: %v\n%s", err, out)
	}
	took := time.Since(start)
	speech := mictest.Speech(t, "en", text)
	length := time.Duration(len(speech)) * time.Second / 16000
	if took < length-100*time.Millisecond {
		t.Errorf("chorus air say returned after %v; the sentence lasts %v", took, length)
	}
	r := <-rec
	// Voiced: frames well above silence, for about the sentence's length.
	loud := 0
	for i := 0; i+320 <= len(r.samples); i += 320 {
		if rms(r.samples[i:i+320]) > 300 {
			loud++
		}
	}
	heard := time.Duration(loud) * FrameDuration
	if heard < length/3 || heard > length+200*time.Millisecond {
		t.Errorf("the mic heard %v of voice; the sentence lasts %v", heard, length)
	}
	t.Logf("sentence %v, said in %v, %v of it voiced at the mic", length, took, heard)
}
