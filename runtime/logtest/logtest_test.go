package logtest

import (
	"slices"
	"testing"
)

func TestRepeatedKeys(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
		bad  bool
	}{
		{`{"time":"t","level":"INFO","msg":"m","device":"a","err":"x"}`, nil, false},
		{`{"msg":"m","device":"a","device":"a","n":{"device":1}}`, []string{"device"}, false},
		{`{"msg":"m","a":[1,{"a":2}],"a":"b","a":null}`, []string{"a", "a"}, false},
		{`time=t msg=m`, nil, true},
	} {
		got, err := RepeatedKeys([]byte(c.line))
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v; want %v (error: %v)", c.line, got, err, c.want, c.bad)
		}
	}
}
