package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/chorus-robotics/chorus/device/robot"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

func init() {
	commands["acl"] = command{"render a Mosquitto ACL or NATS users and permissions (and a password-file skeleton) for the rooms of device configs", runACL}
}

// runACL renders the ACL that holds every identity of the given configs'
// rooms to its own name, and lets only the rooms' members speak as
// companions (systemd/mosquitto-chorus.conf says where the files go).
func runACL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("acl", stderr)
	aclOut := fs.String("acl", "", "write the ACL to this file (default: standard output)")
	passwd := fs.String("passwd", "", "write a password-file skeleton to this file (an existing file is never overwritten)")
	format := fs.String("format", "mosquitto", "mosquitto (an acl_file) or nats (a nats-server authorization block to include)")
	people := fs.String("people", "", "the persons' identities (each app a person speaks through: chorus say, the console), comma-separated: each reads the rooms and speaks under its own name")
	passwords := fs.String("passwords", "", "nats: a name:password file (the -passwd skeleton, filled in) whose passwords the users get; without it each is CHANGE-ME")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: chorus acl [-format mosquitto|nats] [-people a,b] [-passwords FILE] [-acl FILE] [-passwd FILE] CONFIG.yaml...")
	}
	if *format != "mosquitto" && *format != "nats" {
		return fmt.Errorf("-format: %q is neither mosquitto nor nats", *format)
	}
	if *format == "mosquitto" && *passwords != "" {
		return errors.New("-passwords is for -format nats (Mosquitto's passwords are hashed by mosquitto_passwd, in the -passwd file)")
	}
	persons, err := peopleList(*people)
	if err != nil {
		return err
	}
	var cfgs []*robot.Config
	for _, f := range fs.Args() {
		c, err := robot.Load(f)
		if err != nil {
			return err
		}
		cfgs = append(cfgs, c)
	}
	s, err := roomsScheme(cfgs)
	if err != nil {
		return err
	}
	if err := notConfigIdentities(cfgs, persons); err != nil {
		return err
	}
	acl, mode := s.MosquittoACL(identities(cfgs, persons)...), os.FileMode(0o644)
	if *format == "nats" {
		if acl, err = natsUsers(s, identities(cfgs, persons), *passwords); err != nil {
			return err
		}
		mode = 0o600 // it holds the passwords
	}
	// The password file first: one that exists stops the command before
	// the ACL is written.
	var pw *os.File
	if *passwd != "" {
		if pw, err = os.OpenFile(*passwd, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return fmt.Errorf("-passwd: %w (an existing password file is never overwritten: render the ACL alone without -passwd, "+
				"and give a new person a password in the hashed file with: mosquitto_passwd -b %s NAME PASSWORD)", err, *passwd)
		}
		defer pw.Close()
	}
	if *aclOut == "" {
		io.WriteString(stdout, acl)
	} else if err := os.WriteFile(*aclOut, []byte(acl), mode); err != nil {
		return err
	} else if *format == "mosquitto" {
		if err := giveToMosquitto(*aclOut, 0o640, stderr); err != nil {
			return fmt.Errorf("-acl: %w", err)
		}
	}
	if pw != nil {
		skel, who := passwordSkeleton(cfgs, persons)
		if _, err := io.WriteString(pw, skel); err != nil {
			return fmt.Errorf("-passwd: %w", err)
		}
		if *format == "mosquitto" {
			if err := giveToMosquitto(*passwd, 0o600, stderr); err != nil {
				return fmt.Errorf("-passwd: %w", err)
			}
		}
		fmt.Fprintf(stderr, "wrote %s: replace every CHANGE-ME with that identity's password, then hash the file in place: mosquitto_passwd -U %s\n%s", *passwd, *passwd, who)
		if len(persons) == 0 {
			fmt.Fprintln(stderr, "  (no people: name the identities people's apps connect as with -people alice,bob, for the ACL and this file)")
		}
	}
	return nil
}

// notConfigIdentities refuses a person who is an identity the configs
// already connect as (a robot, a body, the floor, Home Assistant's user).
func notConfigIdentities(cfgs []*robot.Config, people []string) error {
	_, who := passwordSkeleton(cfgs, nil)
	for _, p := range people {
		for line := range strings.Lines(who) {
			if name, what, ok := strings.Cut(strings.TrimSpace(line), ": "); ok && name == p {
				return fmt.Errorf("-people: %q is not a person: it is %s", p, what)
			}
		}
	}
	return nil
}

