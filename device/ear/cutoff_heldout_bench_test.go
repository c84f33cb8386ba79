package ear

import (
	"testing"

	"github.com/chorus-robotics/chorus/drivers/mic/mictest"
)

// The held-out sets: sentences written after the rules of runtime/endofturn
// and the defaults were tuned on pauseSet and pauseSetJA, and measured once
// without changing a rule for them (BENCHMARKS.md, "Held-out sentences").
// The same kinds of pause in about the same shares: after a filler, a
// conjunction, a て-form or a particle, and where nothing in the words marks
// that more comes.
var heldOutEN = []pauseSentence{
	{"i called my mother and", "she sounded happy"},
	{"we wanted to go swimming but", "the pool was closed"},
	{"er", "can you play some music"},
	{"i am tired because", "i worked all day"},
	{"the soup was hot so", "i waited a minute"},
	{"you know", "i really like this song"},
	{"we could take the bus or", "walk to town"},
	{"she opened the door and", "the cat ran out"},
	{"well", "i am not sure"},
	{"i finished my book and then", "i took a nap"},
	{"it is late so", "i will go to bed"},
	{"hmm", "what should we cook tonight"},
	{"my sister works at", "the hospital"},
	{"the best day of the week is", "friday"},
	{"i want to learn", "the guitar"},
	{"our car is", "in the garage"},
	{"tomorrow i will visit", "my cousin"},
	{"the children are playing in", "the garden"},
	{"my favourite animal is", "the elephant"},
	{"last night we watched", "a funny film"},
	{"the shop closes at", "six"},
	{"my uncle has", "two dogs"},
	{"this afternoon i cleaned", "the kitchen"},
	{"the bus to the city leaves", "every hour"},
}

var heldOutJA = []pauseSentence{
	{"ええと", "駅はどこですか"},
	{"まあ", "いいと思います"},
	{"でも", "まだ眠いです"},
	{"お腹が空いたから", "何か食べます"},
	{"宿題をして", "テレビを見ました"},
	{"兄は東京に住んでいて", "毎週電話をくれます"},
	{"天気がいいので", "洗濯をしました"},
	{"母が", "手紙を書きました"},
	{"この部屋は", "少し寒いです"},
	{"パンと牛乳を", "買ってきてください"},
	{"公園で", "子供たちが遊んでいます"},
	{"疲れたけど", "楽しかったです"},
	{"今朝", "鳥の声を聞きました"},
	{"去年", "北海道に行きました"},
	{"毎朝", "コーヒーを飲みます"},
	{"すごく", "おいしかったです"},
	{"たぶん", "明日は雨です"},
	{"赤い", "傘を忘れました"},
	{"大きな", "犬が走っています"},
	{"三時に", "会いましょう"},
	{"田中さん", "お元気ですか"},
	{"週末は", "家族と過ごします"},
	{"ゆっくり", "休んでください"},
	{"きれいな", "花が咲きました"},
}

// BenchmarkFalseCutOffsHeldOut measures the held-out sets as
// BenchmarkFalseCutOffsStreaming and BenchmarkFalseCutOffsJapanese measure
// theirs (an oracle recogniser that streams; real speech, the VAD's cuts),
// at the hangover alone and at the defaults. Run:
//
//	CHORUS_REQUIRE_STT=1 go test -run XXX -bench FalseCutOffsHeldOut -benchtime 1x ./device/ear/
func BenchmarkFalseCutOffsHeldOut(b *testing.B) {
	rows := []string{"hangover-0.5s-alone", "hangover-0.5s+words+eager+plain-0.9s"}
	b.Run("en", func(b *testing.B) {
		mictest.Need(b, "espeak-ng")
		oracleCutOffs(b, heldOutEN, "en", " ", func(i int, text string) []int16 {
			return trimmed(mictest.Speech(b, pauseVoices[i%len(pauseVoices)], text))
		}, rows...)
	})
	b.Run("ja", func(b *testing.B) { oracleCutOffs(b, heldOutJA, "ja", "", sayJA(b), rows...) })
}
