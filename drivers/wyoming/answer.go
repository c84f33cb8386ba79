package wyoming

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Info is what a server says it offers: the data of its info event, the
// parts Chorus reads — asr (speech to text) and wake (wake-word
// detection). Other keys (tts, intent, handle, satellite, …) are ignored.
type Info struct {
	ASR  []Program `json:"asr"`
	Wake []Program `json:"wake"`
}

// Program is one recogniser or detector a server offers.
type Program struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Installed   bool    `json:"installed"`
	Version     string  `json:"version"`
	Models      []Model `json:"models"`
	// SupportsTranscriptStreaming (Wyoming 1.7, asr): the server sends
	// transcript-start and transcript-chunk events while the audio comes,
	// before its transcript and transcript-stop.
	SupportsTranscriptStreaming bool `json:"supports_transcript_streaming"`
}

// Model is one model of a Program: a speech recogniser's model, a wake
// word (openWakeWord names them after their files: hey_jarvis_v0.1,
// okay_nabu).
type Model struct {
	Name      string   `json:"name"`
	Phrase    string   `json:"phrase"` // a wake word's words, when the server gives them
	Languages []string `json:"languages"`
	Installed bool     `json:"installed"`
}

// ServerError is a server's error event {text, code?}: it failed what it
// was asked.
type ServerError struct {
	Text string `json:"text"`
	Code string `json:"code"`
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("the server says: %q (code %q)", e.Text, e.Code)
}

// ErrClosed is ReadAnswer's error for a server that closed the connection
// before answering.
var ErrClosed = errors.New("the server closed the connection without answering")

// ReadAnswer reads events until one of type want and returns it. An
// error event is the server's failure (*ServerError). Every other type is
// skipped, as the reference clients and servers skip event types they do
// not handle (a newer server's progress events, a vendor's own), and
// handed to skipped when it is not nil. It reads at most max events;
// more without the answer is ErrProtocol. A server that closes first is
// ErrClosed; other errors are ReadEvent's.
func ReadAnswer(r *bufio.Reader, want string, max int, skipped func(Event)) (Event, error) {
	for range max {
		ev, err := ReadEvent(r)
		switch {
		case errors.Is(err, io.EOF):
			return Event{}, ErrClosed
		case err != nil:
			return Event{}, err
		}
		switch ev.Type {
		case want:
			return ev, nil
		case "error":
			e := &ServerError{}
			ev.Decode(e)
			return Event{}, e
		}
		if skipped != nil {
			skipped(ev)
		}
	}
	return Event{}, fmt.Errorf("%w: %d events without a %s", ErrProtocol, max, want)
}

// Describe asks the server on rw what it offers: it writes describe and
// reads info (ReadAnswer, at most max events). The caller bounds the
// exchange (a deadline on the connection).
func Describe(rw io.ReadWriter, max int, skipped func(Event)) (Info, error) {
	if err := WriteEvent(rw, Event{Type: "describe"}); err != nil {
		return Info{}, err
	}
	ev, err := ReadAnswer(bufio.NewReader(rw), "info", max, skipped)
	if err != nil {
		return Info{}, err
	}
	var info Info
	if err := ev.Decode(&info); err != nil {
		return Info{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return info, nil
}
