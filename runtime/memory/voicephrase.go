package memory

import (
	"regexp"

	"github.com/chorus-robotics/chorus/runtime/protocol"
	"strings"
	"unicode/utf8"
)

// Enrolment by voice (docs/hearing.md, "Who is speaking"): a person asks
// a robot to remember their voice and says their name in the same
// utterance. English: "remember my voice, I'm Alice", "Kyoko, learn my
// voice — my name is Alice", "this is Alice, please recognise my voice".
// Japanese: 「私の声を覚えて、アリスです」「声を覚えてね。私はアリス」.

var (
	enrolEN     = regexp.MustCompile(`(?i)\b(remember|learn|recogni[sz]e|know)\s+my\s+voice\b`)
	enrolNameEN = regexp.MustCompile(`(?i)\b(?:i'?m|i\s+am|my\s+name\s+is|this\s+is|it'?s|call\s+me)\s+([\p{L}][\p{L}'-]*)`)
	enrolJA     = regexp.MustCompile(`声を(覚えて|おぼえて|登録して|覚えてね|覚えてください)`)
	enrolNameJA = []*regexp.Regexp{
		regexp.MustCompile(`(?:私|わたし|僕|ぼく|俺|おれ)(?:の名前)?は\s*([^\s、。！？,.!?]+?)(?:です|だよ|だ|といいます|と申します)?(?:[\s、。！？,.!?]|$)`),
		regexp.MustCompile(`([^\s、。！？,.!?]+?)(?:です|だよ|といいます|と申します)(?:[\s、。！？,.!?]|$)`),
	}
)

// EnrolName reports whether text asks to remember the speaker's voice,
// and the name it gives (ok with an empty name: the request gave none).
func EnrolName(text string) (name string, ok bool) {
	if utf8.RuneCountInString(text) > 200 {
		return "", false
	}
	if enrolEN.MatchString(text) {
		if m := enrolNameEN.FindStringSubmatch(text); m != nil {
			return strings.Trim(m[1], "'-"), true
		}
		return "", true
	}
	if loc := enrolJA.FindStringIndex(text); loc != nil {
		rest := text[:loc[0]] + "、" + text[loc[1]:]
		for _, re := range enrolNameJA {
			if m := re.FindStringSubmatch(rest); m != nil {
				n := strings.TrimPrefix(strings.TrimPrefix(m[1], "私の"), "は")
				if n != "" && !strings.ContainsAny(n, "声私") {
					return n, true
				}
			}
		}
		return "", true
	}
	return "", false
}

// Enrolment's replies, by the rules (the companion answers an enrolment
// itself, never its model).
func EnrolReply(lang string, e protocol.Enrolment) string {
	name, got, need, refused := e.Name, e.Got, e.Need, e.Person == ""
	ja := strings.HasPrefix(lang, "ja")
	if r, n := utf8.DecodeRuneInString(name); r >= 'a' && r <= 'z' { // a recogniser's lower case
		name = string(r-'a'+'A') + name[n:]
	}
	switch {
	case e.Taken:
		if ja {
			return name + "さんの声はもう覚えています。あなたの声は" + name + "さんの声と違うようです。本人か管理者に頼んでください。"
		}
		return "I already know " + name + "'s voice, and yours does not sound like it. " + name + " can ask me again, or whoever set me up."
	case refused && (name == "" || name == "?"):
		if ja {
			return "お名前も教えてください。「声を覚えて、私は〇〇です」と言ってね。"
		}
		return "Tell me your name too: say \"remember my voice, I'm\" and your name."
	case refused:
		if ja {
			return name + "さんは、この家の人として登録されていません。設定した人に追加してもらってね。"
		}
		return "I don't know a " + name + " in this house. Ask whoever set me up to add you."
	case got == 0:
		if ja {
			return "ごめんなさい、声がよく聞き取れませんでした。もう一度お願いします。"
		}
		return "Sorry, I couldn't hear your voice well. Please ask me again."
	case got >= need:
		if ja {
			return name + "さん、声を覚えました。"
		}
		return "Thank you, " + name + ". I know your voice now."
	case got == 1:
		if ja {
			return name + "さん、あと" + itoa(need-got) + "回、何か話してください。声を覚えます。"
		}
		return "All right, " + name + ". Say " + itoa(need-got) + " more sentences, anything, so I learn your voice."
	default:
		if ja {
			return "あと" + itoa(need-got) + "回お願いします。"
		}
		return itoa(need-got) + " more, please."
	}
}

func itoa(n int) string {
	if n < 0 || n > 99 {
		return "a few"
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

// UnsureReply answers a memory command ("what do you remember about me",
// "forget me") from a voice the robots do not know, or not surely: they
// neither tell nor erase anyone's facts on its word.
func UnsureReply(lang string) string {
	return pick(japanese(lang), "I'm not sure who you are by your voice, so I can't tell or forget anything about you. Ask me to remember your voice first.",
		"声だけでは誰だか分からないので、覚えていることを話したり忘れたりはできません。まず「声を覚えて」と言ってね。")
}
