package act

import (
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/chorus-robotics/chorus/runtime/metrics"
)

func testutilValue(m *metrics.Metrics, action, outcome string) float64 {
	return testutil.ToFloat64(m.Actions.WithLabelValues(action, outcome))
}
