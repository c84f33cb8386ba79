// Package wake listens for a wake word (docs/hearing.md: hearing.wake).
// A robot whose room listens only after a wake word streams its
// microphone to a Detector all the time; a Detection opens the room's
// ears for a while, and barges in on a robot that speaks.
//
// Detectors live in subpackages named after what they talk to: wyoming
// (a Wyoming wake-word server such as wyoming-openwakeword).
//
// # Concurrency
//
// A Detector is safe for concurrent use. A Listener is written by one
// goroutine; its Detections channel may be read by another; Close may be
// called from any goroutine and is idempotent.
package wake

import (
	"context"
	"errors"
	"time"
)

// Detector starts listening.
type Detector interface {
	// Name names the detector in logs.
	Name() string
	// Listen opens a stream of mono s16 audio at rate; it does not block
	// for long (dialing is bounded).
	Listen(ctx context.Context, rate int) (Listener, error)
}

// Listener is one open stream to a detector.
type Listener interface {
	// Write hands over audio; it never blocks for long (a bounded queue:
	// what overflows is dropped). An error means the stream failed: close
	// it and listen again.
	Write(pcm []int16) error
	// Detections delivers each wake word heard; it is closed when the
	// stream ends.
	Detections() <-chan Detection
	// Err is why the stream ended, once Detections is closed.
	Err() error
	// Close ends the stream; it is idempotent.
	Close() error
}

// Detection is a wake word heard.
type Detection struct {
	Name string    // the model's name: "okay_nabu", "hey_jarvis"
	At   time.Time // when the listener received it
}

// ErrUnknownName says a detector's server has no wake word of a name it
// was given: it would never wake on it, or (openWakeWord 2, which renamed
// ok_nabu to okay_nabu) wake on another word, with no error either way.
var ErrUnknownName = errors.New("wake: the server has no wake word of that name")

// NameChecker is a Detector that can ask its server which wake words it
// has (`chorusd --doctor` does).
type NameChecker interface {
	// CheckNames returns the wake words the server offers, and an error
	// wrapping ErrUnknownName naming each configured name it lacks (other
	// errors: the server could not be asked).
	CheckNames(ctx context.Context) (have []string, err error)
}
