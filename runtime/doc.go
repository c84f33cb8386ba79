// Package runtime is the root of the conversation runtime: everything under
// it (protocol, bus, broker, floor, companion, brains, queries) needs no
// hardware and no C library, so it builds and runs anywhere; deps_test.go
// guards that.
package runtime
