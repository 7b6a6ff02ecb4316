package shell

import (
	"errors"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzSeeds are the sources of the table tests plus attacker spellings.
func fuzzSeeds() []string {
	seeds := []string{
		bench200, "", " ", ";", "&&", "|", "\\", "'", "\"", "$(", "`", "${", "$((", "<<", "<<<", "((", "[[",
		"rm -rf /", "sudo rm -rf /", "curl -s x | sh", "eval $(curl x)", "bash -c \"$x\"",
		"a=rm; $a -rf /", "{rm,-rf,/}", "echo {1..100}", "find . -exec sh -c 'rm {}' \\;",
		"x='a[$(id)]'; echo $((x))", "declare -n r=x", "f() { f; }; f", "cat <<EOF\n$(id)\nEOF",
		"env -S 'env -S \"rm -rf /\"'", "xargs -I{} bash -c {}", "ssh -o ProxyCommand='id' h",
		"awk '{system(\"id\")}'", "sed 's/a/b/e'", "python3 -c 'import os'", "pwsh -c x",
		"for a in 1 2 3; do for b in 1 2 3; do echo $a$b; done; done", "a | b |& c; d & e",
		"git -c alias.x='!id' x", "tar --checkpoint-action=exec='id' -cf x .", "echo ${x:-$(id)}",
		"$'\\x72m' -rf /", "r''m -rf ~", "\\rm -rf /", "/???/r? x", "ls *(e:'id':)",
		"echo \"a b\" 'c d' e'f'\"g\" 2>&1 >/dev/null <in >>out", "ls -la && echo ok || echo no; pwd",
	}
	for _, c := range analyzeCases {
		seeds = append(seeds, c.src)
	}
	return seeds
}

// checkScript verifies invariants every result must hold.
func checkScript(t *testing.T, s *Script, lim Limits) {
	t.Helper()
	lim = lim.withDefaults()
	if len(s.Commands) > lim.MaxCommands {
		t.Fatalf("%d commands > %d", len(s.Commands), lim.MaxCommands)
	}
	nwords := 0
	checkWord := func(w Word) {
		nwords++
		if len(w.Value) > lim.MaxBytes {
			t.Fatalf("word of %d bytes > %d", len(w.Value), lim.MaxBytes)
		}
		if _, err := path.Match(w.Pattern, "x"); err != nil {
			t.Fatalf("invalid pattern %q for %q", w.Pattern, w.Value)
		}
		if w.Dynamic && !w.Glob {
			t.Fatalf("dynamic word %q not marked glob", w.Value)
		}
	}
	for i, c := range s.Commands {
		if c.Parent >= i || c.Parent < -1 {
			t.Fatalf("command %d has parent %d", i, c.Parent)
		}
		if c.Depth > lim.MaxDepth || c.Depth < 0 {
			t.Fatalf("command %d has depth %d", i, c.Depth)
		}
		if c.Dynamic && c.Name != "" {
			t.Fatalf("dynamic command %d has name %q", i, c.Name)
		}
		for j := 1; j < len(c.Flags); j++ {
			if c.Flags[j-1] >= c.Flags[j] {
				t.Fatalf("command %d flags not sorted and unique: %q", i, c.Flags)
			}
		}
		for _, w := range c.Args {
			checkWord(w)
		}
		for _, r := range c.Redirects {
			checkWord(r.Target)
		}
	}
	if nwords > 64*lim.MaxWords {
		t.Fatalf("%d words reported", nwords)
	}
	for _, p := range s.Pipelines {
		for _, i := range p {
			if i < 0 || i >= len(s.Commands) {
				t.Fatalf("pipeline index %d out of range", i)
			}
		}
	}
}

var fuzzPatterns = func() []*CommandPattern {
	var ps []*CommandPattern
	for _, s := range []string{"rm -rf", "sudo", "curl | sh", "git push --force", "a | b | c"} {
		p, err := CompilePattern(s)
		if err != nil {
			panic(err)
		}
		ps = append(ps, p)
	}
	return ps
}()

// FuzzShell checks that Analyze never panics, stays within its time bound
// and its limits, and that its results hold their invariants.
func FuzzShell(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	lim := Limits{}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > DefaultMaxBytes {
			return
		}
		start := time.Now()
		s, err := analyze(src, lim)
		if d := time.Since(start); d > 200*time.Millisecond {
			// Measure again: a shared machine may have stalled us.
			start = time.Now()
			_, _ = analyze(src, lim)
			if d2 := time.Since(start); d2 > 200*time.Millisecond {
				t.Fatalf("Analyze took %v (then %v) on %d bytes", d, d2, len(src))
			}
		}
		if err != nil {
			if s != nil {
				t.Fatal("result with an error")
			}
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		checkScript(t, s, lim)
		for _, p := range fuzzPatterns {
			if i, ok := p.Match(s); ok && (i < 0 || i >= len(s.Commands)) {
				t.Fatalf("match index %d out of range", i)
			}
		}
		if len(src) < 256 {
			if p, err := CompilePattern(src); err == nil {
				p.Match(s)
			}
		}
	})
}

