package bridge

import (
	"context"
	"fmt"
	"net/http"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
)

// The bridge's tokens and identities for a program that is not a
// WebSocket client: the robot's MCP server (device/mcpserve) takes a
// request's token here, and speaks and asks memory as the person it names.

// Authenticate is the token of an HTTP request ("Authorization: Bearer
// T"; the anonymous role on a loopback listener without one), or the
// reason it has none: "no_token", "bad_token".
func (b *Bridge) Authenticate(r *http.Request) (Token, string) { return b.authenticate(r) }

// Send publishes m into the room as tok's name, which must be m's
// sender: a user token speaks as its person.
func (b *Bridge) Send(ctx context.Context, tok Token, m protocol.Message) error {
	if tok.Role != User || m.Params.From != tok.Name {
		return fmt.Errorf("bridge: a %s token named %q may not send a message from %q", tok.Role, tok.Name, m.Params.From)
	}
	if _, err := protocol.DecodeMessage(mustJSON(m), 0); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	id, err := b.acquire(ctx, &client{tok: tok})
	if err != nil {
		return fmt.Errorf("bridge: connect as %s: %w", tok.Name, err)
	}
	defer b.release(tok.Name)
	pctx, cancel := context.WithTimeout(ctx, b.cfg.WriteTimeout)
	defer cancel()
	return id.b.Publish(pctx, b.cfg.Room.Scheme.Message(b.cfg.Room.Name, tok.Name), mustJSON(m), false)
}

// Memory asks device's companion a memory request as tok's name (a user
// token): the device's rules decide, as for a WebSocket client (a person
// lists and forgets their own facts).
func (b *Bridge) Memory(ctx context.Context, tok Token, device string, req protocol.MemoryRequest) (protocol.MemoryAnswer, error) {
	if tok.Role != User {
		return protocol.MemoryAnswer{}, fmt.Errorf("bridge: a %s token may not ask for memory", tok.Role)
	}
	id, err := b.acquire(ctx, &client{tok: tok})
	if err != nil {
		return protocol.MemoryAnswer{}, fmt.Errorf("bridge: connect as %s: %w", tok.Name, err)
	}
	defer b.release(tok.Name)
	return query.Call(ctx, id.memory, device, query.Memory, req, MemoryTimeout)
}
