package paths

import (
	"strings"
)

// globBudget bounds the state pairs one MatchGlob (or one Set.MatchGlob) explores: a few
// milliseconds at most; past it the answer is "could match".
const globBudget = 1 << 18

// GlobMode says what a glob's stars may stand for.
type GlobMode uint8

const (
	// GlobDynamic means a "*" may also stand for a dynamic part (a variable, a command substitution) and
	// then span '/'. Sound for any word; MatchGlob's mode.
	GlobDynamic GlobMode = iota
	// GlobShell means the word's glob characters are the shell's own: "*", "?" and "[...]" stay within a
	// component (they may match a leading '.', as with dotglob); a whole "**" component spans
	// components (globstar). Brace expansions and extended globs still span '/'.
	GlobShell
	// GlobShellNoDot is as GlobShell, and a wildcard never matches a component's leading '.' (bash
	// without dotglob, POSIX sh, zsh without GLOB_DOTS). Only for shells known to run so.
	GlobShellNoDot
)

// gcomp is one component of a shell glob.
type gcomp struct {
	lit  string // the name when !meta
	meta bool
	dyn  bool // has a star, which may stand for a dynamic part spanning components
	g    *cglob
}

// dynStar is an unknown run of components: what a glob turns into when the directory it names
// cannot be told (".." after a glob, a glob that may be "." or "..", a /proc link).
var dynStar = gcomp{meta: true, dyn: true, g: newCGlob([]elem{{op: opDyn}})}

// globPath is a canonicalized shell glob.
type globPath struct {
	kind     kind // kindAbs, kindHome, kindRel or kindClimb
	base     string
	comps    []gcomp
	concrete bool // no glob character left: a plain path
	noDot    bool
}

// parseGlob canonicalizes a glob as Canonical does a path. It reports false for input Canonical
// would reject (empty, too long, NUL, invalid UTF-8).
//
// Expansions are taken as written: a star stands for any characters, '/' included, but not for "."
// or ".." components. Where an expansion may climb (".." after a glob component, a component such as
// ".*" that the shell may expand to ".."), everything before becomes a leading dynamic star.
func parseGlob(s string, mode GlobMode) (globPath, bool) {
	if checkPath(s) != nil {
		return globPath{}, false
	}
	g := globPath{noDot: mode == GlobShellNoDot}
	rest := rewriteShell(g.prefix(s))
	fdLink := false
	for len(rest) > 0 {
		var comp string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			comp, rest = rest, ""
		}
		c := parseGlobComp(comp, mode)
		if !c.meta {
			switch c.lit {
			case "", ".":
				continue
			case "..":
				if fdLink {
					g.convert()
					fdLink = false
					continue
				}
				g.dotdot()
				continue
			}
		}
		if fdLink {
			g.convert()
			fdLink = false
		}
		if c.meta && c.g.elems[0].op == opLit && c.g.elems[0].r == '.' && (c.g.match(".", false) || c.g.match("..", false)) {
			g.convert() // the shell may expand it to "." or ".."
			continue
		}
		g.comps = append(g.comps, c)
		switch {
		case g.kind != kindAbs:
		case len(g.comps) == 2 && !g.comps[0].meta && !c.meta && isPrivateAlias(g.comps[0].lit, c.lit):
			g.comps = append(g.comps[:0], c)
		default:
			fdLink = g.magic()
		}
	}
	g.concrete = true
	for _, c := range g.comps {
		if c.meta {
			g.concrete = false
		}
	}
	return g, true
}

// prefix sets g's kind and base from the start of the glob s and returns the rest of s.
func (g *globPath) prefix(s string) string {
	rest := s
	switch s[0] {
	case '/':
		g.kind, rest = kindAbs, s[1:]
	case '~':
		i := strings.IndexByte(s, '/')
		if i < 0 {
			i = len(s)
		}
		switch name := s[1:i]; {
		case strings.ContainsAny(name, "*?[\\("):
			g.kind = kindRel // not a tilde prefix: the shell leaves it as it is
		case strings.ContainsRune(name, '{'):
			g.kind, g.base, rest = kindHome, "~?", s[i:] // brace expansion first: some user's home
		default:
			g.kind, g.base = tilde(s[:i])
			rest = s[i:]
		}
	default:
		if n := homeVarLen(s); n > 0 {
			g.kind, g.base, rest = kindHome, "~", s[n:]
		} else {
			g.kind = kindRel
		}
	}
	return rest
}