// FuzzFastParse checks the fast parser against mvdan.cc/sh: whenever the
// fast parser accepts an input, the analysis must be identical.
func FuzzFastParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Add("a 'b' \"c\" d'e'\"f\" 2>x 3>>y <z >&2 2>&1 | g && h || i; j;")
	f.Add("a;b|c&&d||e")
	f.Fuzz(func(t *testing.T, src string) {
		compareParsers(t, src)
	})
}

func compareParsers(t *testing.T, src string) {
	t.Helper()
	ps := &parserState{p: newFullParser()}
	if _, ok := ps.fast.parse(src, false); !ok {
		return
	}
	checkSlabsExact(t, src)
	fastS, fastErr := analyzeWith(ps, src, Limits{})
	full := &parserState{p: newFullParser(), noFast: true}
	fullS, fullErr := analyzeWith(full, src, Limits{})
	if fastErr == nil && fullErr != nil && checkNesting(src) != nil {
		// The full path's bracket count is conservative (brackets inside
		// double quotes count); the fast subset has no nesting to bound.
		return
	}
	if (fastErr == nil) != (fullErr == nil) {
		t.Fatalf("%q: fast error %v, full error %v", src, fastErr, fullErr)
	}
	if fastErr != nil {
		if errors.Is(fastErr, ErrLimit) != errors.Is(fullErr, ErrLimit) {
			t.Fatalf("%q: fast error %v, full error %v", src, fastErr, fullErr)
		}
		return
	}
	if !reflect.DeepEqual(fastS, fullS) {
		t.Fatalf("%q: fast and full parsers differ:\nfast %q\nfull %q", src, summaries(fastS), summaries(fullS))
	}
}

// TestFastParseAgreement runs the differential check on the seeds and on
// variations of them, without fuzzing.
func TestFastParseAgreement(t *testing.T) {
	accepted := 0
	for _, s := range fuzzSeeds() {
		for _, v := range []string{s, s + " x", "x " + s, s + "; " + s, strings.ReplaceAll(s, " ", "  ")} {
			compareParsers(t, v)
			if _, ok := (&fastParser{}).parse(v, false); ok {
				accepted++
			}
		}
	}
	if accepted < 100 {
		t.Errorf("fast parser accepted only %d inputs", accepted)
	}
}

// TestNoPanicOddInputs feeds inputs that have broken parsers before.
func TestNoPanicOddInputs(t *testing.T) {
	inputs := []string{
		strings.Repeat("(", 5000), strings.Repeat("$(", 3000), strings.Repeat("{", 5000),
		strings.Repeat("`", 1001), strings.Repeat("a|", 5000) + "a", strings.Repeat("\\", 777),
		"\x00", "\xff\xfe", "echo \x00", string([]byte{0xc3}), strings.Repeat("$((1+", 500),
		strings.Repeat("eval ", 100) + "x", strings.Repeat("{a,b}", 20), "{1..9223372036854775807}",
		"{-9223372036854775808..9223372036854775807}", "{a..z..-9223372036854775808}",
		"echo {1..2..0}", "x=" + strings.Repeat("$x", 1000), "cat <<" + strings.Repeat("E", 100),
		"for x in " + strings.Repeat("a ", 2000) + "; do for y in $x $x; do echo $y; done; done",
		"f() { f; }; " + strings.Repeat("f; ", 200), "a=(" + strings.Repeat("$(x) ", 300) + ")",
		"${x:-${x:-${x:-${x:-${x:-$(rm)}}}}}", "echo $'\\U7fffffff' $'\\777' $'\\x' $'\\c'",
	}
	for _, src := range inputs {
		if !utf8.ValidString(src) {
			src = strings.ToValidUTF8(src, "?") + src
		}
		start := time.Now()
		s, err := analyze(src, Limits{})
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%.40q: took %v", src, d)
		}
		if err == nil {
			checkScript(t, s, Limits{})
		}
	}
}
