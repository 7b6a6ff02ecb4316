package shell

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// summary renders a command for table tests:
//
//	name arg... [|via=...] [|code=...] [|wrap=a,b]
//
// Dynamic words are shown as <value>, words with spaces or quotes quoted.
func summary(c Command) string {
	var b strings.Builder
	if c.Dynamic {
		fmt.Fprintf(&b, "<%s>", c.Program)
	} else {
		b.WriteString(c.Name)
	}
	for _, a := range c.Args {
		b.WriteByte(' ')
		b.WriteString(wordString(a))
	}
	if c.Via != "" {
		fmt.Fprintf(&b, " |via=%s", c.Via)
	}
	if c.Code != CodeNone {
		fmt.Fprintf(&b, " |code=%s", codeShort(c.Code))
	}
	if len(c.Wrappers) > 0 {
		fmt.Fprintf(&b, " |wrap=%s", strings.Join(c.Wrappers, ","))
	}
	return b.String()
}

func wordString(w Word) string {
	v := w.Value
	if v == "" || strings.ContainsAny(v, " \t\n\"'\\") {
		v = strconv.Quote(v)
	}
	if w.Dynamic {
		return "<" + v + ">"
	}
	return v
}

func codeShort(k CodeKind) string {
	switch k {
	case CodeInline:
		return "inline"
	case CodePiped:
		return "piped"
	case CodeDynamic:
		return "dynamic"
	}
	return "none"
}

func summaries(s *Script) []string {
	out := make([]string, len(s.Commands))
	for i, c := range s.Commands {
		out[i] = summary(c)
	}
	return out
}

func mustAnalyze(t *testing.T, src string) *Script {
	t.Helper()
	s, err := Analyze(src, Limits{})
	if err != nil {
		t.Fatalf("Analyze(%q): %v", src, err)
	}
	return s
}

func equalSlices(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
