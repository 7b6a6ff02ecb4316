package shell

import "testing"

// TestSedRunsCode pins sedRunsCode. An s command reads two delimited fields (the regex, then the
// replacement) before its flags, and a y command two (source and destination characters): a
// replacement or destination that reads as a flag or a command ("e") must not count, and a script
// whose second field is unterminated counts as code.
func TestSedRunsCode(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   bool
	}{
		{"", false},
		{"p", false},
		{"s/a/b/", false},
		{"s/a/b/g", false},
		{"s/a/e/", false},  // "e" is the replacement, not the flag
		{"s/e/e/g", false}, // and the regex
		{"s/a/b/e", true},
		{"s/a/b/ge", true},
		{"s/a/b/w out", false},
		{"s/a/b/;e", true},
		{"s/a/b/\ne date", true},
		{`s/a\/e/b/`, false},
		{`s|a|e|`, false},
		{`s|a|b|e`, true},
		{"s/a/b", true},   // unterminated replacement
		{"s/a", true},     // unterminated regex
		{"s/a/\n/", true}, // a newline ends the replacement: unterminated
		{"y/abe/xye/", false},
		{"y/ab/xy/;e", true},
		{"y/ab/xy", true}, // unterminated destination
		{"y/ab", true},
		{"/re/s/a/e/", false},
		{"1,/re/s/a/b/ep", true},
		{`\,re,s,a,e,`, false},
		{"2e date", true},
		{"a e", false},
	} {
		if got := sedRunsCode(tc.script); got != tc.want {
			t.Errorf("sedRunsCode(%q) = %v, want %v", tc.script, got, tc.want)
		}
	}
}
