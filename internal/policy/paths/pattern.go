package paths

import (
	"errors"
	"fmt"
	"strings"
)

// Pattern limits.
const (
	MaxPatternLen        = MaxPathLen
	MaxPatternComponents = 64
)

// Sentinel path components; real components never contain '/'.
const (
	anyName    = "/any"    // some name we do not know (the user part of a guessed home)
	opaqueName = "/opaque" // a directory we do not know, matched only by "**"
)

// pcomp is one pattern component.
type pcomp struct {
	dstar bool   // "**"
	lit   string // the literal name when g is nil and !dstar
	g     *cglob
}

// match reports whether a path component matches; fold compares case-insensitively (Match does:
// macOS and case-folding Linux directories open ".SSH" as ".ssh"; Covers does not).
func (c *pcomp) match(name string, fold bool) bool {
	if name != "" && name[0] == '/' {
		if name != anyName {
			return false
		}
		// A user name: it never starts with '.'.
		if c.g == nil {
			return c.lit != "" && c.lit[0] != '.'
		}
		return c.g.elems[0].op != opLit || c.g.elems[0].r != '.'
	}
	if c.g == nil {
		return c.lit == name || (fold && strings.EqualFold(c.lit, name))
	}
	return c.g.match(name, fold)
}

var (
	pcRoot  = pcomp{lit: rootHome}
	pcHome  = pcomp{lit: "home"}
	pcUsers = pcomp{lit: "Users"}
	pcAny   = pcomp{g: newCGlob([]elem{{op: opStar}})}
	pcDeep  = pcomp{dstar: true}
)

// Pattern is a compiled path pattern (see the package documentation for the syntax). It is immutable
// and safe for concurrent use.
type Pattern struct {
	raw    string
	reason string
	kind   kind    // kindAbs, kindHome, kindRel or kindAny
	seq    []pcomp // the components, plus "**" when the pattern also matches below itself
	n      int     // explicit components (seq without that trailing "**")
	below  bool
	// last is the literal last component of a pattern that does not match below itself: a path it
	// matches ends with it (a quick rejection).
	last string
	// Alternatives used by Match: a home pattern under /root, /home/* and /Users/*, a relative
	// pattern anywhere.
	rootSeq, homeSeq, usersSeq, anySeq []pcomp
	nfa                                *nfa // for MatchGlob
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.raw }

// Reason is a short, value-free explanation for the baseline's patterns ("" for others).
func (p *Pattern) Reason() string { return p.reason }

var (
	errTildeUser = errors.New(`"~user" patterns are not supported: write /home/user/... (a "~/..." pattern already matches every home)`)
	errDotDot    = errors.New(`".." is not allowed in a pattern`)
	errTooMany   = fmt.Errorf("more than %d components", MaxPatternComponents)
)

// CompilePattern compiles a path pattern. It fails for an empty pattern, a NUL byte, invalid UTF-8,
// more than MaxPatternLen bytes or MaxPatternComponents components, "..", a "~user" prefix, a
// malformed or POSIX ([:alpha:]) character class and a trailing backslash.
func CompilePattern(p string) (*Pattern, error) {
	pat, err := compilePattern(p, false)
	if err != nil {
		return nil, fmt.Errorf("compile path pattern: %w", err)
	}
	return pat, nil
}

