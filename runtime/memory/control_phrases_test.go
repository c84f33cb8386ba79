package memory

import "testing"

func TestControlTesterPhrases(t *testing.T) {
	for text, want := range map[string]Command{
		"Forget me, Kyoko.": ForgetMe, "私を忘れてください。": ForgetMe, "Please forget about me.": ForgetMe,
		"My name is Carol Ironic. Please forget me.": ForgetMe, "Forget me. Thanks.": ForgetMe,
		"Thanks for everything. Forget me please.": ForgetMe, "Kyoko, Hana and Aya, forget me.": ForgetMe,
		"Forget my name.": ForgetMe, "Forget everything I told you.": ForgetMe, "Delete my data.": ForgetMe,
		"私を忘れて": ForgetMe, "私のことを忘れてもらえますか？": ForgetMe, "私のことを忘れて。ありがとう。": ForgetMe,
		"全部忘れて": ForgetMe, "今のは忘れて": ForgetThat, "忘れて": ForgetThat, "Forget that.": ForgetThat,
		"Don't forget the milk.": None, "I hope you never forget me.": None, "Please don't forget me.": None,
		"What do you remember about me?": Recall, "Hello! What do you remember about me?": Recall,
		"Will you forget me someday?": None, "I forget things.": None, "忘れないで": None,
	} {
		if got := Control(text); got != want {
			t.Errorf("Control(%q) = %v, want %v", text, got, want)
		}
	}
}
