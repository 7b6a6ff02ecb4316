package paths

import (
	"strings"
	"testing"
	"time"
)

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		pattern string
		yes, no []string
	}{
		{"/etc/shadow",
			[]string{"/etc/shado?", "/etc/sha*", "/e*/shadow", "/etc/*", "/*/*dow", "*", "/etc/[s]hadow",
				"/etc/[!x]hadow", "/etc/[^x]hadow", "/etc/s[[:alpha:]]adow", "/e?c/shadow", "/etc/shadow*",
				"/etc//sha*", "/etc/./sha*", "/tmp/../etc/sha*", "/tmp/*/../etc/shadow", "/tmp/?/../../etc/shadow",
				"/var/run/../etc/sha*", "/var/r*/../etc/shadow", "/proc/self/root/etc/sha*", "/proc/*/root/etc/shadow",
				"/proc/1/r*/etc/shadow", "/proc/*/task/*/root/etc/shadow", "/proc/self/fd/3/*/shadow",
				"/workspace/.*/etc/shadow", "/workspace/.?/../etc/shadow", "../../etc/sh*", "../*",
				"/etc/{shadow,passwd}", "{/etc,/tmp}/shadow", "/etc/sh{a..z}dow", "/etc/@(shadow|passwd)",
				"/etc/!(passwd)", "/etc/sha+(d)ow", "*dow", "*/shadow", "/etc/sh\\adow", "/etc/{a,b}",
				"/ETC/SHA*", "/etc/[S]hadow", "/private/etc/sha*", "/etc/[A-Z]hadow",
				"/etc/*/x", "/*/x/../shadow",
			},
			[]string{"/tmp/*.log", "/etc/passwd*", "/etc/*.conf", "/home/*/x", "/etc/sha?", "etc/sh*",
				"/etc/[a-r]hadow", "/etc/\\*", "/tmp/*", "~/*", "/etc/shadow-*", "/etc/[0-9]hadow",
				"/workspace/*/etc/shadow", "/etc/sha\\*", "${HOME}/*", "/etc/sha[x]dow", "/etc/sh[a*",
				"/etc/[shadow", "/etc/${x}*", "/proc/*/environ", "/etc/*.conf", "/etc/*release*"}},
		{"~/.ssh/**",
			[]string{"~/.ss?/id_*", "/root/.ssh/*", "/home/*/.ssh/id_rsa", "/home/*/.ssh", "$HOME/.s*", "~/*",
				"/Users/*/.ssh/*", "~/.SSH/*",
				"/home/*", "~alice/.ssh/*", "~/.*", "../.ssh/*", "/*/.ssh/*", "~/.ssh/../.ss*/id_rsa",
				"~{root,alice}/.ssh/*"},
			[]string{"~/.sshrc*", "/tmp/*", "~/projects/*.go", "/srv/*/.ssh/x",
				".ssh/*", "/workspace/*/.ssh/x", "~/[!.]*"}},
		{"/proc/*/environ",
			[]string{"/proc/*/environ", "/proc/self/env*", "/proc/[0-9]*/environ", "/proc/thread-self/../../env*",
				"/proc/*/status"}, // the star may be "1/environ": a user pattern also matches below itself
			[]string{"/proc/self/stat?s", "/proc/self/env?", "/proc/[0-9]/stat*"}},
		{"**/.env",
			[]string{"*/.env", "/workspace/.e*", "/workspace/*", "./.en?", "app/*/.env", "~/*"},
			[]string{"/workspace/.env.example?", "/workspace/README*.md", "app/x.[a-z]", "*.md"}},
		{"/etc/**",
			[]string{"/etc/*", "/e*", "/etc", "/[e]tc/x"},
			[]string{"/tmp/*", "/opt/etc/*", "etc/*"}},
		{"secrets/**",
			[]string{"secrets/*", "*", "/workspace/secrets/*", "se*"},
			[]string{"public/*", "a/secrets/*"}},
	}
	for _, tc := range cases {
		p := mustPattern(t, tc.pattern)
		for _, g := range tc.yes {
			if !p.MatchGlob(g) {
				t.Errorf("%q.MatchGlob(%q) = false, want true", tc.pattern, g)
			}
		}
		for _, g := range tc.no {
			if p.MatchGlob(g) {
				t.Errorf("%q.MatchGlob(%q) = true, want false", tc.pattern, g)
			}
		}
	}
}

func TestMatchGlobUnanalysable(t *testing.T) {
	p := mustPattern(t, "/etc/shadow")
	for _, g := range []string{"", "/etc/\x00*", "/etc/\xff*", "/" + strings.Repeat("*", MaxPathLen)} {
		if !p.MatchGlob(g) {
			t.Errorf("MatchGlob(%.20q) = false, want true (fail closed)", g)
		}
		if p.CoversGlob(g) {
			t.Errorf("CoversGlob(%.20q) = true, want false (fail closed)", g)
		}
	}
}

