package wyoming

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzReadEvent: any bytes give events or an error, never a panic, and
// every event read writes back to bytes that read as the same event.
func FuzzReadEvent(f *testing.F) {
	f.Add([]byte(`{"type":"transcript","data":{"text":"hi"}}` + "\n"))
	f.Add([]byte(`{"type":"audio-chunk","data_length":37,"payload_length":4}` + "\n" + `{"rate":16000,"width":2,"channels":1}abcd`))
	f.Add([]byte(`{"type":"info","data":{"asr":[{"name":"x","models":[]}]},"data_length":2}` + "\n{}"))
	f.Add([]byte("{\"type\":\"x\",\"payload_length\":3}\nab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for range 8 {
			ev, err := ReadEvent(r)
			if err != nil {
				return
			}
			if len(ev.Payload) > MaxPayload {
				t.Fatalf("payload of %d bytes", len(ev.Payload))
			}
			out, err := AppendEvent(nil, ev)
			if err != nil {
				t.Fatalf("an event read cannot be written: %v", err)
			}
			again, err := ReadEvent(bufio.NewReader(bytes.NewReader(out)))
			if err != nil || again.Type != ev.Type || !bytes.Equal(again.Payload, ev.Payload) || len(again.Data) != len(ev.Data) {
				t.Fatalf("round trip of %q: %+v, %v", out, again, err)
			}
		}
	})
}
