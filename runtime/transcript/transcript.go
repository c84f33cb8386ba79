// Package transcript follows a room and prints what happens in it: every
// message, and every floor decision with the votes behind it. `chorus demo`
// and `chorus watch` use it. Delivery is at least once and the floor repeats
// a grant until its speaker answers, so each message and each decision is
// printed and passed on once.
package transcript

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/room"
	"github.com/chorus-robotics/chorus/runtime/seen"
)

// Event is one line of the transcript, for callers that act on it.
type Event struct {
	Message *protocol.Message
	Grant   *protocol.TurnGrant
	Phase   *protocol.Phase   // realtime rooms: a phase opened or ended
	Ack     *protocol.PostAck // realtime rooms: the floor refused a post (or cut it)
	To      string            // whose post Ack answers
}

// Printer writes a room's transcript to W.
type Printer struct {
	W io.Writer
	// HideRefusals leaves out the realtime posts the floor refused (they
	// are still passed on to Follow's fn): the demo prints them at
	// -log debug only.
	HideRefusals bool
	start        time.Time
	mu           sync.Mutex
	msgs         *seen.Set
	grants       *seen.Set
	phases       *seen.Set
	acks         *seen.Set
}

// recent bounds the ids a Printer remembers to print each once.
const recent = 1024

// first reports whether id is new in set (made on first use).
func (p *Printer) first(set **seen.Set, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *set == nil {
		*set = seen.New(recent)
	}
	return (*set).Add(id)
}

// Follow subscribes to r's messages and grants, prints them, and passes
// each on to fn (which must not block; nil is fine).
func (p *Printer) Follow(ctx context.Context, r *room.Room, fn func(Event)) error {
	p.start = time.Now()
	if err := r.OnMessage(ctx, func(m protocol.Message) {
		if !p.first(&p.msgs, m.Params.ID) {
			return
		}
		p.message(m)
		if fn != nil {
			fn(Event{Message: &m})
		}
	}); err != nil {
		return err
	}
	if err := r.OnGrant(ctx, func(g protocol.TurnGrant) {
		if !p.first(&p.grants, g.MessageID) {
			return
		}
		p.grant(g)
		if fn != nil {
			fn(Event{Grant: &g})
		}
	}); err != nil {
		return err
	}
	// Realtime rooms: phases, and the posts the floor refused.
	if err := r.OnPhase(ctx, "", func(ph protocol.Phase) {
		if !p.first(&p.phases, ph.Phase+"/"+ph.Event) {
			return
		}
		p.phase(ph)
		if fn != nil {
			fn(Event{Phase: &ph})
		}
	}); err != nil {
		return err
	}
	return r.OnAcks(ctx, "", "+", func(to string, a protocol.PostAck) {
		if (a.Accepted && a.Reason != protocol.WarnTruncated) || !p.first(&p.acks, a.PostID) {
			return
		}
		p.ack(to, a)
		if fn != nil {
			fn(Event{Ack: &a, To: to})
		}
	})
}

func (p *Printer) phase(ph protocol.Phase) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ph.Event == protocol.PhaseEnd {
		fmt.Fprintf(p.W, "%s phase %s ended: %s\n", p.stamp(), ph.Phase, ph.Reason)
		return
	}
	l := ph.Limits
	fmt.Fprintf(p.W, "%s phase %s opened (%s): %s; each may say %d, the room %d, %d characters each, %gs apart; ends after %gs, or %gs of silence\n",
		p.stamp(), ph.Phase, ph.Kind, strings.Join(ph.Members, ", "), l.PerAgent, l.PerDay, l.MaxLength,
		float64(l.RateLimitMs)/1000, float64(l.PhaseTimeoutMs)/1000, float64(l.SilenceTimeoutMs)/1000)
}

func (p *Printer) ack(to string, a protocol.PostAck) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a.Accepted {
		fmt.Fprintf(p.W, "%s   #%d %s's words were cut to the room's max length\n", strings.Repeat(" ", 9), a.Idx, to)
		return
	}
	if p.HideRefusals {
		return
	}
	fmt.Fprintf(p.W, "%s   %s's post refused: %s (%d left)\n", strings.Repeat(" ", 9), to, a.Reason, a.Remaining)
}

func (p *Printer) stamp() string {
	return fmt.Sprintf("[%6.2fs]", time.Since(p.start).Seconds())
}

func (p *Printer) message(m protocol.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	to := "all"
	if len(m.Params.To) > 0 {
		to = strings.Join(m.Params.To, ", ")
	}
	emo := ""
	if e := m.Params.Emotion(); e != protocol.EmotionNeutral {
		emo = " (" + string(e) + ")"
	}
	md := m.Params.Metadata
	if speaker, ok := md[protocol.MetaSpeaker].(string); ok {
		idx, _ := md[protocol.MetaIdx].(float64)
		left, _ := md[protocol.MetaRemain].(float64)
		fmt.Fprintf(p.W, "%s #%d %s (%g left): %s\n", p.stamp(), int(idx), speaker, left, m.Params.Message)
		return
	}
	fmt.Fprintf(p.W, "%s %s → %s%s: %s%s\n", p.stamp(), m.Params.From, to, emo, m.Params.Message, actions(md))
}

// actions is what the speaker did with its words (metadata.actions), as
// the transcript shows it: " [does nod, wave]".
func actions(md map[string]any) string {
	list, _ := md[protocol.MetaActions].([]any)
	var names []string
	for _, a := range list {
		if s, ok := a.(string); ok && protocol.ValidActionName(s) == "" && len(names) < 8 {
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " [does " + strings.Join(names, ", ") + "]"
}

func (p *Printer) grant(g protocol.TurnGrant) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var votes []string
	for _, v := range g.Votes {
		sel := ""
		if v.Selected {
			sel = " selected"
		}
		votes = append(votes, fmt.Sprintf("%s %s %g%s %s", v.From, v.State, v.Importance, sel, v.Closing))
	}
	for _, m := range g.Missing {
		votes = append(votes, m+" (no vote)")
	}
	fmt.Fprintf(p.W, "%s   votes: %s\n", strings.Repeat(" ", 9), strings.Join(votes, " | "))
	who := "nobody — the room rests"
	if s := g.SpeakerID(); s != "" {
		who = s
	}
	fmt.Fprintf(p.W, "%s   grant: %s (%s, %s)\n", strings.Repeat(" ", 9), who, g.Reason, g.DecidedBy)
}
