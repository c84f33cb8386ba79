// Package system holds the outside tests of the whole system: they build the
// chorusd and chorus binaries and run them as a user would — separate
// processes on the embedded broker and on Mosquitto, Node clients on the
// WebSocket bridge, faults, floods, a standby taking over, the soak
// (RELIABILITY.md), the installed arm64 tree under emulation. It has no code
// of its own; `go test ./tests/system/` runs them (`make soak` runs TestSoak
// for 30 minutes).
package system