// parseGlobComp parses one component of a glob (see parseGlob).
func parseGlobComp(comp string, mode GlobMode) gcomp {
	var c gcomp
	switch {
	case !strings.ContainsAny(comp, "\\*?[\uFFFF"):
		c.lit = comp
	case comp == "**" && mode != GlobDynamic:
		c = dynStar // globstar
	default:
		elems, meta, _ := parseElems(comp, true)
		if !meta {
			c.lit = literal(elems)
			break
		}
		for i := range elems {
			if elems[i].op == opStar && mode == GlobDynamic {
				elems[i].op = opDyn
			}
			if elems[i].op == opDyn {
				c.dyn = true
			}
		}
		c.meta, c.g = true, newCGlob(elems)
	}
	return c
}

// convert replaces everything so far by a dynamic star.
func (g *globPath) convert() {
	g.kind, g.base = kindRel, ""
	g.comps = append(g.comps[:0], dynStar)
}

func couldBe(c gcomp, name string) bool {
	if !c.meta {
		return c.lit == name
	}
	return c.g.match(name, false)
}

// aliases are the links whose ".." is not the lexical parent (see cpath.dotdot).
var aliases = [...]struct {
	a, b string
	to   []string
}{
	{"var", "run", nil},
	{"var", "lock", []string{"run"}},
	{compProc, "thread-self", []string{compProc, compSelf, "task"}},
	{compProc, "net", []string{compProc, compSelf}},
	{compDev, "fd", []string{compProc, compSelf}},
}

func (g *globPath) dotdot() {
	n := len(g.comps)
	if n == 0 {
		if g.kind == kindHome || g.kind == kindRel {
			g.kind = kindClimb
		}
		return
	}
	if g.comps[n-1].meta {
		g.convert()
		return
	}
	if g.kind == kindAbs && n == 2 {
		for _, al := range aliases {
			if couldBe(g.comps[0], al.a) && couldBe(g.comps[1], al.b) {
				if g.comps[0].meta {
					g.convert()
					return
				}
				g.comps = g.comps[:0]
				for _, s := range al.to {
					g.comps = append(g.comps, gcomp{lit: s})
				}
				return
			}
		}
	}
	g.comps = g.comps[:n-1]
}

// magic is cpath.magic for globs: a link that only may be named is an unknown directory.
func (g *globPath) magic() bool {
	s := g.comps
	link := -1
	switch {
	case len(s) == 3 && couldBe(s[0], compProc):
		link = 2
	case len(s) == 5 && couldBe(s[0], compProc) && couldBe(s[2], "task"):
		link = 4
	}
	if link > 0 && (couldBe(s[link], compRoot) || couldBe(s[link], "cwd")) {
		if s[0].meta || s[link].meta || (link == 4 && s[2].meta) {
			g.convert()
			return false
		}
		switch {
		case s[link].lit == compRoot:
			g.comps = s[:0]
		case !s[1].meta && (s[1].lit == compSelf || s[1].lit == "thread-self"):
			g.kind, g.comps = kindRel, s[:0]
		default:
			g.convert()
		}
		return false
	}
	switch {
	case len(s) == 4 && couldBe(s[0], compProc) && couldBe(s[2], "fd"),
		len(s) == 6 && couldBe(s[0], compProc) && couldBe(s[2], "task") && couldBe(s[4], "fd"),
		len(s) == 3 && couldBe(s[0], compDev) && couldBe(s[1], "fd"):
		return true
	}
	return false
}

// leadingStar reports whether a relative glob starts with a star: it may expand to any path.
func (g *globPath) leadingStar() bool {
	return (g.kind == kindRel || g.kind == kindClimb) && len(g.comps) > 0 && g.comps[0].meta &&
		g.comps[0].g.elems[0].op == opDyn
}

