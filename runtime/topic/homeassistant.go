package topic

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"
)

// Home Assistant (docs/protocol.md, "Home Assistant's topics"): a robot describes itself
// on Home Assistant's discovery topic, outside the prefix, and keeps its
// entities' states under the prefix; Home Assistant — one identity —
// commands it there and announces itself on its status topic.
//
//	{discovery}/device/{node}/config       the robot's device discovery (retained; the robot)
//	{discovery}/status                     online/offline (Home Assistant)
//	{prefix}/ha/{identity}/{entity}        an entity's state (retained; that robot)
//	{prefix}/ha/{identity}/{entity}/set    a command to it (Home Assistant only)

// HANodePattern is what a Home Assistant node id may be made of.
var HANodePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// HANodeOf makes an identity a node id, what discovery topics allow: the
// identity itself when it is made of [a-zA-Z0-9_-], else its allowed
// characters and a short hash of it, so that two identities never share
// a node (キョウコ and サクラコ, kyoko.v2 and kyoko_v2).
func HANodeOf(id string) string {
	if HANodePattern.MatchString(id) {
		return id
	}
	var b strings.Builder
	for _, r := range id {
		if r < 128 && HANodePattern.MatchString(string(r)) {
			b.WriteRune(r)
		}
	}
	sum := sha256.Sum256([]byte(id))
	if b.Len() > 0 {
		b.WriteByte('_')
	}
	b.WriteString(hex.EncodeToString(sum[:4]))
	return b.String()
}

// HA is what a scheme knows of Home Assistant.
type HA struct {
	Discovery string            // the discovery prefix
	User      string            // Home Assistant's identity
	Nodes     map[string]string // node id → the robot identity that publishes its discovery
	Rooms     map[string]bool   // rooms whose members may speak as User ("say")
}

// Kinds of the Home Assistant topics under the prefix.
const (
	KindHAState   Kind = "ha-state"
	KindHACommand Kind = "ha-command"
)

// WithHomeAssistant returns a copy of s in which node's discovery is
// published by identity, Home Assistant is user under discovery, and the
// members of room may send into it what Home Assistant's user typed (as
// user). All robots of a house share one discovery prefix and one user.
func (s Scheme) WithHomeAssistant(room, discovery, user, node, identity string) Scheme {
	h := HA{Discovery: discovery, User: user, Nodes: map[string]string{}, Rooms: map[string]bool{}}
	if s.HA != nil {
		for k, v := range s.HA.Nodes {
			h.Nodes[k] = v
		}
		for k, v := range s.HA.Rooms {
			h.Rooms[k] = v
		}
	}
	h.Nodes[node] = identity
	h.Rooms[room] = true
	s.HA = &h
	return s
}

// WithHAMembers returns a copy of s in which every member of room that
// has no node yet may publish the discovery of its default node
// (HANodeOf), unless another robot holds that node. A broker that knows
// only its own robot's config (the embedded one) serves the room's other
// robots in Home Assistant as `chorus acl` renders them for Mosquitto
// (issue 27); a robot with a node_id of its own needs the rendered ACL.
func (s Scheme) WithHAMembers(room string) Scheme {
	if s.HA == nil {
		return s
	}
	h := HA{Discovery: s.HA.Discovery, User: s.HA.User, Nodes: map[string]string{}, Rooms: map[string]bool{}}
	has := map[string]bool{}
	for k, v := range s.HA.Nodes {
		h.Nodes[k] = v
		has[v] = true
	}
	for k, v := range s.HA.Rooms {
		h.Rooms[k] = v
	}
	for _, m := range s.Rosters[room] {
		n := HANodeOf(m)
		if _, taken := h.Nodes[n]; !has[m] && !taken {
			h.Nodes[n] = m
		}
	}
	s.HA = &h
	return s
}

// HAState is the topic of a robot's entity state.
func (s Scheme) HAState(identity, entity string) string {
	return s.Prefix + "/ha/" + identity + "/" + entity
}

// HACommand is the topic Home Assistant commands a robot's entity on.
func (s Scheme) HACommand(identity, entity string) string {
	return s.HAState(identity, entity) + "/set"
}

