package paths

import (
	"fmt"
	"slices"
	"strings"
)

// PatternError is a pattern of a Set that did not compile.
type PatternError struct {
	Index int // position in the list given to CompileSet
	Err   error
}

func (e *PatternError) Error() string { return fmt.Sprintf("pattern %d: %v", e.Index, e.Err) }

func (e *PatternError) Unwrap() error { return e.Err }

// Set is an ordered list of patterns. It is immutable and safe for concurrent use; a nil *Set matches
// nothing.
type Set struct {
	pats   []*Pattern
	exempt *Set // paths certainly in it are never matched (BaselineWrite's harmless devices)
	// Candidates by where a path starts, as ascending indexes into pats.
	absBy    map[string][]int32 // absolute patterns by their literal first component (lower case)
	absOther []int32            // absolute patterns whose first component is not literal
	home     []int32
	relAny   []int32 // relative and "**/..." patterns
	// The candidate lists merged once: for an absolute path by its first component (lower case),
	// for one whose first component is elsewhere, for a home path.
	candAbs     map[string][]int32
	candAbsElse []int32
	candHome    []int32
}

// unanalysable is what the Set methods return for a path they cannot analyse.
var unanalysable = newUnanalysable()

func newUnanalysable() *Pattern {
	p := &Pattern{raw: "(unanalysable path)", reason: "the path cannot be analysed", kind: kindAny,
		seq: []pcomp{pcDeep}, n: 1}
	p.anySeq = p.seq
	p.nfa = buildPatternNFA(p)
	return p
}

// CompileSet compiles patterns in order. Patterns that do not compile are left out and reported, one
// *PatternError each, with their index; the returned set holds the others.
func CompileSet(patterns []string) (*Set, []error) {
	s := &Set{absBy: map[string][]int32{}}
	var errs []error
	for i, raw := range patterns {
		p, err := CompilePattern(raw)
		if err != nil {
			errs = append(errs, &PatternError{Index: i, Err: err})
			continue
		}
		s.add(p)
	}
	s.index()
	return s, errs
}

// index merges the candidate lists (call it once all patterns are added).
func (s *Set) index() {
	s.candAbs = map[string][]int32{}
	for k, l := range s.absBy {
		lists := [][]int32{l, s.absOther, s.relAny}
		if k == rootHome || k == "home" || k == "users" {
			lists = append(lists, s.home)
		}
		s.candAbs[k] = merge(lists...)
	}
	for _, k := range []string{rootHome, "home", "users"} {
		if _, ok := s.candAbs[k]; !ok {
			s.candAbs[k] = merge(s.home, s.absOther, s.relAny)
		}
	}
	s.candAbsElse = merge(s.absOther, s.relAny)
	s.candHome = merge(s.home, s.absBy[rootHome], s.absBy["home"], s.absBy["users"], s.absOther, s.relAny)
}

// merge merges ascending lists.
func merge(lists ...[]int32) []int32 {
	var out []int32
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *Set) add(p *Pattern) {
	i := int32(len(s.pats))
	s.pats = append(s.pats, p)
	switch p.kind {
	case kindAbs:
		if p.n > 0 && !p.seq[0].dstar && p.seq[0].g == nil && isASCII(p.seq[0].lit) {
			k := strings.ToLower(p.seq[0].lit)
			s.absBy[k] = append(s.absBy[k], i)
		} else {
			s.absOther = append(s.absOther, i)
		}
	case kindHome:
		s.home = append(s.home, i)
	default:
		s.relAny = append(s.relAny, i)
	}
}

// Len returns the number of patterns.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.pats)
}

// Patterns returns the patterns as written, in order.
func (s *Set) Patterns() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.pats))
	for i, p := range s.pats {
		out[i] = p.raw
	}
	return out
}

