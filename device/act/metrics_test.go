package act

import (
	"github.com/chorus-robotics/chorus/runtime/metrics"
)

func testutilValue(m *metrics.Metrics, action, outcome string) float64 {
	return metrics.Value(m.Actions.WithLabelValues(action, outcome))
}
