package systemd

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// TestServiceAllowsThePi5Devices: with DevicePolicy=closed, every device
// node a driver opens must be allowed, or the camera or GPIO fails with
// EPERM only on the robot. A Raspberry Pi 5's libcamera (rpicam-vid) needs
// the media controller and the DMA heaps; its GPIO has /dev/gpiomem0..4.
func TestServiceAllowsThePi5Devices(t *testing.T) {
	allowed := map[string]string{}
	policy := ""
	sc := bufio.NewScanner(bytes.NewReader(Service))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "DevicePolicy="); ok {
			policy = v
		}
		if v, ok := strings.CutPrefix(line, "DeviceAllow="); ok {
			dev, mode, _ := strings.Cut(v, " ")
			allowed[dev] = mode
		}
	}
	if policy != "closed" {
		t.Fatalf("DevicePolicy=%q, want closed", policy)
	}
	for _, tc := range []struct{ dev, why string }{
		{"char-alsa", "sound"},
		{"char-video4linux", "V4L2 cameras"},
		{"char-media", "libcamera's media controller (/dev/media*)"},
		{"char-dma_heap", "libcamera's buffers (/dev/dma_heap/linux,cma, /dev/dma_heap/system)"},
		{"/dev/gpiochip0", "GPIO"},
		{"/dev/gpiochip4", "GPIO on a Pi 5 with an older kernel"},
		{"/dev/gpiomem0", "Pi 5 GPIO memory"},
		{"/dev/gpiomem4", "Pi 5 GPIO memory"},
	} {
		if mode := allowed[tc.dev]; mode != "rw" {
			t.Errorf("DeviceAllow=%s is %q, want rw (%s)", tc.dev, mode, tc.why)
		}
	}
	if !bytes.Contains(Service, []byte("SupplementaryGroups=audio video gpio")) {
		t.Error("the DMA heaps and media devices are group video: the unit must keep SupplementaryGroups video")
	}
}
