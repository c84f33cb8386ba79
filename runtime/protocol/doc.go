// Package protocol defines the Chorus wire types and their strict decoders.
//
// The shapes follow aikyo's JSON-RPC 2.0 messages (message.send, state.send,
// query.send and its result) so that a payload written by an aikyo client
// decodes here, plus the types Chorus adds: TurnGrant, Presence, and the
// realtime Phase, Post and PostAck.
//
// The bodies of the queries a companion asks its body, and of their
// results, live here too (bodies.go): speak, speak.start, speak.stop and
// speak.more (SpeakRequest, SpeakStart, SpeakStop, SpeakMore and their
// results; speak.more appends, in seq order, to a speak sent with more
// while its answer is still being written), vision
// (VisionResult), the operator's phase command (PhaseCommand) and
// query.cancel's (QueryCancel), with the barge-in modes, VoiceMargin and
// the speech-length estimate every room member uses (voice.go). A device
// decodes a request with these decoders, its asker the result
// (runtime/query's typed calls); nobody declares them again.
//
// # Decoding
//
// Every Decode function is strict (docs/protocol.md, "Decoding is strict"): a payload
// larger than the cap, with unknown fields, a missing or empty id, a number out
// of range, a bad enum value, a wrong "jsonrpc" or "method", or trailing data is
// rejected with an *Error that names the field and says what is wrong. The
// Error's Kind is a small fixed set, suitable as a metrics label.
//
// Where aikyo's versions differ, both are accepted: a State's "id" may be
// present (Japanese schema) or absent (English schema), and an absent
// "closing" means ClosingNone.
//
// # Concurrency
//
// The types are plain values; decoders keep no state and are safe to call from
// any goroutine.
package protocol
