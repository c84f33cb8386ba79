// Package firmwareconfigs carries shipped device configs inside the
// binaries that need them: the demo room, so that `chorus demo` runs from
// any folder. The YAML files stay what they are, ready to flash.
package firmwareconfigs

import "embed"

// Demo is the demo rooms, one config per device: demo/*.yaml (turn mode)
// and demo-realtime/*.yaml (realtime mode).
//
//go:embed demo/*.yaml demo-realtime/*.yaml
var Demo embed.FS
