package paths

import (
	"errors"
	"strings"
	"testing"
)

func mustPattern(t testing.TB, s string) *Pattern {
	t.Helper()
	p, err := CompilePattern(s)
	if err != nil {
		t.Fatalf("CompilePattern(%q): %v", s, err)
	}
	return p
}

func TestMatchAndCovers(t *testing.T) {
	cases := []struct {
		pattern, path string
		match, covers bool
	}{
		// literal patterns match the path and everything below it
		{"/etc/shadow", "/etc/shadow", true, true},
		{"/etc/shadow", "/etc//shadow", true, true},
		{"/etc/shadow", "/etc/./shadow", true, true},
		{"/etc/shadow", "/tmp/../etc/shadow", true, true},
		{"/etc/shadow", "/etc/shadow/x", true, true},
		{"/etc/shadow", "/etc/shadow-", false, false},
		{"/etc/shadow", "/etc/passwd", false, false},
		{"/etc/shadow", "/tmp/shadow", false, false},
		{"/etc/shadow", "/workspace/etc/shadow", false, false},
		{"/etc/shadow", "/etc", false, false},
		{"/etc/shadow", "/proc/self/root/etc/shadow", true, true},
		{"/etc/shadow", "/var/run/../etc/shadow", true, true},
		{"/etc/shadow", "/ETC/shadow", true, false}, // case-insensitive file systems
		{"/etc/shadow", "/etc/SHADOW", true, false},
		{"/etc/shadow", "/etc/ſhadow", true, false}, // U+017F folds to 's'
		{"/etc/shadow", "/private/etc/shadow", true, true},
		{"/etc/shadow", "/PRIVATE/etc/shadow", true, true},
		{"/etc/shadow", "/private/etc/../etc/shadow", true, true},
		{"/etc/shadow", "/private/x/shadow", false, false},
		// relative paths climbing above their start: fail closed on suffix alignment
		{"/etc/shadow", "../../etc/shadow", true, false},
		{"/etc/shadow", "../../../../etc/shadow", true, false},
		{"/etc/shadow", "../shadow", true, false},
		{"/etc/shadow", "../passwd", false, false},
		{"/etc/shadow", "../README.md", false, false},
		{"/etc/shadow", "~/../../etc/shadow", true, false},
		{"/etc/shadow", "/proc/1/cwd/../etc/shadow", true, false},
		// plain relative paths are under the working directory
		{"/etc/shadow", "etc/shadow", false, false},
		{"/etc/shadow", "shadow", false, false},
		// "**"
		{"/var/run/secrets/**", "/var/run/secrets/kubernetes.io/serviceaccount/token", true, true},
		{"/var/run/secrets/**", "/var/run/secrets", true, true},
		{"/var/run/secrets/**", "/var/run/secretsx", false, false},
		{"/run/secrets/**", "/run/secrets/db-password", true, true},
		{"/run/secrets/**", "/var/lock/../secrets/x", true, true},
		{"/a/**/b", "/a/b", true, true},
		{"/a/**/b", "/a/x/y/b", true, true},
		{"/a/**/b", "/a/x/y/b/c", true, true},
		{"/a/**/b", "/a/x/y/c", false, false},
		{"/**", "/anything/at/all", true, true},
		{"/", "/anything", true, true},
		{"/", "~/x", true, false},
		{"**", "x", true, true},
		{"**", "../x", true, true},
		// "*", "?", classes
		{"/proc/*/environ", "/proc/self/environ", true, true},
		{"/proc/*/environ", "/proc/1/environ", true, true},
		{"/proc/*/environ", "/proc/environ", false, false},
		{"/proc/*/environ", "/proc/1/task/1/environ", false, false},
		{"/proc/*/environ", "/proc/thread-self/../../environ", true, true},
		{"/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_ed25519_key", true, true},
		{"/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_ed25519_key.pub", false, false},
		{"/etc/ssh/ssh_host_*_key", "/etc/ssh/ssh_host_ed25519_key/x", false, false}, // a glob last component: no "below"
		{"/tmp/file?.txt", "/tmp/file1.txt", true, true},
		{"/tmp/file?.txt", "/tmp/file12.txt", false, false},
		{"/tmp/[a-c]x", "/tmp/bx", true, true},
		{"/tmp/[^a-c]x", "/tmp/bx", true, false}, // "Bx" is the same file on a case-folding file system
		{"/tmp/[^a-zA-Z]x", "/tmp/bx", false, false},
		{"/tmp/[!a-c]x", "/tmp/dx", true, true},
		{"/tmp/\\*", "/tmp/*", true, true},
		{"/tmp/\\*", "/tmp/a", false, false},
		{"/tmp/a*b*c", "/tmp/aXbYc", true, true},
		{"/tmp/a*b*c", "/tmp/aXcYb", false, false},
		{"/tmp/*é", "/tmp/café", true, true},
		// homes
		{"~/.ssh/**", "~/.ssh/id_rsa", true, true},
		{"~/.ssh/**", "~/.ssh/../.ssh/id_rsa", true, true},
		{"~/.ssh/**", "$HOME/.ssh/id_rsa", true, true},
		{"~/.ssh/**", "${HOME}/.ssh", true, true},
		{"~/.ssh/**", "~/.sshrc", false, false},
		{"~/.ssh/**", "/root/.ssh/id_rsa", true, false},
		{"~/.ssh/**", "/home/alice/.ssh/id_rsa", true, false},
		{"~/.ssh/**", "/home/.ssh/id_rsa", false, false},
		{"~/.ssh/**", "/srv/alice/.ssh/id_rsa", false, false},
		{"~/.ssh/**", "/Users/alice/.ssh/id_rsa", true, false},
		{"~/.ssh/**", "/users/alice/.SSH/id_rsa", true, false},
		{"~/.ssh/**", "~/.SSH/ID_RSA", true, false},
		{"~/.ssh/**", "../../Users/alice/.ssh/x", true, false},
		{"/Users/*/.ssh/**", "~/.ssh/x", true, false},
		{"/tmp/[a-c]x", "/tmp/Bx", true, false},
		{"/tmp/*é", "/tmp/cafÉ", true, false},
		{"~/.ssh/**", "~alice/.ssh/id_rsa", true, false},
		{"~/.ssh/**", "../.ssh/id_rsa", true, false},
		{"~/.ssh/**", "../../root/.ssh/id_rsa", true, false},
		{"~/.ssh/**", "../alice/.ssh/id_rsa", true, false},
		{"~/.ssh/**", ".ssh/id_rsa", false, false},
		{"~/.ssh/**", "/workspace/.ssh/id_rsa", false, false},
		{"$HOME/.aws", "~/.aws/credentials", true, true},
		{"/root/**", "~/.bashrc", true, false},
		{"/home/*/.ssh/**", "~/.ssh/id_rsa", true, false},
		{"/home/bob/.ssh", "~/.ssh/id_rsa", true, false},
		{"/home/bob/.ssh", "~alice/.ssh/id_rsa", true, false},
		{"/root/.ssh", "~/.ssh", true, false},
		{"/root/.ssh", "~/x/.ssh", false, false},
		{"~", "~/anything", true, true},
		{"~", "/root/x", true, false},
		{"~", "../x", true, false},
		// relative and anywhere patterns
		{"**/.env", ".env", true, true},
		{"**/.env", "app/.env", true, true},
		{"**/.env", "/workspace/app/.env", true, true},
		{"**/.env", "~/.env", true, true},
		{"**/.env", "../.env", true, true},
		{"**/.env", "/workspace/.env.example", false, false},
		{"**/.env", "/workspace/.envrc", false, false},
		{"**/a/b", "../b", true, false},
		{"**/a/b", "../a/b", true, true},
		{"secrets/**", "secrets/x", true, true},
		{"secrets/**", "a/secrets/x", false, false},
		{"secrets/**", "/workspace/secrets/x", true, false},
		{"secrets/**", "~/secrets/x", true, false},
		{"secrets/**", "../secrets/x", true, false},
		{"secrets/**", "../w/secrets/x", true, false},
		{"secrets/**", "other", false, false},
		{".", "x/y", true, true},
		{"root/.ssh", "~/.ssh", true, false},
		// write patterns with harmless neighbours
		{"/dev/**", "/dev/sda", true, true},
		{"/etc/**", "/etc", true, true},
		{"/etc/**", "/etcetera", false, false},
		{"/etc/cron*/**", "/etc/crontab", true, true},
		{"/etc/cron*/**", "/etc/cron.d/job", true, true},
		{"docs/sudoers", "docs/sudoers-guide.md", false, false},
		// unanalysable paths: Match fails closed, Covers fails closed the other way
		{"/workspace/**", "", true, false},
		{"/workspace/**", "/workspace/a\x00b", true, false},
	}
	for _, tc := range cases {
		p := mustPattern(t, tc.pattern)
		if got := p.Match(tc.path); got != tc.match {
			t.Errorf("%q.Match(%q) = %v, want %v", tc.pattern, tc.path, got, tc.match)
		}
		if got := p.Covers(tc.path); got != tc.covers {
			t.Errorf("%q.Covers(%q) = %v, want %v", tc.pattern, tc.path, got, tc.covers)
		}
		if tc.covers && !tc.match {
			t.Errorf("case %q %q: covered but not matched", tc.pattern, tc.path)
		}
		// A glob without glob characters is the path itself.
		if strings.ContainsAny(tc.path, `*?[\{(`) || tc.path == "" || strings.Contains(tc.path, "\x00") {
			continue
		}
		if got := p.MatchGlob(tc.path); got != tc.match {
			t.Errorf("%q.MatchGlob(%q) = %v, want %v (as Match)", tc.pattern, tc.path, got, tc.match)
		}
		if got := p.CoversGlob(tc.path); got != tc.covers {
			t.Errorf("%q.CoversGlob(%q) = %v, want %v (as Covers)", tc.pattern, tc.path, got, tc.covers)
		}
		// The glob automaton agrees with the component matcher on plain paths.
		if got := nfaMayMatch(p, tc.path); got != tc.match {
			t.Errorf("%q: automaton on %q = %v, want %v", tc.pattern, tc.path, got, tc.match)
		}
	}
}

