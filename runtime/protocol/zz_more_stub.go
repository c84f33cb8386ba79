package protocol

// TEMPORARY until the speak branch merges.
const TypeSpeakMore = "speak.more"

type SpeakMore struct {
	MessageID string `json:"messageId"`
	Seq       int    `json:"seq"`
	Message   string `json:"message,omitempty"`
	More      bool   `json:"more,omitempty"`
}
type SpeakMoreResult struct {
	Appended bool `json:"appended"`
}
