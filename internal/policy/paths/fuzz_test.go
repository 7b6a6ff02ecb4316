package paths

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var fuzzPaths = []string{
	"/etc/shadow", "/etc//shadow", "/tmp/../etc/shadow", "~/.ssh/../.ssh/id_rsa", "$HOME/.ssh", "${HOME}/x",
	"/root/.ssh/id_rsa", "/home/alice/.ssh/id_rsa", "../../../../etc/shadow", "/proc/self/environ",
	"/proc/1/environ", "/var/run/secrets/kubernetes.io/serviceaccount/token", "/run/secrets/x", "docs/sudoers-guide.md",
	"/tmp/shadow", "~/.sshrc", "/workspace/etc/shadow", "./a/../b", "~alice/x", "~-/x", "~+/x", "/proc/self/root/..",
	"/proc/1/cwd/x", "/dev/fd/3/x", "/var/run/../x", "/proc/thread-self/../../environ", ".", "..", "~/..", "/",
	"a\\b", "/é/ü", "./~x", "/dev/null", "~/../../etc/shadow",
}

func FuzzCanonical(f *testing.F) {
	for _, p := range fuzzPaths {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := Canonical(p)
		if err != nil {
			checkParsedError(t, p, err)
			if _, ok := BaselineRead().Match(p); !ok {
				t.Fatalf("Canonical(%q) failed (%v) but Match did not fail closed", p, err)
			}
			if _, ok := BaselineRead().Covers(p); ok {
				t.Fatalf("Canonical(%q) failed but Covers held", p)
			}
			return
		}
		if again, err := Canonical(c); err != nil || again != c {
			t.Fatalf("Canonical(%q) = %q; again = %q, %v", p, c, again, err)
		}
		checkParsed(t, p, c)
		if strings.Contains(c, "//") || (c != "/" && strings.HasSuffix(c, "/")) {
			t.Fatalf("Canonical(%q) = %q: not clean", p, c)
		}
		comps := strings.Split(c, "/")
		climbing := true
		for i, s := range comps {
			if i == 0 && (strings.HasPrefix(s, "~") || s == "" || (s == "." && len(comps) > 1)) {
				continue // a home, the root, or "./" before a name that must not read as a home
			}
			if s == ".." && climbing {
				continue
			}
			climbing = false
			if s == ".." || (s == "." && c != ".") {
				t.Fatalf("Canonical(%q) = %q: %q left", p, c, s)
			}
		}
		for _, s := range []*Set{BaselineRead(), BaselineWrite()} {
			p1, ok1 := s.Match(p)
			p2, ok2 := s.Match(c)
			if ok1 != ok2 || p1 != p2 {
				t.Fatalf("Match(%q) = %v, Match(Canonical = %q) = %v", p, ok1, c, ok2)
			}
			if _, ok := s.Covers(c); ok && !ok2 {
				t.Fatalf("%q covered but not matched", c)
			}
		}
		if strings.ContainsAny(c, "*?[\\{(\uFFFF") {
			return
		}
		for _, pat := range BaselineWrite().pats {
			if m, n := pat.Match(c), nfaMayMatch(pat, c); m != n {
				t.Fatalf("%q: Match(%q) = %v, automaton %v", pat, c, m, n)
			}
		}
	})
}