func TestCoversGlob(t *testing.T) {
	cases := []struct {
		pattern string
		yes, no []string
	}{
		{"/workspace/**",
			[]string{"/workspace/src/*.go", "/workspace/*", "/workspace/a/b/[xy]", "/workspace/./*", "/workspace/a/../*"},
			[]string{"/workspace/../etc/*", "/work*/x", "*", "../*", "/workspace/.*/x", "/workspace/*/../../etc/x",
				"~/workspace/*", "workspace/*", "/proc/self/cwd/*", "/proc/self/root/workspace/*.go/../../x"}},
		{"/workspace",
			[]string{"/workspace/*.go"},
			[]string{"/workspace*"}},
		{"/workspace/*.go",
			[]string{"/workspace/main.go"},
			[]string{"/workspace/*.go", "/workspace/x/*.go"}}, // conservative
		{"**",
			[]string{"*", "../*", "/x/*", "~/*"},
			nil},
		{"/**",
			[]string{"/*", "/etc/*"},
			[]string{"*", "~/*", "x/*"}},
		{"~/proj/**",
			[]string{"~/proj/*.py", "$HOME/proj/*/x"},
			[]string{"/home/*/proj/x", "~alice/proj/*", "/root/proj/*", "~/pro*/x"}},
		{"**/build/**",
			[]string{"/x/build/*.o", "../build/*", "build/*", "~/build/*"},
			[]string{"/x/*/y", "*"}},
		{"src/**",
			[]string{"src/*.go", "./src/*"},
			[]string{"*", "/src/*", "../src/*", "x/src/*"}},
	}
	for _, tc := range cases {
		p := mustPattern(t, tc.pattern)
		for _, g := range tc.yes {
			if !p.CoversGlob(g) {
				t.Errorf("%q.CoversGlob(%q) = false, want true", tc.pattern, g)
			}
			if !p.MatchGlob(g) {
				t.Errorf("%q.MatchGlob(%q) = false although covered", tc.pattern, g)
			}
		}
		for _, g := range tc.no {
			if p.CoversGlob(g) {
				t.Errorf("%q.CoversGlob(%q) = true, want false", tc.pattern, g)
			}
		}
	}
}

func TestRewriteShell(t *testing.T) {
	const d = string(dynRune)
	cases := map[string]string{
		"a{b,c}d":      "a" + d + "d",
		"a{1..3}":      "a" + d,
		"a{b}":         "a{b}",
		"${HOME,,}x":   "${HOME,,}x",
		"a\\{b,c}":     "a\\{b,c}",
		"@(a|b)/x":     d + "/x",
		"x!(y)z":       "x" + d + "z",
		"\\*(y)":       "\\*(y)",
		"\\\\*(y)":     "\\\\" + d,
		"(plain)":      "(plain)",
		"{a,{b,c}}/d":  d + "/d",
		"{a}{b,c}":     "{a}" + d,
		"a{b,c":        "a{b,c",
		"{/etc,/tmp}/": d + "/",
	}
	for in, want := range cases {
		if got := rewriteShell(in); got != want {
			t.Errorf("rewriteShell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMatchGlobBounded feeds the matcher adversarial globs and patterns; each call must stay fast.
func TestMatchGlobBounded(t *testing.T) {
	longPat := "/" + strings.Repeat("*a", 1000) + "/**/" + strings.Repeat("?b", 500)
	pats := []string{"/etc/shadow", "~/.ssh/**", "**/.env", longPat, "/" + strings.Repeat("**/x/", 30) + "y"}
	globs := []string{
		"/" + strings.Repeat("*a", MaxPathLen/2-1),
		strings.Repeat("*/", MaxPathLen/2-1),
		"/" + strings.Repeat("?", MaxPathLen-1),
		"/" + strings.Repeat("[a-z]", MaxPathLen/5-1),
		"/" + strings.Repeat("{a,b}", MaxPathLen/5-1),
		"/" + strings.Repeat("a/../", MaxPathLen/5-1),
		"../" + strings.Repeat("*/", MaxPathLen/2-2),
		"/" + strings.Repeat("[", MaxPathLen-1),
		"/" + strings.Repeat("@(", MaxPathLen/4) + strings.Repeat(")", MaxPathLen/4-1),
	}
	for _, ps := range pats {
		p := mustPattern(t, ps)
		for _, g := range globs {
			for _, m := range []GlobMode{GlobDynamic, GlobShell, GlobShellNoDot} {
				if d := fastest(func() { p.MatchGlobMode(g, m); p.CoversGlobMode(g, m) }); d > timeScale*50*time.Millisecond {
					t.Errorf("pattern %.20q glob %.20q mode %d: %v", ps, g, m, d)
				}
			}
		}
	}
	for _, g := range globs {
		if d := fastest(func() { BaselineWrite().MatchGlob(g) }); d > timeScale*50*time.Millisecond {
			t.Errorf("BaselineWrite().MatchGlob(%.20q): %v", g, d)
		}
	}
}

// fastest returns the fastest of three runs of f: the machine may be busy with other work.
func fastest(f func()) time.Duration {
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		f()
		if d := time.Since(start); d < best {
			best = d
		}
	}
	return best
}
