package query

import (
	"context"
	"encoding/json"
	"time"

	"github.com/chorus-robotics/chorus/runtime/protocol"
)

// TEMPORARY until the speak branch merges.
func SpeakMore(ctx context.Context, a Asker, device string, req protocol.SpeakMore, timeout time.Duration) (protocol.SpeakMoreResult, error) {
	raw, err := a.Ask(ctx, device, protocol.TypeSpeakMore, req, timeout)
	var r protocol.SpeakMoreResult
	if err == nil {
		err = json.Unmarshal(raw, &r)
	}
	return r, err
}