// first returns the first pattern, in order, among the candidates for c for which fn holds.
func (s *Set) first(c *cpath, fn func(*Pattern) bool) (*Pattern, bool) {
	head := ""
	if len(c.comps) > 0 {
		head = c.comps[0]
	}
	return s.firstOf(c.kind, head, true, fn)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// firstOf returns the first pattern, in order, for which fn holds among those that can match a path
// of kind k whose first component is head (when known; "" for none).
func (s *Set) firstOf(k kind, head string, known bool, fn func(*Pattern) bool) (*Pattern, bool) {
	if known && !isASCII(head) {
		known = false // its case folds are not worth indexing
	}
	var cand []int32
	switch {
	case k == kindAbs && known:
		if l, ok := s.candAbs[strings.ToLower(head)]; ok { // no allocation when already lower case
			cand = l
		} else {
			cand = s.candAbsElse
		}
	case k == kindHome:
		cand = s.candHome
	case k == kindRel && known:
		cand = s.relAny
	default:
		for _, p := range s.pats {
			if fn(p) {
				return p, true
			}
		}
		return nil, false
	}
	for _, i := range cand {
		if p := s.pats[i]; fn(p) {
			return p, true
		}
	}
	return nil, false
}

// globHead returns what firstOf needs to know of a glob: its first component when literal.
func globHead(g *globPath) (string, bool) {
	if len(g.comps) == 0 {
		return "", true
	}
	if g.comps[0].meta {
		return "", false
	}
	return g.comps[0].lit, true
}

// Match returns the first pattern that could match the path (Pattern.Match). A path that cannot be
// canonicalized matches a placeholder pattern whose String is "(unanalysable path)", unless the set
// is empty.
func (s *Set) Match(path string) (*Pattern, bool) {
	if s.Len() == 0 {
		return nil, false
	}
	var buf [32]string
	c, err := parse(path, buf[:0])
	if err != nil {
		return unanalysable, true
	}
	return s.matchParsed(&c)
}

// MatchParsed is Match for a path parsed by ParsePath: Match of its canonical path, without parsing it
// again.
func (s *Set) MatchParsed(p *Parsed) (*Pattern, bool) {
	if s.Len() == 0 {
		return nil, false
	}
	return s.matchParsed(&p.c)
}

func (s *Set) matchParsed(c *cpath) (*Pattern, bool) {
	if s.exempt != nil {
		if _, ok := s.exempt.first(c, func(p *Pattern) bool { return p.covers(c) }); ok {
			return nil, false
		}
	}
	return s.first(c, func(p *Pattern) bool { return p.mayMatch(c) })
}

// MatchGlob returns the first pattern that some expansion of the glob could match
// (Pattern.MatchGlob): MatchGlobMode(glob, GlobDynamic).
func (s *Set) MatchGlob(glob string) (*Pattern, bool) { return s.MatchGlobMode(glob, GlobDynamic) }

// MatchGlobMode returns the first pattern that some expansion of the glob could match
// (Pattern.MatchGlobMode); the set shares one work budget. Exemptions apply to plain paths only.
func (s *Set) MatchGlobMode(glob string, mode GlobMode) (*Pattern, bool) {
	if s.Len() == 0 {
		return nil, false
	}
	g, ok := parseGlob(glob, mode)
	if !ok {
		return unanalysable, true
	}
	if g.concrete {
		var buf [32]string
		c := g.toCPath(buf[:0])
		return s.matchParsed(&c)
	}
	gn := buildGlobNFA(&g)
	budget := globBudget
	head, known := globHead(&g)
	return s.firstOf(g.kind, head, known, func(p *Pattern) bool { return p.matchGlobNFA(&g, gn, &budget) })
}

// Covers returns the first pattern that certainly matches the path (Pattern.Covers).
func (s *Set) Covers(path string) (*Pattern, bool) {
	if s.Len() == 0 {
		return nil, false
	}
	var buf [32]string
	c, err := parse(path, buf[:0])
	if err != nil {
		return nil, false
	}
	return s.coversParsed(&c)
}

func (s *Set) coversParsed(c *cpath) (*Pattern, bool) {
	if s.exempt != nil {
		if _, ok := s.exempt.first(c, func(p *Pattern) bool { return p.mayMatch(c) }); ok {
			return nil, false
		}
	}
	return s.first(c, func(p *Pattern) bool { return p.covers(c) })
}

// CoversGlob returns the first pattern that certainly matches every expansion of the glob
// (Pattern.CoversGlob): CoversGlobMode(glob, GlobDynamic).
func (s *Set) CoversGlob(glob string) (*Pattern, bool) { return s.CoversGlobMode(glob, GlobDynamic) }

// CoversGlobMode returns the first pattern that certainly matches every expansion of the glob
// (Pattern.CoversGlobMode).
func (s *Set) CoversGlobMode(glob string, mode GlobMode) (*Pattern, bool) {
	if s.Len() == 0 {
		return nil, false
	}
	g, ok := parseGlob(glob, mode)
	if !ok {
		return nil, false
	}
	if g.concrete {
		var buf [32]string
		c := g.toCPath(buf[:0])
		return s.coversParsed(&c)
	}
	if s.exempt != nil {
		budget := globBudget
		gn := buildGlobNFA(&g)
		for _, p := range s.exempt.pats {
			if p.matchGlobNFA(&g, gn, &budget) {
				return nil, false
			}
		}
	}
	head, known := globHead(&g)
	return s.firstOf(g.kind, head, known, func(p *Pattern) bool { return p.coversTree(&g) })
}
