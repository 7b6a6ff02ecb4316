package paths

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	cases := []struct{ in, want string }{
		// absolute
		{"/", "/"},
		{"//", "/"},
		{"/etc/shadow", "/etc/shadow"},
		{"/etc//shadow", "/etc/shadow"},
		{"/etc/./shadow", "/etc/shadow"},
		{"/etc/shadow/", "/etc/shadow"},
		{"/etc/shadow/.", "/etc/shadow"},
		{"///etc///shadow///", "/etc/shadow"},
		{"/tmp/../etc/shadow", "/etc/shadow"},
		{"/../../etc/shadow", "/etc/shadow"},
		{"/a/b/c/../../../etc/shadow", "/etc/shadow"},
		{"/etc/sha\\dow", "/etc/sha\\dow"}, // backslash is an ordinary character
		{"/etc/sha''dow", "/etc/sha''dow"}, // quote removal is the shell's job
		{"/etc/$HOME", "/etc/$HOME"},
		// homes
		{"~", "~"},
		{"~/", "~"},
		{"~/.ssh/../.ssh/id_rsa", "~/.ssh/id_rsa"},
		{"$HOME", "~"},
		{"$HOME/.ssh", "~/.ssh"},
		{"${HOME}/.ssh//id_rsa", "~/.ssh/id_rsa"},
		{"$HOMEX/.ssh", "$HOMEX/.ssh"}, // another variable: an ordinary relative name
		{"~user/x", "~user/x"},
		{"~alice/.ssh/", "~alice/.ssh"},
		{"~/../../etc/shadow", "~/../../etc/shadow"},
		{"~/a/../../x", "~/../x"},
		{"~alice/..", "~alice/.."},
		{"~+/x", "x"},
		{"~-/x", "~-/x"},
		{"~-/../x", "~-/../x"},
		{"~2/x", "~2/x"},
		// relative
		{".", "."},
		{"./", "."},
		{"./a/../b", "b"},
		{"a/..", "."},
		{"a/b/", "a/b"},
		{"../../etc/shadow", "../../etc/shadow"},
		{"../../../../etc/shadow", "../../../../etc/shadow"},
		{"a/../../etc/shadow", "../etc/shadow"},
		{"./../x/./y", "../x/y"},
		{"docs/sudoers-guide.md", "docs/sudoers-guide.md"},
		{"./~x/y", "./~x/y"},       // a directory literally named "~x" stays relative
		{"./$HOME/y", "./$HOME/y"}, // likewise "$HOME"
		{"./~", "./~"},
		// links the kernel resolves differently from the text
		{"/proc/self/root/etc/shadow", "/etc/shadow"},
		{"/proc/1/root/etc/shadow", "/etc/shadow"},
		{"/proc/self/task/7/root/etc/shadow", "/etc/shadow"},
		{"/proc/self/root/../etc/shadow", "/etc/shadow"},
		{"/proc/self/root", "/"},
		{"/proc/self/cwd/x", "x"},
		{"/proc/thread-self/cwd/x", "x"},
		{"/proc/self/cwd/../x", "../x"},
		{"/proc/1/cwd/x", "../x"},
		{"/proc/1/cwd", ".."},
		{"/proc/self/fd/3", "/proc/self/fd/3"},
		{"/proc/self/fd/3/x", "../x"},
		{"/proc/self/fd/3/..", ".."},
		{"/dev/fd/3/../../etc/shadow", "../../etc/shadow"},
		{"/dev/fd/1", "/dev/fd/1"},
		{"/proc/self/fd/../environ", "/proc/self/environ"},
		{"/proc/self/environ", "/proc/self/environ"},
		{"/var/run/../etc/shadow", "/etc/shadow"},
		{"/var/run/secrets/kubernetes.io/serviceaccount/token", "/var/run/secrets/kubernetes.io/serviceaccount/token"},
		{"/var/lock/../secrets/x", "/run/secrets/x"},
		{"/proc/thread-self/../../environ", "/proc/self/environ"},
		{"/proc/net/../environ", "/proc/self/environ"},
		{"/dev/fd/../environ", "/proc/self/environ"},
		{"/x/var/run/../y", "/x/var/y"}, // only /var/run itself is the link
		{"/private/etc/sudoers", "/etc/sudoers"},
		{"/Private/ETC/sudoers", "/ETC/sudoers"},
		{"/private/tmp/../etc/shadow", "/etc/shadow"},
		{"/private/Users/x", "/private/Users/x"},
		{"/x/private/etc", "/x/private/etc"},
	}
	for _, tc := range cases {
		got, err := Canonical(tc.in)
		if err != nil {
			t.Errorf("Canonical(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Canonical(%q) = %q, want %q", tc.in, got, tc.want)
		}
		again, err := Canonical(got)
		if err != nil || again != got {
			t.Errorf("Canonical(%q) = %q, %v: not idempotent", got, again, err)
		}
	}
}

func TestCanonicalErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", ErrEmpty},
		{"/etc/sha\x00dow", ErrNUL},
		{"/etc/\xff", ErrInvalidUTF8},
		{"/" + strings.Repeat("a", MaxPathLen), ErrTooLong},
	}
	for _, tc := range cases {
		_, err := Canonical(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("Canonical(%.20q) error = %v, want %v", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sha") {
			t.Errorf("error %q echoes the path", err)
		}
	}
	if _, err := Canonical("/" + strings.Repeat("a", MaxPathLen-1)); err != nil {
		t.Errorf("a path of MaxPathLen bytes: %v", err)
	}
}

func TestResolve(t *testing.T) {
	cases := []struct{ cwd, p, want string }{
		{"/workspace", "../etc/shadow", "/etc/shadow"},
		{"/workspace/a", "b/../c", "/workspace/a/c"},
		{"/workspace", "/etc/passwd", "/etc/passwd"},
		{"/workspace", "~/.ssh", "~/.ssh"},
		{"~/proj", "../.ssh/id_rsa", "~/.ssh/id_rsa"},
		{"/workspace", ".", "/workspace"},
	}
	for _, tc := range cases {
		got, err := Resolve(tc.cwd, tc.p)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tc.cwd, tc.p, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"workspace", "x"}, {"", "x"}, {"/w", ""}, {"../w", "x"}} {
		if got, err := Resolve(bad[0], bad[1]); err == nil {
			t.Errorf("Resolve(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}
