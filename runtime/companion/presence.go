// The companion's own presence, said again when the room reads it gone.

package companion

import "time"

// stillHereAfter is how long the room may read this companion offline
// while it is connected before it says its presence again: a broker that
// stops sends the wills of connections it is closing, and those are
// followed within it by the connection's loss.
const stillHereAfter = 500 * time.Millisecond

// stillHere says the companion's presence again when the room has read it
// offline for stillHereAfter while the companion runs, connected: the
// broker published the Last Will of a connection it had already replaced. On a cluster a node that
// closes a client (or a takeover of its session on another node) can
// send that will after the new connection's birth, and the room would
// take a robot that talks for gone — the floor waits for a granted
// speaker to come back and publishes nothing meanwhile. A robot that is
// stopping closes its bus first, which then refuses the publish.
func (c *Companion) stillHere() {
	p := c.cfg.Presence
	if p == nil {
		return
	}
	c.log.Info("the room reads this companion offline while it runs (an older connection's Last Will); saying it is online again")
	if err := p.SetThink(p.Think(), c.out); err != nil {
		c.log.Warn("presence not said again", "err", err)
	}
}
