package service

import "testing"

func TestStringLike(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"kukie-*", "kukie-api", true}, {"kukie-*", "kukie-", true}, {"kukie-*", "kuki", false},
		{"web", "web", true}, {"web", "web2", false}, {"*", "anything", true}, {"", "", true}, {"", "x", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"*-prod", "shop-prod", true}, {"*-prod", "shop-dev", false},
		{"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false}, {"[a]", "a", false}, {"[a]", "[a]", true},
		{`a\b`, `a\b`, true},
	} {
		if got := stringLike(c.pattern, c.s); got != c.want {
			t.Errorf("stringLike(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}
