// Package firmwareconfigs carries shipped device configs inside the
// binaries that need them: the demo room, so that `chorus demo` runs from
// any folder. The YAML files stay what they are, ready to flash.
package firmwareconfigs

import "embed"

// Demo is the demo room, one config per device: demo/*.yaml.
//
//go:embed demo/*.yaml
var Demo embed.FS
