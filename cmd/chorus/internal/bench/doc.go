// Package bench is the operator's measuring kit behind `chorus bench` and
// the Go benchmarks: the bus round trip against raw paho on the same
// broker, the floor's turn latency, the turn gap with a model server, a
// vision query's round trip, a speak's time to first audio, chorusd's
// start-up time and idle memory, and the long-term memory's costs. Each
// runs on real brokers and processes; BENCHMARKS.md records the figures
// with the commands that produced them.
package bench