// compilePattern compiles p; a file pattern never matches below itself.
func compilePattern(p string, file bool) (*Pattern, error) {
	if err := checkPath(p); err != nil {
		return nil, err
	}
	pat := &Pattern{raw: p}
	rest := p
	switch p[0] {
	case '/':
		pat.kind, rest = kindAbs, p[1:]
	case '~':
		if len(p) > 1 && p[1] != '/' {
			return nil, errTildeUser
		}
		pat.kind, rest = kindHome, p[1:]
	default:
		if n := homeVarLen(p); n > 0 {
			pat.kind, rest = kindHome, p[n:]
		} else {
			pat.kind = kindRel
		}
	}
	var seq []pcomp
	for _, comp := range strings.Split(rest, "/") {
		switch comp {
		case "", ".":
			continue
		case "..":
			return nil, errDotDot
		case "**":
			if len(seq) == 0 || !seq[len(seq)-1].dstar {
				seq = append(seq, pcDeep)
			}
			continue
		}
		elems, meta, err := parseElems(comp, false)
		if err != nil {
			return nil, fmt.Errorf("component %d: %w", len(seq)+1, err)
		}
		if meta {
			seq = append(seq, pcomp{g: newCGlob(elems)})
		} else {
			seq = append(seq, pcomp{lit: literal(elems)})
		}
	}
	if len(seq) > MaxPatternComponents {
		return nil, errTooMany
	}
	if pat.kind == kindRel && len(seq) > 0 && seq[0].dstar {
		pat.kind = kindAny
	}
	pat.n = len(seq)
	pat.below = len(seq) == 0 || (!file && !seq[len(seq)-1].dstar && seq[len(seq)-1].g == nil)
	if pat.below {
		seq = append(seq, pcDeep)
	}
	pat.seq = seq
	if !pat.below && pat.n > 0 && !seq[pat.n-1].dstar && seq[pat.n-1].g == nil {
		pat.last = seq[pat.n-1].lit
	}
	switch pat.kind {
	case kindHome:
		pat.rootSeq = append([]pcomp{pcRoot}, seq...)
		pat.homeSeq = append([]pcomp{pcHome, pcAny}, seq...)
		pat.usersSeq = append([]pcomp{pcUsers, pcAny}, seq...)
	case kindRel:
		pat.anySeq = append([]pcomp{pcDeep}, seq...)
	case kindAny:
		pat.anySeq = seq
	}
	pat.nfa = buildPatternNFA(pat)
	return pat, nil
}

// pseq is a path's component sequence with up to two components put in front (a guessed home).
type pseq struct {
	pre  [2]string
	npre int
	rest []string
}

func (s *pseq) len() int { return s.npre + len(s.rest) }

func (s *pseq) at(i int) string {
	if i < s.npre {
		return s.pre[i]
	}
	return s.rest[i-s.npre]
}