// toCPath returns a concrete glob as a parsed path.
func (g *globPath) toCPath(buf []string) cpath {
	c := cpath{kind: g.kind, base: g.base, comps: buf[:0]}
	if g.kind == kindClimb && g.base == "" {
		c.up = 1
	}
	for _, x := range g.comps {
		c.comps = append(c.comps, x.lit)
	}
	return c
}

// rewriteShell replaces brace expansions ("{a,b}", "{1..9}") and extended globs ("@(a|b)", "!(x)")
// by a spanning star (dynRune): they may stand for several alternatives, some spanning '/'.
func rewriteShell(s string) string {
	if !strings.ContainsAny(s, "{(") {
		return s
	}
	closeAt, alt, escaped := shellGroups(s)
	n := len(s)
	var b []byte
	last := 0
	for i := 0; i < n; i++ {
		if escaped[i] || closeAt[i] == 0 {
			continue
		}
		switch {
		case s[i] == '{' && alt[i]:
			b = append(b, s[last:i]...)
		case s[i] == '(' && i-1 >= last && strings.IndexByte("?*+@!", s[i-1]) >= 0 && !escaped[i-1]:
			b = append(b, s[last:i-1]...)
		default:
			continue
		}
		b = append(b, string(dynRune)...)
		i = int(closeAt[i])
		last = i + 1
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// shellGroups finds the brace expansions and parenthesized groups of s: closeAt holds, at the index
// of each opening '{' or '(', the index of its closing one (0 if unclosed); alt marks the braces that
// hold alternatives or a range; escaped the characters after an unescaped backslash.
func shellGroups(s string) (closeAt []int32, alt, escaped []bool) {
	n := len(s)
	closeAt = make([]int32, n)
	alt = make([]bool, n)
	var braces, parens []int
	escaped = make([]bool, n)
	for i := 0; i < n; i++ {
		if i > 0 && s[i-1] == '\\' && !escaped[i-1] {
			escaped[i] = true
			continue
		}
		switch s[i] {
		case '{':
			if i > 0 && s[i-1] == '$' {
				braces = append(braces, -1) // a parameter expansion, not a brace expansion
			} else {
				braces = append(braces, i)
			}
		case '}':
			if k := len(braces); k > 0 {
				if o := braces[k-1]; o >= 0 {
					closeAt[o] = int32(i)
				}
				braces = braces[:k-1]
			}
		case ',':
			if k := len(braces); k > 0 && braces[k-1] >= 0 {
				alt[braces[k-1]] = true
			}
		case '.':
			if k := len(braces); k > 0 && braces[k-1] >= 0 && i+1 < n && s[i+1] == '.' {
				alt[braces[k-1]] = true
			}
		case '(':
			parens = append(parens, i)
		case ')':
			if k := len(parens); k > 0 {
				closeAt[parens[k-1]] = int32(i)
				parens = parens[:k-1]
			}
		}
	}
	return closeAt, alt, escaped
}

// buildGlobNFA builds the automaton of the strings a glob may expand to. A component made only of
// spanning stars may be empty, and its separator then vanishes ("/etc/$X/shadow" with X="").
func buildGlobNFA(g *globPath) *nfa {
	b := newBuilder(64)
	sepFirst := false // every component is preceded by '/'
	switch g.kind {
	case kindAbs:
		sepFirst = true
	case kindHome:
		b.alt(
			func() { b.str(g.base) },
			func() { b.str("/root") },
			func() { b.str("/home/"); b.set(setUser1); b.loop(setNonSlash) },
			func() { b.str("/Users/"); b.set(setUser1); b.loop(setNonSlash) },
		)
		sepFirst = true
	}
	for i, c := range g.comps {
		sep := sepFirst || i > 0
		emit := func() {
			if sep {
				b.lit('/')
			}
			if c.meta {
				b.elems(c.g.elems, g.noDot)
			} else {
				b.str(c.lit)
			}
		}
		if sep && c.dyn && onlyDyn(c.g.elems) {
			b.opt(emit)
		} else {
			emit()
		}
	}
	return b.done()
}

func onlyDyn(es []elem) bool {
	for _, e := range es {
		if e.op != opDyn {
			return false
		}
	}
	return true
}

// matchGlobNFA intersects the pattern with a non-concrete glob.
func (p *Pattern) matchGlobNFA(g *globPath, gn *nfa, budget *int) bool {
	if g.kind == kindClimb {
		if p.n == 0 {
			return true
		}
		return intersect(p.nfa, gn, p.nfa.climb, budget)
	}
	start := [1]int32{p.nfa.start}
	return intersect(p.nfa, gn, start[:], budget)
}

// MatchGlob reports whether a glob, as the shell would expand it, could name a path the pattern
// matches (Match's semantics; for block lists), in GlobDynamic mode: MatchGlobMode(glob, GlobDynamic).
func (p *Pattern) MatchGlob(glob string) bool { return p.MatchGlobMode(glob, GlobDynamic) }

// MatchGlobMode reports whether a glob could name a path the pattern matches. The glob is a path after
// quote removal in which "*", "?" and "[...]" are unquoted glob characters (a quoted one is escaped
// with a backslash); mode says whether a "*" may span '/'. Brace expansions and extended globs count
// as a spanning star. Expansions are not assumed to contain "." or ".." components: a caller whose
// dynamic part may climb should pass a star for everything up to and including it
// ("/workspace/$X/y" → "*/y"). A dynamic part is not assumed to reach below a pattern's literal last
// component either (a file, or a directory written without "/**"): write directories as "dir/**".
//
// The answer is sound under these assumptions (never false when an expansion matches) and the work
// is bounded: past a fixed budget, or for a glob Canonical would reject, the answer is true.
func (p *Pattern) MatchGlobMode(glob string, mode GlobMode) bool {
	g, ok := parseGlob(glob, mode)
	if !ok {
		return true
	}
	if g.concrete {
		var buf [32]string
		c := g.toCPath(buf[:0])
		return p.mayMatch(&c)
	}
	budget := globBudget
	return p.matchGlobNFA(&g, buildGlobNFA(&g), &budget)
}

// CoversGlob reports whether every expansion of the glob is certainly a path the pattern matches
// (Covers' semantics; for allow lists), in GlobDynamic mode.
func (p *Pattern) CoversGlob(glob string) bool { return p.CoversGlobMode(glob, GlobDynamic) }

// CoversGlobMode reports whether every expansion of the glob is certainly a path the pattern matches.
// It is conservative: the glob's directory before its first glob character must be covered together
// with everything below it ("/workspace/src/*.go" is covered by "/workspace/**" but not by
// "/workspace/src/*.go"). A glob Canonical would reject is never covered.
func (p *Pattern) CoversGlobMode(glob string, mode GlobMode) bool {
	g, ok := parseGlob(glob, mode)
	if !ok {
		return false
	}
	if g.concrete {
		var buf [32]string
		c := g.toCPath(buf[:0])
		return p.covers(&c)
	}
	return p.coversTree(&g)
}

func (p *Pattern) coversTree(g *globPath) bool {
	if p.everything() {
		return true
	}
	if g.leadingStar() {
		return false
	}
	switch p.kind {
	case kindAbs:
		if g.kind != kindAbs {
			return false
		}
	case kindHome:
		if g.kind != kindHome || g.base != "~" {
			return false
		}
	case kindRel:
		if g.kind != kindRel {
			return false
		}
	}
	var buf [32]string
	d := buf[:0]
	for _, c := range g.comps {
		if c.meta {
			break
		}
		d = append(d, c.lit)
	}
	t := len(p.seq)
	for t > 0 && p.seq[t-1].dstar {
		t--
	}
	if t == len(p.seq) {
		return false
	}
	s := pseq{rest: d}
	if p.kind == kindAny && g.kind == kindHome {
		s = pseq{pre: [2]string{opaqueName}, npre: 1, rest: d}
	}
	return matchSeq(p.seq[:t+1], &s, false)
}
