package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefghij…"},
		{"ab" + "é" + "cd", 3, "ab…"}, // é is 2 bytes at 2..3: not cut in half
		{"日本語", 4, "日…"},
		{"abc", 0, "…"},
	}
	for _, c := range cases {
		if got := Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	long := strings.Repeat("é", 100)
	for n := range 40 {
		if got := Clip(long, n); !utf8.ValidString(got) || len(got) > n+len("…") {
			t.Errorf("Clip(é×100, %d) = %q: invalid UTF-8 or too long", n, got)
		}
	}
}
