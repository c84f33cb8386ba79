package protocol

import "time"

// LeaderClaim is a floor instance's retained claim on a room's
// floor/leader topic (docs/protocol.md, "Floor leader claim"): online while that
// instance runs the room's floor, offline in its Last Will. Both floors
// (turn and realtime) elect through it (runtime/election), and the
// operator's `chorus phase` reads it to find the floor to ask.
type LeaderClaim struct {
	Instance string    `json:"instance"`
	Online   bool      `json:"online"`
	Since    time.Time `json:"since"`
}

// DecodeLeaderClaim decodes and validates a leader claim: a floor
// instance name that is a valid identity, online as a boolean and since
// as an RFC 3339 time, nothing else.
func DecodeLeaderClaim(b []byte, max int) (LeaderClaim, error) {
	var w struct {
		Instance string `json:"instance"`
		Online   *bool  `json:"online"`
		Since    string `json:"since"`
	}
	if err := decodeStrict("leader", b, max, &w); err != nil {
		return LeaderClaim{}, err
	}
	c := checker{typ: "leader"}
	c.identity("instance", w.Instance)
	if w.Online == nil {
		c.fail("online", KindMissing, "required, a boolean")
	}
	since, err := time.Parse(time.RFC3339Nano, w.Since)
	if err != nil {
		c.fail("since", KindInvalid, "must be an RFC 3339 time, got %q", w.Since)
	}
	if err := c.done(); err != nil {
		return LeaderClaim{}, err
	}
	return LeaderClaim{Instance: w.Instance, Online: *w.Online, Since: since}, nil
}
