package floor

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner and stops with its context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
