package protocol

import (
	"encoding/json"
	"fmt"
	"testing"
)

func grantWithVotes(n int) []byte {
	sp := "v00"
	g := TurnGrant{From: "floor", MessageID: "m1", Speaker: &sp, Reason: ReasonSpeak, DecidedBy: DecidedAllVoted}
	for i := range n {
		g.Votes = append(g.Votes, Vote{From: fmt.Sprintf("v%02d", i), State: Listen, Importance: float64(i % 10), Closing: ClosingNone})
	}
	b, _ := json.Marshal(g)
	return b
}

func BenchmarkDecodeTurnGrant50(b *testing.B) {
	p := grantWithVotes(50)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := DecodeTurnGrant(p, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeState(b *testing.B) {
	p := []byte(`{"jsonrpc":"2.0","method":"state.send","params":{"from":"kyoko","messageId":"8f1c","state":"speak","importance":7,"selected":true,"closing":"none"}}`)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := DecodeState(p, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRealtimeBroadcast is what every player of a realtime room
// decodes for every accepted post: a Message with a few metadata keys.
func BenchmarkDecodeRealtimeBroadcast(b *testing.B) {
	p := []byte(`{"jsonrpc":"2.0","method":"message.send","params":{"id":"0123456789abcdef0123456789abcdef","from":"floor","to":[],"message":"post 123","metadata":{"phase":"p-0123456789abcdef","idx":123,"remain_count":7,"speaker":"p03"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMessage(p, 0); err != nil {
			b.Fatal(err)
		}
	}
}
