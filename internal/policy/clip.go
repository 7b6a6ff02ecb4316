package policy

import "unicode/utf8"

// Clip shortens s to at most n bytes without cutting a UTF-8 character, marking a cut with "…". It
// is for quoting a caller-supplied value (a name, a path) in an error message.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
