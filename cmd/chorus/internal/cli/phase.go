package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/chorus-robotics/chorus/runtime/bus"
	"github.com/chorus-robotics/chorus/runtime/protocol"
	"github.com/chorus-robotics/chorus/runtime/query"
	"github.com/chorus-robotics/chorus/runtime/realtime"
)

func init() {
	commands["phase"] = command{"open or close a realtime talk phase: phase start|end -room R [-whisper CHANNEL] [-floor DEVICE]", runPhase}
}

// runPhase sends the operator's "phase" query to the room's active floor.
// Without -floor it reads the retained leader claim and asks that
// instance (a floor's instance is its device id unless
// room.floor_instance says otherwise; then name the device with -floor).
func runPhase(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "start" && args[0] != "end") {
		return errors.New("phase: say start or end first: chorus phase start|end -room R [-whisper CHANNEL]")
	}
	action := args[0]
	fs, rf := newRoomFlags("phase "+action, stderr)
	whisper := fs.String("whisper", "", "the whisper channel whose phase to open or close (default: the room's)")
	dev := fs.String("floor", "", "the floor device to ask (default: the active floor from the leader claim)")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("phase %s: unexpected argument %q", action, fs.Arg(0))
	}
	if *whisper != "" {
		if why := protocol.ValidIdentity(*whisper); why != "" {
			return fmt.Errorf("-whisper: %s", why)
		}
	}
	r, b, err := rf.connect(ctx, "phase")
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// The latest online claim, when no -floor names the device.
	claims := make(chan protocol.LeaderClaim, 1)
	if *dev == "" {
		err := b.Subscribe(ctx, r.Scheme.FloorLeader(r.Name), func(_ string, p []byte) {
			if c, err := protocol.DecodeLeaderClaim(p, 0); err == nil && c.Online {
				select { // a bus handler never blocks: the newest claim replaces an unread one
				case <-claims:
				default:
				}
				select {
				case claims <- c:
				default:
				}
			}
		})
		if err != nil {
			return err
		}
	}
	c := query.NewClient(b, r.Scheme, rf.user, query.ClientOptions{})
	defer c.Close()
	target := *dev
	for {
		switch {
		case *dev != "":
		case target == "":
			select {
			case cl := <-claims:
				target = cl.Instance
			case <-ctx.Done():
				return fmt.Errorf("phase: room %s has no active floor (no online claim on %s within %v)", r.Name, r.Scheme.FloorLeader(r.Name), *timeout)
			}
		default: // asking again: a newer claim names the floor to ask
			select {
			case cl := <-claims:
				target = cl.Instance
			default:
			}
		}
		res, err := query.Call(ctx, c, target, query.Phase, protocol.PhaseCommand{Action: action, Channel: *whisper}, *timeout)
		if err != nil && strings.Contains(err.Error(), realtime.StandbyError) && ctx.Err() == nil {
			// The claim was seen before its floor became active (its own copy
			// of the claim is still on the way), or it has just lost the room:
			// ask again, the newest claim's floor.
			select {
			case <-time.After(200 * time.Millisecond):
				continue
			case <-ctx.Done():
			}
		}
		if errors.Is(err, bus.ErrRefused) {
			return fmt.Errorf("phase %s on floor %s: %w: the floor answers on its device's results, which only a room member or the floor may read; connect with -as one of them", action, target, err)
		}
		if err != nil {
			return fmt.Errorf("phase %s on floor %s: %w", action, target, err)
		}
		where := "room " + r.Name
		if *whisper != "" {
			where += ", whisper channel " + *whisper
		}
		done, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "phase %s: %s (floor %s) %s\n", action, where, target, done)
		return nil
	}
}
