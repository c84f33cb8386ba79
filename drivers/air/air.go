// Package air is a shared acoustic space for tests and the demo
// (docs/hearing.md): a server mixes what every robot's speaker plays
// and what a simulated person says, in real time, and delivers the mix to
// every robot's microphone, across processes.
//
// A robot's own speaker is next to its microphone: its mic hears it at
// gain 1 without delay. A person is heard at gain 1 by every mic. Another
// robot's speaker is heard at Server.Attenuation after Server.Delay.
//
// # Wire protocol
//
// TCP. The client's first line is a JSON hello, decoded strictly
// (DecodeHello): {"role":"speaker"|"mic"|"person","id":"kyoko","rate":16000}.
// The server answers one JSON line, {"rate":16000} or {"error":"..."} (and
// closes). Then frames both ways: 1 byte type, 4-byte little-endian
// length, payload (ReadFrame, bounded to 1 s of audio):
//
//	'P' s16le mono PCM: a speaker's or person's audio; 20 ms of mix to a mic
//	'F' (speaker, person) drop what is queued: an aborted utterance
//	'D' (to a speaker, person) uint64 LE count of its samples done (played or flushed)
//	'E' (to any) why the server closes the connection
//
// The server mixes in ticks of FrameDuration, counted from its start so
// it does not drift. It reads a source's connection only while the
// source's queue (SourceBuffer) has room, so TCP back-pressure paces a
// client that writes faster than real time. A mic that does not read
// never slows the mix: its frames are dropped and counted (Dropped).
//
// # Usage
//
//	srv := &air.Server{Listen: "127.0.0.1:0"}
//	go srv.Run(ctx)
//	<-srv.Ready()
//	out := &air.Output{Addr: srv.Addr(), ID: "kyoko"}   // an audio.Output
//	ear := &air.Source{Addr: srv.Addr(), ID: "kyoko"}   // a mic.Source
//	err := air.Say(ctx, srv.Addr(), speech, 16000)      // a person speaks
//
// `chorus air serve` runs a server, `chorus air say` a person.
//
// # Concurrency
//
// Server.Run owns the listener, the mixer and a goroutine or two per
// connection; all stop when its ctx ends. Output is safe for concurrent
// use, one Stream at a time, each used by one goroutine; its connection
// has a reader and a sender goroutine that stop at Close. A Source is
// used by one goroutine (mic.Capture's).
package air
