package memory

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCorrectionReplacesEveryRuleForm: for every form the rules read, in
// English and Japanese, a statement and then its correction leave one
// fact, with the new value, and the old value is gone from the file. A
// fact is keyed by what it is about ("daughter's name"), never by its
// value.
func TestCorrectionReplacesEveryRuleForm(t *testing.T) {
	for _, tc := range []struct {
		first, then string
		key         string
		old, new    string // the values, as the file holds them
	}{
		{"My name is Alise.", "Actually, my name is Alice.", "name", "Alise", "Alice"},
		{"Call me Bobby.", "No, call me Rob.", "name", "Bobby", "Rob"},
		{"I'm called Tomas.", "Actually, I'm called Thomas.", "name", "Tomas", "Thomas"},
		{"I like licorice.", "I don't like licorice anymore.", "like:licorice", "likes licorice", "doesn't like licorice"},
		{"I hate opera.", "Actually I love opera.", "like:opera", "doesn't like opera", "likes opera"},
		{"My favorite color is blue.", "Actually, my favourite color is green.", "favorite color", "blue", "green"},
		{"I live in Osaka.", "Actually, I live in Nagoya.", "home", "Osaka", "Nagoya"},
		{"I am 34 years old.", "Actually I'm 35 years old.", "age", "is 34 years", "is 35 years"},
		{"I work as a nurse.", "Actually, my job is doctor.", "job", "nurse", "doctor"},
		{"I have a daughter called Mia.", "Actually, I have a daughter called Nia.", "daughter's name", "Mia", "Nia"},
		{"I have a dog named Rex.", "Actually, my dog is called Max.", "dog's name", "Rex", "Max"},
		{"I've got a cat whose name is Tom.", "My cat's name is Tim.", "cat's name", "Tom", "Tim"},
		{"My daughter is called Mia.", "Actually, my daughter's name is Nia.", "daughter's name", "Mia", "Nia"},
		{"My son is named Kenta.", "I have a son called Kenji.", "son's name", "Kenta", "Kenji"},
		{"私の名前はアリスです。", "いや、名前はアリサです。", "name", "アリス", "アリサ"},
		{"ボブと申します。", "ボビーって呼んで。", "name", "ボブ", "ボビー"},
		{"緑茶が好きです。", "実は、緑茶は好きじゃない。", "like:緑茶", "緑茶が好き", "緑茶は好きじゃない"},
		{"納豆が嫌いです。", "納豆が大好きです。", "like:納豆", "納豆が嫌い", "納豆が好き"},
		{"好きな色は青です。", "好きな色は緑です。", "favorite 色", "青", "緑"},
		{"京都に住んでいます。", "大阪に住んでいます。", "home", "京都", "大阪"},
		{"３０歳です。", "31歳です。", "age", "30歳", "31歳"},
		{"仕事は看護師です。", "仕事は医者です。", "job", "看護師", "医者"},
		{"ミアという娘がいます。", "いや、ニアという娘がいます。", "娘の名前", "ミア", "ニア"},
		{"娘の名前はミアです。", "娘はニアといいます。", "娘の名前", "ミア", "ニア"},
		{"私には犬がいます。", "犬がいるんです。", "has:犬", "", "犬がいる"},
	} {
		t.Run(tc.first, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, Limits{})
			for _, msg := range []string{tc.first, tc.then} {
				sts := Extract(msg)
				if len(sts) != 1 {
					t.Fatalf("Extract(%q) = %+v, want one statement", msg, sts)
				}
				if sts[0].Key != tc.key {
					t.Fatalf("Extract(%q) keyed %q, want %q", msg, sts[0].Key, tc.key)
				}
				add(t, s, Fact{Person: "p1", Key: sts[0].Key, Text: sts[0].Text, Pinned: sts[0].Pinned})
			}
			facts := s.Facts("p1")
			if len(facts) != 1 || !strings.Contains(facts[0].Text, tc.new) {
				t.Fatalf("facts %q, want one with %q", texts(facts), tc.new)
			}
			b, err := os.ReadFile(s.Path())
			if err != nil {
				t.Fatal(err)
			}
			if tc.old != "" && !strings.Contains(tc.new, tc.old) && bytes.Contains(b, []byte(tc.old)) {
				t.Fatalf("the corrected %q is still in the file:\n%s", tc.old, b)
			}
		})
	}
}

// TestCorrectionReplacesAnOldKey: a file written when the rules keyed
// "I have a daughter called Mia" by its value ("has:daughter called
// mia") is read with the key of today; the correction replaces that fact
// too and erases it from the file.
func TestCorrectionReplacesAnOldKey(t *testing.T) {
	dir := t.TempDir()
	old := factLine(Fact{ID: "0123456789abcdef", Person: "p1", Key: "has:daughter called mia", Text: "has a daughter called Mia",
		Robot: "robot-a", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err := os.WriteFile(filepath.Join(dir, "robot-a.facts"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, Limits{})
	for _, st := range Extract("Actually, I have a daughter called Nia.") {
		add(t, s, Fact{Person: "p1", Key: st.Key, Text: st.Text})
	}
	if got := texts(s.Facts("p1")); len(got) != 1 || got[0] != "has a daughter called Nia" {
		t.Fatalf("facts %q", got)
	}
	if n := grep(t, dir, "Mia"); n != 0 {
		t.Fatalf("the corrected name is in the directory %d times", n)
	}
}
