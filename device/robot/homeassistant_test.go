package robot

import "testing"

func TestHomeAssistantNodeIDs(t *testing.T) {
	for _, tc := range []struct{ id, node string }{
		{"kyoko", "kyoko"}, {"kyoko-2_b", "kyoko-2_b"},
	} {
		if got := haNodeOf(tc.id); got != tc.node {
			t.Errorf("%s → %s, want %s", tc.id, got, tc.node)
		}
	}
	seen := map[string]string{}
	for _, id := range []string{"キョウコ", "サクラコ", "kyoko.v2", "kyoko_v2", "kyoko v2"} {
		n := haNodeOf(id)
		if !haNode.MatchString(n) {
			t.Errorf("%s → %q is not a node id", id, n)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("%s and %s share node %s", id, other, n)
		}
		seen[n] = id
	}
}
