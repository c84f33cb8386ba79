package broker

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/runtime/logtest"
)

// The library's housekeeping and its message-less warning (a connection
// that ended) are debug lines; at info a robot's log shows none of them,
// and its real warnings stay.
func TestLibraryLogIsQuietAtInfo(t *testing.T) {
	var buf logtest.Buffer
	b, err := Start(context.Background(), Config{Addr: "127.0.0.1:0", AllowAnonymous: true,
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	b.srv.Log.Warn("", "error", "EOF")
	b.srv.Log.Warn("client store quota reached", "client", "c")
	b.Close()
	out := buf.String()
	for _, quiet := range []string{"added hook", "attached listener", "mochi mqtt starting", "server started", "stopping", `msg=""`, "connection ended"} {
		if strings.Contains(out, quiet) {
			t.Errorf("at info the log shows %q:\n%s", quiet, out)
		}
	}
	if !strings.Contains(out, "client store quota reached") {
		t.Errorf("a real warning went missing:\n%s", out)
	}

	var debug logtest.Buffer
	l := slog.New(libraryLog{slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug})})
	l.Info("mochi mqtt starting")
	l.Warn("", "error", "EOF")
	if out := debug.String(); !strings.Contains(out, "level=DEBUG msg=\"mochi mqtt starting\"") || !strings.Contains(out, "level=DEBUG msg=\"broker: a client's connection ended\" error=EOF") {
		t.Errorf("at debug:\n%s", out)
	}
}
