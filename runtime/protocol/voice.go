package protocol

import (
	"time"
	"unicode/utf8"
)

// VoiceMargin is how long past its announced duration (Speaking.DurationMs)
// a voice is still waited for: a speaker whose end never comes holds the
// room up no longer than that (docs/protocol.md, "Speaking status"). The
// companions, the turn floor and the realtime floor all wait this long.
const VoiceMargin = 1500 * time.Millisecond

// SpeechEstimate is how long text will take to say, on the long side: the
// duration a companion announces when its voice starts, before the device
// has said how long it really was. The room waits at most this (plus
// VoiceMargin) for an end it never hears.
func SpeechEstimate(text, language string) time.Duration {
	per := 90 * time.Millisecond
	if language == "ja" {
		per = 200 * time.Millisecond
	}
	return time.Second + time.Duration(utf8.RuneCountInString(text))*per
}