// matchSeq matches components against pattern components, "**" matching any number of them. With a
// single kind of wildcard and fixed-width elements, backtracking to the last "**" only is complete,
// and the work is O(len(p)·len(s)).
func matchSeq(p []pcomp, s *pseq, fold bool) bool {
	pi, si, n := 0, 0, s.len()
	starP, starS := -1, 0
	for si < n {
		if pi < len(p) {
			if p[pi].dstar {
				starP, starS = pi, si
				pi++
				continue
			}
			if p[pi].match(s.at(si), fold) {
				pi++
				si++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		pi = starP + 1
		starS++
		si = starS
	}
	for pi < len(p) && p[pi].dstar {
		pi++
	}
	return pi == len(p)
}

// tail reports whether the components of a path below an unknown directory can be the end of a path
// the pattern matches: they align with the pattern from one of its first nExpl components on.
func tail(p []pcomp, nExpl int, rest []string) bool {
	s := pseq{rest: rest}
	for k := 0; k < nExpl && k < len(p); k++ {
		if matchSeq(p[k:], &s, true) {
			return true
		}
	}
	return false
}

// homes returns a home path's components below each guess of the home: /root, /home/<user> and
// /Users/<user>.
func homes(rest []string) [3]pseq {
	return [3]pseq{
		{pre: [2]string{rootHome}, npre: 1, rest: rest},
		{pre: [2]string{"home", anyName}, npre: 2, rest: rest},
		{pre: [2]string{"Users", anyName}, npre: 2, rest: rest},
	}
}

// anyHome reports whether p matches a home path under one of the guessed homes.
func anyHome(p []pcomp, rest []string) bool {
	hs := homes(rest)
	for i := range hs {
		if matchSeq(p, &hs[i], true) {
			return true
		}
	}
	return false
}

// lastDiffers reports whether a non-empty path cannot end with the literal last component.
func lastDiffers(comps []string, last string, fold bool) bool {
	if last == "" || len(comps) == 0 {
		return false
	}
	x := comps[len(comps)-1]
	return x != last && (!fold || !strings.EqualFold(x, last))
}

// mayMatch reports whether the path could be one the pattern matches.
func (p *Pattern) mayMatch(c *cpath) bool {
	if c.kind == kindClimb && p.n == 0 {
		return true // the pattern is a whole tree and the unknown directory could be in it
	}
	if lastDiffers(c.comps, p.last, true) {
		return false
	}
	exact := pseq{rest: c.comps}
	switch p.kind {
	case kindAbs:
		switch c.kind {
		case kindAbs:
			return matchSeq(p.seq, &exact, true)
		case kindHome:
			return anyHome(p.seq, c.comps)
		case kindClimb:
			return tail(p.seq, p.n, c.comps)
		}
	case kindHome:
		switch c.kind {
		case kindHome:
			return matchSeq(p.seq, &exact, true)
		case kindAbs:
			return matchSeq(p.rootSeq, &exact, true) || matchSeq(p.homeSeq, &exact, true) ||
				matchSeq(p.usersSeq, &exact, true)
		case kindClimb:
			return tail(p.rootSeq, p.n+1, c.comps) || tail(p.homeSeq, p.n+2, c.comps) ||
				tail(p.usersSeq, p.n+2, c.comps)
		}
	case kindRel, kindAny:
		nAny := p.n
		if p.kind == kindRel {
			nAny++
		}
		switch c.kind {
		case kindRel:
			return matchSeq(p.seq, &exact, true)
		case kindAbs:
			return matchSeq(p.anySeq, &exact, true)
		case kindHome:
			return anyHome(p.anySeq, c.comps)
		case kindClimb:
			return tail(p.anySeq, nAny, c.comps)
		}
	}
	return false
}

// covers reports whether the path is certainly one the pattern matches (names compared exactly).
func (p *Pattern) covers(c *cpath) bool {
	if lastDiffers(c.comps, p.last, false) {
		return false
	}
	exact := pseq{rest: c.comps}
	switch p.kind {
	case kindAbs:
		return c.kind == kindAbs && matchSeq(p.seq, &exact, false)
	case kindHome:
		return c.kind == kindHome && c.base == "~" && matchSeq(p.seq, &exact, false)
	case kindRel:
		return c.kind == kindRel && matchSeq(p.seq, &exact, false)
	case kindAny:
		if c.kind == kindHome {
			s := pseq{pre: [2]string{opaqueName}, npre: 1, rest: c.comps}
			return matchSeq(p.seq, &s, false)
		}
		return matchSeq(p.seq, &exact, false)
	}
	return false
}

// Match reports whether the path could be one the pattern matches (fail closed; for block lists).
// The path is canonicalized first (a no-op for a canonical path); one Canonical rejects matches.
//
// Names are compared case-insensitively (macOS and case-folding directories open ".SSH" as ".ssh").
// A "~/..." pattern also matches "/root/...", "/home/<anyone>/..." and "/Users/<anyone>/...", and
// such patterns match "~/..." paths. A path below an unknown directory ("../../etc/shadow",
// "~/../x") matches when, after the leading "..", it can align with the pattern from one of the
// pattern's components on. A relative path ("etc/shadow") is under the working directory: only
// relative and "**/..." patterns match it; a relative pattern also matches absolute and home paths
// that end with it, since the working directory is unknown.
func (p *Pattern) Match(path string) bool {
	var buf [32]string
	c, err := parse(path, buf[:0])
	if err != nil {
		return true
	}
	return p.mayMatch(&c)
}

// Covers reports whether the path is certainly one the pattern matches (for allow lists): names are
// compared exactly, the home
// must be the agent's own "~" for a "~/..." pattern, an absolute pattern covers only absolute paths,
// a relative one only relative paths, and a path below an unknown directory only "**/..." patterns.
// A path Canonical rejects is never covered.
func (p *Pattern) Covers(path string) bool {
	var buf [32]string
	c, err := parse(path, buf[:0])
	if err != nil {
		return false
	}
	return p.covers(&c)
}

// everything reports whether the pattern matches every path ("**").
func (p *Pattern) everything() bool {
	if p.kind != kindAny {
		return false
	}
	for _, c := range p.seq {
		if !c.dstar {
			return false
		}
	}
	return true
}
