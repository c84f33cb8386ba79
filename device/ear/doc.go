// Package ear is the robot's ear (docs/hearing.md): its
// microphone's audio, cut into utterances by a voice activity detector,
// streamed to a speech-to-text engine while the person still speaks, and
// reported to the room as a heard report on the robot's own topic. The
// room's floor (runtime/hearing) turns the reports of all the robots that
// heard one sentence into one Message.
//
// The Gate keeps the ear from hearing robots: while any companion of the
// room speaks (its retained speaking status), and for a tail after, no
// audio reaches speech to text, and an utterance under way is dropped.
package ear
