package paths

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxPathLen is the longest path or glob accepted, in bytes (Linux's PATH_MAX).
const MaxPathLen = 4096

// Errors Canonical, CompilePattern and Resolve wrap. Messages never include the path itself.
var (
	ErrEmpty       = errors.New("empty path")
	ErrTooLong     = fmt.Errorf("longer than %d bytes", MaxPathLen)
	ErrNUL         = errors.New("contains a NUL byte")
	ErrInvalidUTF8 = errors.New("not valid UTF-8")
)

// kind is where a canonical path starts.
type kind uint8

const (
	kindAbs   kind = iota // "/..."
	kindHome              // "~/..." or "~user/...": a home directory, unknown statically
	kindRel               // relative to the working directory
	kindClimb             // below an unknown directory: "../x", "~/../x", /proc/<pid>/cwd/x
	kindAny               // patterns only: a relative pattern starting with "**"
)

// cpath is a parsed canonical path. Components are substrings of the input or constants.
type cpath struct {
	kind kind
	// base is "~" or "~user" for kindHome; for kindClimb the tilde prefix it climbs from ("~", "~user",
	// "~-", "~+2"), or "" for a relative start.
	base  string
	up    int // kindClimb: ".." components after base (rendering only: the directory is unknown)
	comps []string
}

// Canonical returns the canonical form of a file path as an agent tool or shell would pass it:
//
//   - "~", "$HOME" and "${HOME}" at the start become "~"; "~user" stays (another home), "~+" is the
//     working directory, "~-" and "~N" (directory stack entries) are unknown directories;
//   - "//", "." and ".." are resolved as path.Clean does ("/.." is "/"), a trailing slash dropped;
//   - a relative path stays relative ("./a/../b" is "b") but keeps the ".." that climb above its start
//     ("../../etc/shadow"), and "~/.." keeps its "..": the home's depth is unknown;
//   - /proc/<pid>/root (and /proc/<pid>/task/<tid>/root) is "/"; /proc/self/cwd is the working
//     directory; another process's cwd, and a path below /proc/<pid>/fd/<n> or /dev/fd/<n>, is an
//     unknown directory, written "../rest";
//   - ".." after /var/run, /var/lock, /proc/thread-self, /proc/net or /dev/fd climbs from the link's
//     target, as the kernel does ("/var/run/../etc/shadow" is "/etc/shadow");
//   - macOS's /private/etc, /private/var and /private/tmp are /etc, /var and /tmp.
//
// Backslashes are ordinary characters (POSIX). An empty path, a NUL byte, invalid UTF-8 or more than
// MaxPathLen bytes is an error. Shell quoting and expansion other than the home forms are the caller's
// job: "$" elsewhere is an ordinary character.
func Canonical(p string) (string, error) {
	var buf [32]string
	c, err := parse(p, buf[:0])
	if err != nil {
		return "", fmt.Errorf("canonical path: %w", err)
	}
	return c.render(p), nil
}

// render returns the canonical rendering of c, parsed from p: p itself when it is already canonical
// (no allocation).
func (c *cpath) render(p string) string {
	var out [256]byte
	b := c.appendTo(out[:0])
	if string(b) == p {
		return p
	}
	return string(b)
}

// Parsed is a path parsed once into its canonical form, to be matched against several Sets
// (Set.MatchParsed) without parsing it again. Its components live in the buffer given to ParsePath.
type Parsed struct {
	c cpath
}

// ParsePath parses p as Canonical does, appending its components to buf: a caller's array (var buf
// [32]string; ParsePath(p, buf[:0])) keeps a short path off the heap. It returns the parse and the
// canonical path, Canonical(p), or Canonical's error; Set.MatchParsed on the parse answers as
// Set.Match on the canonical path.
//
// The canonical path is a separate result, not a method of Parsed, so that a caller passing it on
// (to an error message, to MatchGlob) does not make the compiler move buf to the heap.
func ParsePath(p string, buf []string) (Parsed, string, error) {
	c, err := parse(p, buf[:0])
	if err != nil {
		return Parsed{}, "", fmt.Errorf("canonical path: %w", err)
	}
	return Parsed{c: c}, c.render(p), nil
}

// Resolve joins a relative path to the working directory cwd (an absolute or home path) and returns
// the canonical result, so that "../x" from a known directory is matched exactly rather than as an
// unknown directory. Absolute and home paths ignore cwd.
func Resolve(cwd, p string) (string, error) {
	c, err := Canonical(p)
	if err != nil {
		return "", fmt.Errorf("resolve: %w", err)
	}
	if strings.HasPrefix(c, "/") || strings.HasPrefix(c, "~") {
		return c, nil
	}
	d, err := Canonical(cwd)
	if err != nil {
		return "", fmt.Errorf("resolve working directory: %w", err)
	}
	if !strings.HasPrefix(d, "/") && !strings.HasPrefix(d, "~") {
		return "", errors.New("resolve: working directory is not absolute")
	}
	j := d + "/" + c
	if len(j) > MaxPathLen {
		return "", fmt.Errorf("resolve: %w", ErrTooLong)
	}
	return Canonical(j)
}

func checkPath(p string) error {
	switch {
	case p == "":
		return ErrEmpty
	case len(p) > MaxPathLen:
		return ErrTooLong
	case strings.IndexByte(p, 0) >= 0:
		return ErrNUL
	case !utf8.ValidString(p):
		return ErrInvalidUTF8
	}
	return nil
}

// homeVarLen returns the length of a leading "$HOME" or "${HOME}" followed by "/" or the end, or 0.
func homeVarLen(p string) int {
	for _, v := range [...]string{"$HOME", "${HOME}"} {
		if strings.HasPrefix(p, v) && (len(p) == len(v) || p[len(v)] == '/') {
			return len(v)
		}
	}
	return 0
}

// tilde classifies a tilde prefix ("~", "~user", "~+", "~-", "~+2"): the kind it starts and its base.
func tilde(prefix string) (kind, string) {
	name := prefix[1:]
	switch {
	case name == "":
		return kindHome, "~"
	case name == "+":
		return kindRel, ""
	case name == "-" || isDirStack(name):
		return kindClimb, prefix
	}
	return kindHome, prefix
}

// isDirStack reports whether a tilde name is a directory stack reference: [+-]?[0-9]+.
func isDirStack(name string) bool {
	if name[0] == '+' || name[0] == '-' {
		name = name[1:]
	}
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

// parse canonicalizes p into components appended to buf.
func parse(p string, buf []string) (cpath, error) {
	if err := checkPath(p); err != nil {
		return cpath{}, err
	}
	c := cpath{comps: buf[:0]}
	rest := p
	switch p[0] {
	case '/':
		c.kind, rest = kindAbs, p[1:]
	case '~':
		i := strings.IndexByte(p, '/')
		if i < 0 {
			i = len(p)
		}
		c.kind, c.base = tilde(p[:i])
		rest = p[i:]
	default:
		if n := homeVarLen(p); n > 0 {
			c.kind, c.base, rest = kindHome, "~", p[n:]
		} else {
			c.kind = kindRel
		}
	}
	fdLink := false // the last component is a file descriptor link that may name a directory
	for len(rest) > 0 {
		var comp string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			comp, rest = rest, ""
		}
		switch comp {
		case "", ".":
			continue
		case "..":
			if fdLink {
				c = c.unknown()
				fdLink = false
				continue
			}
			c = c.dotdot()
			continue
		}
		if fdLink {
			c = c.unknown()
			fdLink = false
		}
		c.comps = append(c.comps, comp)
		switch {
		case c.kind != kindAbs:
		case len(c.comps) == 2 && isPrivateAlias(c.comps[0], c.comps[1]):
			c.comps[0], c.comps = c.comps[1], c.comps[:1] // macOS: /private/etc is /etc
		case len(c.comps) >= 3 && (c.comps[0] == compProc || c.comps[0] == compDev):
			c, fdLink = c.magic()
		}
	}
	return c, nil
}

// isPrivateAlias reports whether /a/b is one of macOS's /private/{etc,var,tmp}, which /etc, /var and
// /tmp link to (compared case-insensitively, as macOS does).
func isPrivateAlias(a, b string) bool {
	return strings.EqualFold(a, "private") &&
		(strings.EqualFold(b, "etc") || strings.EqualFold(b, "var") || strings.EqualFold(b, "tmp"))
}

// unknown returns c made an unknown directory (kindClimb from a relative start). The helpers take
// and return values: mutating through a pointer would move parse's buffer to the heap.
func (c cpath) unknown() cpath {
	c.kind, c.base, c.up, c.comps = kindClimb, "", 1, c.comps[:0]
	return c
}

// dotdot returns c after "..": lexically, except after the links whose target is elsewhere.
func (c cpath) dotdot() cpath {
	n := len(c.comps)
	if n == 0 {
		switch c.kind {
		case kindAbs: // "/.." is "/"
		case kindHome, kindRel:
			c.kind, c.up = kindClimb, 1
		default:
			c.up++
		}
		return c
	}
	if c.kind == kindAbs && n == 2 {
		a, b := c.comps[0], c.comps[1]
		switch {
		case a == "var" && b == "run": // /var/run → /run, whose parent is /
			c.comps = c.comps[:0]
			return c
		case a == "var" && b == "lock": // /var/lock → /run/lock
			c.comps = append(c.comps[:0], "run")
			return c
		case a == compProc && b == "thread-self": // → /proc/<pid>/task/<tid>
			c.comps = append(c.comps[:1], compSelf, "task")
			return c
		case a == compProc && b == "net": // → /proc/self/net
			c.comps[1] = compSelf
			return c
		case a == compDev && b == "fd": // → /proc/self/fd
			c.comps = append(c.comps[:0], compProc, compSelf)
			return c
		}
	}
	c.comps = c.comps[:n-1]
	return c
}

// Components of the kernel's process and device trees that lead to links (magic).
const (
	compProc = "proc"
	compDev  = "dev"
	compSelf = "self"
	compRoot = "root" // /proc/<pid>/root
)

// rootHome is the component of the superuser's home, /root.
const rootHome = "root"

// magic rewrites an absolute path that just entered one of /proc's links to directories; it reports
// whether the path now names a file descriptor link (a directory only if more follows).
func (c cpath) magic() (cpath, bool) {
	s := c.comps
	if len(s) < 3 || (s[0] != compProc && s[0] != compDev) {
		return c, false
	}
	link := ""
	switch {
	case len(s) == 3 && s[0] == compProc:
		link = s[2]
	case len(s) == 5 && s[0] == compProc && s[2] == "task":
		link = s[4]
	case len(s) == 4 && s[0] == compProc && s[2] == "fd",
		len(s) == 6 && s[0] == compProc && s[2] == "task" && s[4] == "fd",
		len(s) == 3 && s[0] == compDev && s[1] == "fd":
		return c, true
	}
	switch link {
	case compRoot:
		c.comps = s[:0]
	case "cwd":
		if s[1] == compSelf || s[1] == "thread-self" {
			c.kind, c.comps = kindRel, s[:0]
		} else {
			c = c.unknown()
		}
	}
	return c, false
}

// appendTo appends the canonical rendering of c.
func (c *cpath) appendTo(b []byte) []byte {
	sep := false
	switch c.kind {
	case kindAbs:
		if len(c.comps) == 0 {
			return append(b, '/')
		}
		sep = true
	case kindHome:
		b = append(b, c.base...)
		sep = true
	case kindRel:
		if len(c.comps) == 0 {
			return append(b, '.')
		}
		if f := c.comps[0]; f[0] == '~' || homeVarLen(f) > 0 {
			b = append(b, '.') // "./~x" must not read back as a home
			sep = true
		}
	case kindClimb:
		if c.base != "" {
			b = append(b, c.base...)
			sep = true
		}
		for i := 0; i < c.up; i++ {
			if sep {
				b = append(b, '/')
			}
			b = append(b, ".."...)
			sep = true
		}
	}
	for i, s := range c.comps {
		if sep || i > 0 {
			b = append(b, '/')
		}
		b = append(b, s...)
	}
	return b
}

// String renders c (tests and errors only).
func (c *cpath) String() string { return string(c.appendTo(nil)) }