// nfaMayMatch runs the glob automaton on a plain path (MatchGlob takes the component matcher's
// shortcut for those).
func nfaMayMatch(p *Pattern, path string) bool {
	g, ok := parseGlob(path, GlobDynamic)
	if !ok {
		return true
	}
	budget := globBudget
	return p.matchGlobNFA(&g, buildGlobNFA(&g), &budget)
}

func TestCompilePatternErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", ErrEmpty},
		{"/etc/\x00", ErrNUL},
		{"/etc/\xfe", ErrInvalidUTF8},
		{"/" + strings.Repeat("a", MaxPatternLen), ErrTooLong},
		{strings.Repeat("/a", MaxPatternComponents+1), errTooMany},
		{"/etc/../shadow", errDotDot},
		{"~alice/.ssh", errTildeUser},
		{"/etc/[abc", errBadClass},
		{"/etc/[]", errBadClass},
		{"/etc/[z-a]", errBadRange},
		{"/etc/[[:alpha:]]", errPOSIXClass},
		{"/etc/x\\", errTrailingBackslash},
	}
	for _, tc := range cases {
		p, err := CompilePattern(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("CompilePattern(%.30q) = %v, %v; want error %v", tc.in, p, err, tc.want)
		}
	}
	for _, ok := range []string{
		strings.Repeat("/a", MaxPatternComponents), "/etc/[]]", "/etc/[a-]", "~", "~/", "$HOME", "**", "./x",
		"/etc/**/**/x", "/x/a**b",
	} {
		if _, err := CompilePattern(ok); err != nil {
			t.Errorf("CompilePattern(%.30q): %v", ok, err)
		}
	}
}

