package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/topic"
)

func init() {
	commands["memory"] = command{"see or erase what a robot remembers: " + memoryUsage, runMemory}
}

const memoryUsage = "memory list|export|forget|wipe -device D [-person P] [-fact ID]"

// runMemory asks one or more devices about their companion's memory, as
// the identity -as: an operator (memory.operators) about anyone, anyone
// else about themselves (the device decides, by the request's topic).
func runMemory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if askedForHelp(args, stdout, memoryUsage) {
		return flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("want an operation: chorus " + memoryUsage)
	}
	op := args[0]
	switch op {
	case protocol.MemoryList, protocol.MemoryExport, protocol.MemoryForget, protocol.MemoryWipe:
	default:
		return fmt.Errorf("unknown operation %q: want list, export, forget or wipe", op)
	}
	fs, rf := newRoomFlags("memory "+op, stderr)
	devices := fs.String("device", "", "the device(s) to ask, comma-separated (default: every robot online on the broker, or in -room)")
	person := fs.String("person", "", "whose facts (default: list/export: everyone's as an operator, else your own; forget: -person or -fact)")
	fact := fs.String("fact", "", "forget: only this fact (its id, from list)")
	timeout := fs.Duration("timeout", 10*time.Second, "give up on a device after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if op == protocol.MemoryForget && *person == "" && *fact == "" {
		return errors.New("forget needs -person (yourself, or anyone as an operator) or -fact (an id from list); wipe erases everyone")
	}
	req := protocol.MemoryRequest{Op: op, Person: *person, Fact: *fact}
	return askDevices(ctx, rf, *devices, *timeout, stderr, req, func(dev string, a protocol.MemoryAnswer) error {
		switch op {
		case protocol.MemoryList:
			if len(a.Facts) == 0 {
				fmt.Fprintf(stdout, "%s: nothing remembered\n", dev)
			}
			for _, f := range a.Facts {
				fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\n", dev, f.ID, f.Person, f.Created.Format(time.DateTime), f.Text)
			}
		case protocol.MemoryExport:
			enc := json.NewEncoder(stdout)
			for _, f := range a.Facts {
				if err := enc.Encode(f); err != nil {
					return err
				}
			}
		default:
			fmt.Fprintf(stdout, "%s: forgot %d facts\n", dev, a.Forgotten)
		}
		return nil
	})
}

// How long chorus memory reads the retained presences: every robot online,
// when it will ask them all; the named devices, when it will ask those.
const (
	presenceWaitAll   = time.Second
	presenceWaitNamed = 300 * time.Millisecond
)

// askDevices sends req (under a new id each) to the memory of each of
// devices (comma-separated; "" every robot online in rf's room, or on the
// broker) as rf's identity, and shows each answer; a device that does
// not answer, or refuses, is named in the error.
func askDevices(ctx context.Context, rf *roomFlags, devices string, timeout time.Duration, stderr io.Writer,
	req protocol.MemoryRequest, show func(dev string, a protocol.MemoryAnswer) error) error {
	room := rf.room
	if rf.room == "" {
		rf.room = "_"
	}
	r, b, err := rf.connect(ctx, "memory")
	if err != nil {
		return err
	}
	defer b.Close()
	// Who is present: every robot online, when no device is named; a named
	// device whose companions are all offline fails at once, not after
	// timeout.
	wait := presenceWaitNamed
	if devices == "" {
		wait = presenceWaitAll
	}
	present, err := presentDevices(ctx, b, r.Scheme, room, wait)
	if err != nil {
		return err
	}
	if devices == "" {
		var found []string
		for d, online := range present {
			if online {
				found = append(found, d)
			}
		}
		slices.Sort(found)
		if len(found) == 0 {
			return fmt.Errorf("no robot is online on %s%s: name one with -device", rf.broker, map[bool]string{true: "", false: " in room " + room}[room == ""])
		}
		fmt.Fprintf(stderr, "asking %s\n", strings.Join(found, ", "))
		devices = strings.Join(found, ",")
	}
	online := func(dev string) (bool, bool) { on, known := present[dev]; return on, known }
	asker := query.NewClient(b, r.Scheme, rf.user, query.ClientOptions{Private: true, Online: online})
	defer asker.Close()
	var failed []string
	for _, dev := range strings.Split(devices, ",") {
		if why := protocol.ValidIdentity(dev); why != "" {
			return fmt.Errorf("-device %q: %s", dev, why)
		}
		req.ID = protocol.NewID()
		a, err := query.Call(ctx, asker, dev, query.Memory, req, timeout)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", dev, err)
			failed = append(failed, dev)
			continue
		}
		if err := show(dev, a); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("no answer or refused: %s", strings.Join(failed, ", "))
	}
	return nil
}

// presentDevices is the devices that announce a companion in room ("" every
// room), by whether one of their companions is online: their retained
// presence, read for wait.
func presentDevices(ctx context.Context, b bus.Bus, s topic.Scheme, room string, wait time.Duration) (map[string]bool, error) {
	if room == "" {
		room = "+"
	}
	var mu sync.Mutex
	found := map[string]bool{}
	err := b.Subscribe(ctx, s.Presences(room), func(_ string, payload []byte) {
		p, err := protocol.DecodePresence(payload, 0)
		if err != nil || protocol.ValidIdentity(p.Device) != "" {
			return
		}
		mu.Lock()
		found[p.Device] = found[p.Device] || p.Online
		mu.Unlock()
	})
	if err != nil {
		return nil, fmt.Errorf("reading who is online: %w", err)
	}
	select {
	case <-time.After(wait): // retained presences arrive at once
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(found), nil
}
