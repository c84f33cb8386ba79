// Streaming (issue 28): what both providers' ChatStream share.

package llm

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/chorus-robotics/chorus/runtime/modelhttp"
)

// Assembler builds a provider's Response from its stream's events.
type Assembler interface {
	// Add takes one event's data and returns the text it adds, or
	// modelhttp.ErrEnd once the answer is complete.
	Add(data []byte) (string, error)
	// Response is the whole answer once the stream has ended.
	Response() (Response, error)
}

// Stream is how a provider streams its calls: its exchange, endpoint and
// headers, the decoder of its whole answers, and its memory of a server
// that does not stream: one that refused (a 400 naming stream) or
// answered a streamed request whole is asked for whole answers from then
// on, said once in the log.
type Stream struct {
	Client          *modelhttp.Client
	URL             string
	Header          http.Header
	Idle            time.Duration                  // between two events (default modelhttp.DefaultIdle)
	Decode          func([]byte) (Response, error) // a whole answer
	Provider, Model string
	Log             *slog.Logger
	off             atomic.Bool
}

// Do posts body (the provider's request, asking for a stream) and hands
// the answer's text to text as a assembles it. When the server does not
// stream, whole asks again for the whole answer (the provider's Chat),
// its text heard at once. failed names what failed.
func (s *Stream) Do(ctx context.Context, text func(string), body any, a Assembler, whole func() (Response, error), failed func(error) error) (Response, error) {
	if s.off.Load() {
		return heard(text)(whole())
	}
	var answered *Response
	err := s.Client.Stream(ctx, s.URL, s.Header, body, modelhttp.Streamed{Idle: s.Idle,
		Event: func(e modelhttp.Event) error {
			piece, err := a.Add(e.Data)
			if err == nil && piece != "" && text != nil {
				text(piece)
			}
			return err
		},
		Whole: func(b []byte) error {
			out, err := s.Decode(b)
			answered = &out
			return err
		}})
	switch {
	case errors.Is(err, modelhttp.ErrStreamRefused):
		s.remember(err)
		return heard(text)(whole())
	case err != nil:
		return Response{}, failed(err)
	case answered != nil:
		s.remember(errors.New("it answered whole"))
		return heard(text)(*answered, nil)
	}
	out, err := a.Response()
	if err != nil {
		return Response{}, failed(err)
	}
	return out, nil
}

// Whole posts body (the provider's request, not streamed) and decodes
// the whole answer.
func (s *Stream) Whole(ctx context.Context, body any) (Response, error) {
	var out Response
	err := s.Client.Post(ctx, s.URL, s.Header, body, func(b []byte) error {
		var err error
		out, err = s.Decode(b)
		return err
	})
	return out, err
}

func (s *Stream) remember(why error) {
	if !s.off.Swap(true) && s.Log != nil {
		s.Log.Warn("model server does not stream; asking it for whole answers from now on", "provider", s.Provider, "model", s.Model, "why", why)
	}
}

// heard hands a whole answer's text to text at once.
func heard(text func(string)) func(Response, error) (Response, error) {
	return func(out Response, err error) (Response, error) {
		if err == nil && text != nil && out.Text != "" {
			text(out.Text)
		}
		return out, err
	}
}