func TestPatternString(t *testing.T) {
	p := mustPattern(t, "~/.ssh//**")
	if p.String() != "~/.ssh//**" || p.Reason() != "" {
		t.Errorf("String() = %q, Reason() = %q", p.String(), p.Reason())
	}
}

func TestSet(t *testing.T) {
	s, errs := CompileSet([]string{"/workspace/**", "/etc/[x", "~/.ssh/**", "", "**/.env", "/etc/shadow"})
	if s.Len() != 4 || len(errs) != 2 {
		t.Fatalf("Len() = %d, errors %v", s.Len(), errs)
	}
	var pe *PatternError
	if !errors.As(errs[0], &pe) || pe.Index != 1 || !errors.As(errs[1], &pe) || pe.Index != 3 {
		t.Errorf("errors = %v, want indexes 1 and 3", errs)
	}
	if !errors.Is(errs[1], ErrEmpty) {
		t.Errorf("errors[1] = %v, want ErrEmpty", errs[1])
	}
	cases := []struct{ path, match, covers string }{
		{"/workspace/.env", "/workspace/**", "/workspace/**"},
		{"/etc/shadow", "/etc/shadow", "/etc/shadow"},
		{"/root/.ssh/id_rsa", "~/.ssh/**", ""},
		{"~/.ssh/id_rsa", "~/.ssh/**", "~/.ssh/**"},
		{"app/.env", "**/.env", "**/.env"},
		{"../x", "/workspace/**", ""},
		{"/tmp/x", "", ""},
		{"", "(unanalysable path)", ""},
	}
	for _, tc := range cases {
		p, ok := s.Match(tc.path)
		if got := name(p, ok); got != tc.match {
			t.Errorf("Set.Match(%q) = %q, want %q", tc.path, got, tc.match)
		}
		p, ok = s.Covers(tc.path)
		if got := name(p, ok); got != tc.covers {
			t.Errorf("Set.Covers(%q) = %q, want %q", tc.path, got, tc.covers)
		}
	}
	if got := s.Patterns(); len(got) != 4 || got[1] != "~/.ssh/**" {
		t.Errorf("Patterns() = %q", got)
	}
	var empty *Set
	if p, ok := empty.Match("/etc/shadow"); ok || p != nil || empty.Len() != 0 {
		t.Errorf("nil set matched")
	}
	if _, ok := empty.MatchGlob("*"); ok {
		t.Errorf("nil set matched a glob")
	}
}

// TestSetOrder checks that the candidate index keeps the list's order.
func TestSetOrder(t *testing.T) {
	s, _ := CompileSet([]string{"**/.x", "/a/**", "~/**", "/*/x", "/root/**"})
	for path, want := range map[string]string{
		"/a/.x":   "**/.x",
		"/a/y":    "/a/**",
		"/root/y": "~/**",
		"/b/x":    "/*/x",
		"~/y":     "~/**",
		"/c/d":    "",
	} {
		p, ok := s.Match(path)
		if got := name(p, ok); got != want {
			t.Errorf("Match(%q) = %q, want %q", path, got, want)
		}
	}
}

func name(p *Pattern, ok bool) string {
	if !ok {
		return ""
	}
	return p.String()
}
