package wyoming

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func read(s string) (Event, error) {
	return ReadEvent(bufio.NewReader(strings.NewReader(s)))
}

func TestReadEvent(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		typ      string
		data     string // JSON of Data, "" for none
		payload  string
		err      error // nil: ok
	}{
		{"bare", `{"type":"describe"}` + "\n", "describe", "", "", nil},
		{"header data", `{"type":"transcript","data":{"text":"hi"}}` + "\n", "transcript", `{"text":"hi"}`, "", nil},
		{"data section merged over header data", `{"type":"transcript","data":{"text":"a","x":1},"data_length":15,"version":"1.5.2"}` + "\n" + `{"text":"hi b"}`, "transcript", `{"text":"hi b","x":1}`, "", nil},
		{"payload", `{"type":"audio-chunk","data_length":37,"payload_length":4}` + "\n" + `{"rate":16000,"width":2,"channels":1}abcd`, "audio-chunk", `{"channels":1,"rate":16000,"width":2}`, "abcd", nil},
		{"crlf", `{"type":"describe"}` + "\r\n", "describe", "", "", nil},
		{"nulls", `{"type":"describe","data":null,"data_length":null,"payload_length":null}` + "\n", "describe", "", "", nil},
		{"eof", ``, "", "", "", io.EOF},
		{"eof in header", `{"type":"describe"}`, "", "", "", io.ErrUnexpectedEOF},
		{"eof in data", `{"type":"x","data_length":10}` + "\n{}", "", "", "", io.ErrUnexpectedEOF},
		{"eof in payload", `{"type":"x","payload_length":10}` + "\nab", "", "", "", io.ErrUnexpectedEOF},
		{"not json", "hello\n", "", "", "", ErrProtocol},
		{"not an object", "[1]\n", "", "", "", ErrProtocol},
		{"no type", `{"data":{}}` + "\n", "", "", "", ErrProtocol},
		{"empty type", `{"type":""}` + "\n", "", "", "", ErrProtocol},
		{"type not string", `{"type":3}` + "\n", "", "", "", ErrProtocol},
		{"data not object", `{"type":"x","data":[1]}` + "\n", "", "", "", ErrProtocol},
		{"version not string", `{"type":"x","version":1}` + "\n", "", "", "", ErrProtocol},
		{"negative length", `{"type":"x","payload_length":-1}` + "\n", "", "", "", ErrProtocol},
		{"fractional length", `{"type":"x","payload_length":1.5}` + "\n", "", "", "", ErrProtocol},
		{"huge payload", `{"type":"x","payload_length":99999999999}` + "\n", "", "", "", ErrProtocol},
		{"huge data", `{"type":"x","data_length":2000000}` + "\n", "", "", "", ErrProtocol},
		{"data section not object", `{"type":"x","data_length":4}` + "\nnull", "", "", "", ErrProtocol},
		{"long header", `{"type":"x","pad":"` + strings.Repeat("a", MaxHeader) + "\"}\n", "", "", "", ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := read(tc.in)
			if tc.err != nil || tc.typ == "" {
				if !errors.Is(err, tc.err) {
					t.Fatalf("ReadEvent = %+v, %v; want %v", ev, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var data string
			if ev.Data != nil {
				b, _ := json.Marshal(ev.Data)
				data = string(b)
			}
			if ev.Type != tc.typ || data != tc.data || string(ev.Payload) != tc.payload {
				t.Fatalf("ReadEvent = %q %s %q", ev.Type, data, ev.Payload)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	ev, err := NewEvent("audio-chunk", map[string]int{"rate": 16000, "width": 2, "channels": 1}, []byte{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteEvent(&buf, ev); err != nil {
		t.Fatal(err)
	}
	if err := WriteEvent(&buf, Event{Type: "audio-stop"}); err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(buf.String(), "\n")
	var h map[string]any
	if err := json.Unmarshal([]byte(line), &h); err != nil || h["type"] != "audio-chunk" || h["data_length"] != 37.0 || h["payload_length"] != 4.0 || h["version"] != Version {
		t.Fatalf("header %s (%v)", line, err)
	}
	r := bufio.NewReader(&buf)
	got, err := ReadEvent(r)
	if err != nil {
		t.Fatal(err)
	}
	var fmtData struct{ Rate, Width, Channels int }
	if err := got.Decode(&fmtData); err != nil || fmtData.Rate != 16000 || fmtData.Width != 2 || fmtData.Channels != 1 || !bytes.Equal(got.Payload, ev.Payload) {
		t.Fatalf("round trip: %+v %+v %v", got, fmtData, err)
	}
	if got, err := ReadEvent(r); err != nil || got.Type != "audio-stop" || got.Data != nil || got.Payload != nil {
		t.Fatalf("second event %+v %v", got, err)
	}
	if _, err := ReadEvent(r); err != io.EOF {
		t.Fatalf("after the last event: %v", err)
	}
	if _, err := AppendEvent(nil, Event{}); err == nil {
		t.Fatal("an event without a type was written")
	}
}

// ReadAnswer skips the types it does not wait for, stops at an error
// event, and bounds how many it reads.
func TestReadAnswer(t *testing.T) {
	var skipped []string
	r := bufio.NewReader(strings.NewReader(`{"type":"x-progress","data":{"p":1}}` + "\n" + `{"type":"transcript-start"}` + "\n" + `{"type":"transcript","data":{"text":"hi"}}` + "\n"))
	ev, err := ReadAnswer(r, "transcript", 10, func(ev Event) { skipped = append(skipped, ev.Type) })
	if err != nil || ev.Type != "transcript" || len(skipped) != 2 || skipped[0] != "x-progress" {
		t.Fatalf("ReadAnswer = %+v, %v; skipped %v", ev, err, skipped)
	}
	_, err = ReadAnswer(bufio.NewReader(strings.NewReader(`{"type":"error","data":{"text":"no model","code":"x"}}`+"\n")), "transcript", 10, nil)
	var se *ServerError
	if !errors.As(err, &se) || se.Text != "no model" || !strings.Contains(err.Error(), `"no model"`) {
		t.Fatalf("error event: %v", err)
	}
	if _, err := ReadAnswer(bufio.NewReader(strings.NewReader("")), "info", 10, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	many := strings.Repeat(`{"type":"x"}`+"\n", 5)
	if _, err := ReadAnswer(bufio.NewReader(strings.NewReader(many)), "info", 3, nil); !errors.Is(err, ErrProtocol) {
		t.Fatalf("too many: %v", err)
	}
}
