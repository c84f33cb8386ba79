// Package wyoming is the Wyoming protocol (Home Assistant's voice
// protocol; spec in rhasspy/wyoming's README) as Chorus speaks it: one
// typed event, one strict reader and one writer, used by every program
// that talks Wyoming — speech to text (drivers/stt/wyoming) and wake-word
// detection (drivers/wake/wyoming). An event is one JSON header line
// {"type", "data"?, "data_length"?, "payload_length"?}, then data_length
// bytes of JSON merged over data, then payload_length bytes of payload
// (PCM for audio-chunk). ReadEvent bounds each part (MaxHeader, MaxData,
// MaxPayload) and refuses what is malformed with ErrProtocol; FuzzReadEvent
// holds it.
//
// A well-formed event of a type the reader does not wait for is not an
// error: ReadAnswer skips it, as the reference clients and servers skip
// event types they do not handle (a newer server's transcript-start, a
// vendor's own events), and only an error event ends the wait early.
// Describe asks a server what it offers (Info: its asr and wake programs
// and their models).
package wyoming