// HACommands is the filter of every command to a robot.
func (s Scheme) HACommands(identity string) string { return s.Prefix + "/ha/" + identity + "/+/set" }

// HADiscovery is the topic of a node's device discovery.
func (s Scheme) HADiscovery(node string) string {
	return s.haPrefix() + "/device/" + node + "/config"
}

// HAStatus is the topic Home Assistant announces itself on.
func (s Scheme) HAStatus() string { return s.haPrefix() + "/status" }

func (s Scheme) haPrefix() string {
	if s.HA == nil || s.HA.Discovery == "" {
		return "homeassistant"
	}
	return s.HA.Discovery
}

// parseHA parses a topic under {prefix}/ha/.
func parseHA(seg []string) (Route, bool) {
	switch {
	case len(seg) == 3 && seg[0] == "ha":
		return Route{Kind: KindHAState, Identity: seg[1], Entity: seg[2]}, true
	case len(seg) == 4 && seg[0] == "ha" && seg[3] == "set":
		return Route{Kind: KindHACommand, Identity: seg[1], Entity: seg[2]}, true
	}
	return Route{}, false
}

// mayPublishHA is the ACL of Home Assistant's topics outside the prefix:
// a node's discovery by its robot, the status by Home Assistant.
func (s Scheme) mayPublishHA(user, t string) (allowed, known bool) {
	if s.HA == nil {
		return false, false
	}
	rest, ok := strings.CutPrefix(t, s.haPrefix()+"/")
	if !ok {
		return false, false
	}
	seg := strings.Split(rest, "/")
	switch {
	case len(seg) == 1 && seg[0] == "status":
		return user == s.HA.User, true
	case len(seg) == 3 && seg[0] == "device" && seg[2] == "config":
		id, ok := s.HA.Nodes[seg[1]]
		return ok && id == user, true
	}
	return false, true
}

// mayReadHA: Home Assistant reads its discovery prefix; the robots read
// its status.
func (s Scheme) mayReadHA(user, filter string) (allowed, known bool) {
	if s.HA == nil || (filter != s.haPrefix()+"/#" && !strings.HasPrefix(filter, s.haPrefix()+"/")) {
		return false, false
	}
	if user == s.HA.User {
		return true, true
	}
	for n, id := range s.HA.Nodes {
		if id == user && (filter == s.HAStatus() || filter == s.HADiscovery(n)) {
			return true, true
		}
	}
	return false, true
}

// haACL adds the Home Assistant rules to a and returns its patterns:
// robots publish their entities' states and read the status; Home
// Assistant reads everything of its prefix, announces its status and
// commands; each robot publishes its node's discovery and, as members of
// a room whose robots are in Home Assistant, what Home Assistant's user
// typed.
func (s Scheme) haACL(a *ACL) []Grant {
	if s.HA == nil {
		return nil
	}
	p := s.Prefix
	// No %u pattern for the states: Mosquitto puts a username with '/'
	// into it as it is, and "kyoko/mute" would then write kyoko's mute
	// commands. Each robot gets its own line.
	patterns := []Grant{{Topic: p + "/ha/#"}}
	u := s.HA.User
	a.add(u, false, s.haPrefix()+"/#")
	a.add(u, true, s.HAStatus(), p+"/ha/+/+/set")
	nodes := make([]string, 0, len(s.HA.Nodes))
	for n := range s.HA.Nodes {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		id := s.HA.Nodes[n]
		a.add(id, true, s.HADiscovery(n), p+"/ha/"+id+"/+")
		a.add(id, false, s.HADiscovery(n), s.HAStatus()) // its own discovery, to take away what it no longer has
	}
	rooms := make([]string, 0, len(s.HA.Rooms))
	for r := range s.HA.Rooms {
		rooms = append(rooms, r)
	}
	sort.Strings(rooms)
	for _, r := range rooms {
		for _, m := range s.Rosters[r] {
			a.add(m, true, s.Message(r, u))
		}
	}
	return patterns
}

// isHANode reports whether id is a robot in Home Assistant.
func (s Scheme) isHANode(id string) bool {
	if s.HA == nil {
		return false
	}
	for _, n := range s.HA.Nodes {
		if n == id {
			return true
		}
	}
	return false
}