// giveToMosquitto hands a file Mosquitto reads to the mosquitto user,
// with mode: Debian's Mosquitto starts as root and drops to that user
// before it reads its password file and ACL, and refuses to start on a
// file only root can read ("Unable to open pwfile"). Newer Mosquittos
// also warn of a file another user owns or all may read. Only root can
// give a file away; anyone else is told how, where the user exists.
func giveToMosquitto(path string, mode os.FileMode, stderr io.Writer) error {
	u, err := user.Lookup("mosquitto")
	if err != nil {
		return nil // no Mosquitto of Debian's here: the file stays the writer's
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(stderr, "Mosquitto reads %s as the mosquitto user: sudo chown mosquitto:mosquitto %s && sudo chmod %o %s\n", path, path, mode, path)
		return nil
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("the mosquitto user's ids: %w", err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// natsUsers renders the scheme's permissions for nats-server: every
// identity it names and every one of names, each with the password
// passwordFile gives it (CHANGE-ME without one).
func natsUsers(s topic.Scheme, names []string, passwordFile string) (string, error) {
	users, err := s.NATSUsers(names)
	if err != nil {
		return "", err
	}
	pw := map[string]string{}
	if passwordFile != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return "", fmt.Errorf("-passwords: %w", err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, p, ok := strings.Cut(line, ":")
			if !ok || name == "" || p == "" {
				return "", fmt.Errorf("-passwords: %s line %d: want name:password", passwordFile, i+1)
			}
			if strings.HasPrefix(p, "$7$") || strings.HasPrefix(p, "$6$") {
				return "", fmt.Errorf("-passwords: %s line %d: %s's password is a mosquitto_passwd hash; NATS needs the password itself (or a bcrypt hash)", passwordFile, i+1, name)
			}
			pw[name] = p
		}
	}
	var missing []string
	for _, u := range users {
		if passwordFile != "" && pw[u.Name] == "" {
			missing = append(missing, u.Name)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("-passwords: %s gives no password for %s", passwordFile, strings.Join(missing, ", "))
	}
	return topic.NATSAuthorization(users, func(u string) string {
		if p := pw[u]; p != "" {
			return p
		}
		return "CHANGE-ME"
	}), nil
}

// identities is every identity the configs connect as and the people:
// the names of the password file, each listed in the ACL.
func identities(cfgs []*robot.Config, people []string) []string {
	skel, _ := passwordSkeleton(cfgs, people)
	var names []string
	for _, line := range strings.Split(skel, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, name)
		}
	}
	return names
}

// peopleList is -people's identities, each checked.
func peopleList(flag string) ([]string, error) {
	var people []string
	for _, p := range strings.Split(flag, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if why := protocol.ValidIdentity(p); why != "" {
				return nil, fmt.Errorf("-people: %q %s", p, why)
			}
			if strings.ContainsAny(p, ":%") {
				return nil, fmt.Errorf("-people: %q holds a ':' (it ends a name in the password file) or a '%%' (an ACL pattern's)", p)
			}
			people = append(people, p)
		}
	}
	return people, nil
}

