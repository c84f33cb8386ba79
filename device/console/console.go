// Package console is the room console: a web page, served by chorusd and
// by `chorus demo -console`, that shows a room live through the WebSocket
// bridge (device/bridge) — the transcript, every companion's vote for each
// message and the floor's grant, a timeline of who spoke when with the
// silences between robots, presence and health of every device, realtime
// phases with remaining counts and refusals — and lets a person speak to
// the room. A page opened mid-conversation shows it so far (the bridge's
// bridge.replay); it measures silences only between utterances it saw
// start and end itself. Plain HTML, CSS and JavaScript, embedded in the binary: no
// front-end toolchain, nothing to build.
//
// The page holds no secret: it connects to /ws with the token in its own
// address (#token=...) or, on a loopback console that allows it, none.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Handler serves the page and its assets.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is ours
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	})
}
