package air

import (
	"context"
	"fmt"

	"github.com/chorus-robotics/chorus/drivers/audio"
)

// PersonID is the identity Say speaks as.
const PersonID = "person"

// Say plays pcm, taken at rate, into the air at addr as a person (every
// mic hears it at gain 1), in real time; it returns when it has played.
// The air's rate is DefaultRate.
func Say(ctx context.Context, addr string, pcm []int16, rate int) error {
	o := &Output{Addr: addr, ID: PersonID, role: RolePerson}
	defer o.Close()
	st, err := o.Begin(ctx, "say")
	if err != nil {
		return err
	}
	if err := st.Write(ctx, audio.PCM{Rate: rate, Samples: pcm}); err != nil {
		st.Abort()
		return fmt.Errorf("air say: %w", err)
	}
	if _, err := st.Drain(ctx); err != nil {
		return fmt.Errorf("air say: %w", err)
	}
	return nil
}