// roomsScheme is the topic scheme of the configs' rooms: one prefix, every
// floor identity, each room's roster and the person it hears (its configs
// must agree on both).
func roomsScheme(cfgs []*robot.Config) (topic.Scheme, error) {
	s := topic.Scheme{Prefix: cfgs[0].MQTT.Prefix}
	floors := map[string]bool{}
	rosters := map[string]*robot.Config{}
	voices := map[string]*robot.Config{} // room -> the config that named its person
	var ha *robot.Config                 // the house's Home Assistant: one discovery prefix and identity
	nodes := map[string]*robot.Config{}
	for _, c := range cfgs {
		if h := c.HomeAssistant; h.Enabled || h.Configured() {
			if other, ok := nodes[h.NodeID]; ok && other.Identity() != c.Identity() {
				return s, fmt.Errorf("%s and %s are both Home Assistant node %q: set homeassistant.node_id apart", other.Path(), c.Path(), h.NodeID)
			}
			nodes[h.NodeID] = c
			if ha != nil && h.Enabled && ha.HomeAssistant.Enabled && (ha.HomeAssistant.User != h.User || ha.HomeAssistant.DiscoveryPrefix != h.DiscoveryPrefix) {
				return s, fmt.Errorf("%s and %s name different Home Assistants (user %s/%s, discovery prefix %s/%s): one broker serves one",
					ha.Path(), c.Path(), ha.HomeAssistant.User, h.User, ha.HomeAssistant.DiscoveryPrefix, h.DiscoveryPrefix)
			}
			if ha == nil || h.Enabled {
				ha = c
			}
			s = s.WithHomeAssistant(c.Room.Name, h.DiscoveryPrefix, h.User, h.NodeID, c.Identity())
		}
		if c.MQTT.Prefix != s.Prefix {
			return s, fmt.Errorf("%s uses topic prefix %q, %s %q: one ACL serves one prefix", c.Path(), c.MQTT.Prefix, cfgs[0].Path(), s.Prefix)
		}
		for _, f := range c.MQTT.FloorIDs {
			if !floors[f] {
				floors[f] = true
				s.FloorIDs = append(s.FloorIDs, f)
			}
		}
		// The person the room hears (hearing.user), as robot.Config.Scheme
		// names it: its floor publishes what the room heard under it.
		if u := c.Hearing.User; u != "" {
			if first, ok := voices[c.Room.Name]; ok && first.Hearing.User != u {
				return s, fmt.Errorf("%s and %s name different people for room %s's voice (hearing.user %s/%s): the floor publishes what the room heard under one", first.Path(), c.Path(), c.Room.Name, first.Hearing.User, u)
			}
			voices[c.Room.Name] = c
			s = s.WithVoice(c.Room.Name, u)
		}
		// The people the room's robots may know by voice (hearing.people):
		// every config of the room adds its own.
		if ids := c.Hearing.PeopleIDs(); len(ids) > 0 {
			for _, p := range s.People[c.Room.Name] {
				if !slices.Contains(ids, p) {
					ids = append(ids, p)
				}
			}
			slices.Sort(ids)
			s = s.WithPeople(c.Room.Name, ids)
		}
		if first, ok := rosters[c.Room.Name]; ok {
			if strings.Join(first.Room.Members, ",") != strings.Join(c.Room.Members, ",") {
				return s, fmt.Errorf("%s and %s list different members for room %s", first.Path(), c.Path(), c.Room.Name)
			}
			continue
		}
		rosters[c.Room.Name] = c
		s = s.WithRoster(c.Room.Name, c.Room.Members)
		for ch, ms := range c.Room.Realtime.Whisper {
			s = s.WithWhisper(c.Room.Name, ch, ms)
		}
	}
	return s, nil
}

// passwordSkeleton lists every identity the configs connect as and the
// people, one "name:CHANGE-ME" line each, for mosquitto_passwd -U (which takes no
// comment line: Debian's 2.0.11 calls the file corrupt), and who each
// identity is, a line each, for the operator.
func passwordSkeleton(cfgs []*robot.Config, people []string) (file, who string) {
	names := map[string]string{}
	for _, p := range people {
		names[p] = "a person (-people): their app connects as them, reads the rooms and speaks, never votes"
	}
	for _, c := range cfgs {
		names[c.MQTT.Username] = "the device " + c.Device.ID + " (" + c.Path() + ")"
		if c.Device.ID != c.MQTT.Username {
			names[c.Device.ID] = "the body of " + c.MQTT.Username + ": same password as " + c.MQTT.Username
		}
		if c.Room.Floor {
			for _, f := range c.MQTT.FloorIDs {
				names[f] = "the floor of room " + c.Room.Name + " (mqtt.floor_password_env)"
			}
		}
		if h := c.HomeAssistant; h.Enabled {
			names[h.User] = "Home Assistant (homeassistant.user): its MQTT integration connects as this user"
		}
	}
	ids := make([]string, 0, len(names))
	for id := range names {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b, w strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%s:CHANGE-ME\n", id)
		fmt.Fprintf(&w, "  %s: %s\n", id, names[id])
	}
	return b.String(), w.String()
}