func FuzzMatchGlob(f *testing.F) {
	seeds := []struct{ pattern, glob string }{
		{"/etc/shadow", "/etc/sha*"}, {"~/.ssh/**", "~/.ss?/id_*"}, {"/proc/*/environ", "/proc/*/env*"},
		{"**/.env", "*"}, {"/etc/**", "/e*/[a-z]?"}, {"secrets/**", "../*/x"}, {"/a/**/b/*.c", "/a/{x,y}/b/@(c|d)"},
		{"/" + strings.Repeat("*a", 50), "/" + strings.Repeat("*a", 60)}, {"~", "$HOME/.*"}, {"/x/[!a-c]*", "/x/\\[*"},
	}
	for _, s := range seeds {
		f.Add(s.pattern, s.glob, uint16(1), uint16(3))
	}
	f.Fuzz(func(t *testing.T, pattern, glob string, i, j uint16) {
		p, err := CompilePattern(pattern)
		if err != nil {
			return
		}
		var may [3]bool
		for k, m := range []GlobMode{GlobDynamic, GlobShell, GlobShellNoDot} {
			start := time.Now()
			may[k] = p.MatchGlobMode(glob, m)
			cov := p.CoversGlobMode(glob, m)
			if d := time.Since(start); d > timeScale*50*time.Millisecond {
				// The machine may be busy: only a repeatable slowness fails.
				if fastest(func() { p.MatchGlobMode(glob, m); p.CoversGlobMode(glob, m) }) > timeScale*50*time.Millisecond {
					t.Fatalf("pattern %q glob %q mode %d: %v", pattern, glob, m, d)
				}
			}
			if cov && !may[k] {
				t.Fatalf("pattern %q glob %q mode %d: covered but not matched", pattern, glob, m)
			}
		}
		if (may[2] && !may[1]) || (may[1] && !may[0]) {
			t.Fatalf("pattern %q glob %q: modes not nested: %v", pattern, glob, may)
		}
		// Soundness: a canonical path matched by the pattern, with part of it replaced by a star, is
		// a glob that may expand to it.
		c, err := Canonical(glob)
		if err != nil || !p.Match(c) || p.below || strings.ContainsAny(c, "*?[\\{(\uFFFF$") {
			return
		}
		lo, hi := int(i)%(len(c)+1), int(j)%(len(c)+1)
		if lo > hi {
			lo, hi = hi, lo
		}
		// Keep the climbing prefix and a leading tilde: a star does not stand for them (a star right
		// after the tilde would make it a name the shell leaves alone).
		prefix := 0
		if strings.HasPrefix(c, "~") {
			prefix = strings.IndexByte(c, '/')
			if prefix < 0 {
				prefix = len(c)
			}
			if lo == prefix {
				return
			}
		}
		for strings.HasPrefix(c[prefix:], "../") || c[prefix:] == ".." || strings.HasPrefix(c[prefix:], "/..") {
			prefix += 3
			if prefix > len(c) {
				prefix = len(c)
			}
		}
		if lo < prefix {
			return
		}
		g := c[:lo] + "*" + c[hi:]
		if !p.MatchGlob(g) {
			t.Fatalf("pattern %q matches %q but MatchGlob(%q) = false", pattern, c, g)
		}
	})
}

// parsedSets are the sets checkParsed compares Match and MatchParsed on: the baselines and patterns of
// every kind (absolute, home, relative, anywhere).
var parsedSets = func() []*Set {
	user, errs := CompileSet([]string{"secrets/**", "~/.aws", "/etc/*", "**/.env",
		"/proc/*/environ", "a/b", "*", "/", "~", "**/id_*", "/var/run/**", "docs/[a-c]*.md"})
	if len(errs) > 0 {
		panic(errs[0])
	}
	return []*Set{BaselineRead(), BaselineWrite(), user}
}()

// checkParsed checks ParsePath against Canonical (c is Canonical(p)): the same canonical string, the
// same parse as c's, and the same answers from every set.
func checkParsed(t *testing.T, p, c string) {
	t.Helper()
	var buf [8]string
	pp, canon, err := ParsePath(p, buf[:0])
	if err != nil || canon != c {
		t.Fatalf("ParsePath(%q) = %q, %v; Canonical = %q", p, canon, err, c)
	}
	again, err := parse(c, nil)
	if err != nil || again.kind != pp.c.kind || again.base != pp.c.base || again.up != pp.c.up ||
		!slices.Equal(again.comps, pp.c.comps) {
		t.Fatalf("ParsePath(%q) = %+v, but its canonical form %q parses to %+v (%v)", p, pp.c, c, again, err)
	}
	for _, s := range parsedSets {
		p1, ok1 := s.Match(c)
		p2, ok2 := s.MatchParsed(&pp)
		if ok1 != ok2 || p1 != p2 {
			t.Fatalf("Match(%q) = %v %v, MatchParsed(ParsePath(%q)) = %v %v", c, p1, ok1, p, p2, ok2)
		}
	}
}

// checkParsedError checks that ParsePath fails as Canonical did (err).
func checkParsedError(t *testing.T, p string, err error) {
	t.Helper()
	var buf [4]string
	if _, _, perr := ParsePath(p, buf[:0]); perr == nil || perr.Error() != err.Error() {
		t.Fatalf("Canonical(%q) failed (%v) but ParsePath gave %v", p, err, perr)
	}
}

// TestParsePath runs checkParsed on the fuzz seeds and variations of them.
func TestParsePath(t *testing.T) {
	for _, p := range fuzzPaths {
		for _, v := range []string{p, p + "/", "./" + p, p + "/..", p + "/../..", "~/" + p, "../" + p, p + "/./x"} {
			c, err := Canonical(v)
			if err != nil {
				continue
			}
			checkParsed(t, v, c)
		}
	}
	for _, bad := range []string{"", "a\x00b", "\xff", "/" + strings.Repeat("a", MaxPathLen)} {
		_, err := Canonical(bad)
		if err == nil {
			t.Fatalf("Canonical(%q) did not fail", bad)
		}
		checkParsedError(t, bad, err)
	}
	var empty *Set
	var buf [4]string
	pp, _, err := ParsePath("/etc/shadow", buf[:0])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := empty.MatchParsed(&pp); ok {
		t.Fatal("a nil set matched")
	}
}
