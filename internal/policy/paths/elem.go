package paths

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// rrange is an inclusive range of runes.
type rrange struct{ lo, hi rune }

// Character sets are sorted, disjoint, non-adjacent ranges within [1, MaxRune]; they never change.
var (
	setAll      = []rrange{{1, utf8.MaxRune}}
	setNonSlash = []rrange{{1, '/' - 1}, {'/' + 1, utf8.MaxRune}}
	setUser1    = []rrange{{1, '.' - 1}, {'/' + 1, utf8.MaxRune}} // not '.' nor '/'
)

type elemOp uint8

const (
	opLit   elemOp = iota // one given rune
	opOne                 // "?": any rune but '/'
	opClass               // "[...]"
	opStar                // "*" within a component
	opDyn                 // a star that may span '/': a dynamic part, or "*" under GlobDynamic
)

// dynRune marks a spanning star in a rewritten glob (brace expansions and extended globs).
const dynRune = '\uFFFF'

// elem is one element of a component glob.
type elem struct {
	op  elemOp
	r   rune     // opLit
	set []rrange // opClass: the runes it matches ('/' excluded)
}

var (
	errTrailingBackslash = errors.New("trailing backslash")
	errBadClass          = errors.New("malformed character class")
	errPOSIXClass        = errors.New("POSIX character classes ([:name:]) are not supported")
	errBadRange          = errors.New("character range out of order")
)

// parseElems parses one component. In shell mode (globs from a command line) malformed syntax is
// literal, as the shell reads it, and POSIX classes match any character; otherwise it is an error.
// meta reports whether any glob element is present; consecutive stars collapse.
func parseElems(s string, shell bool) (elems []elem, meta bool, err error) {
	lastClose := strings.LastIndexByte(s, ']')
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '\\':
			if i+1 >= len(s) {
				if !shell {
					return nil, false, errTrailingBackslash
				}
				elems = append(elems, elem{op: opLit, r: '\\'})
				i++
				continue
			}
			r, n := utf8.DecodeRuneInString(s[i+1:])
			elems = append(elems, elem{op: opLit, r: r})
			i += 1 + n
		case '*':
			if len(elems) == 0 || (elems[len(elems)-1].op != opStar && elems[len(elems)-1].op != opDyn) {
				elems = append(elems, elem{op: opStar})
			}
			meta = true
			i++
		case '?':
			elems = append(elems, elem{op: opOne})
			meta = true
			i++
		case '[':
			var set []rrange
			n, cerr := 0, errBadClass
			if i+1 < lastClose { // else no ']' can close it: fail fast
				set, n, cerr = parseClass(s[i:], shell)
			}
			if cerr != nil {
				if !shell {
					return nil, false, cerr
				}
				elems = append(elems, elem{op: opLit, r: '['})
				i++
				continue
			}
			elems = append(elems, elem{op: opClass, set: set})
			meta = true
			i += n
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == dynRune && shell {
				if len(elems) > 0 && elems[len(elems)-1].op == opStar {
					elems = elems[:len(elems)-1]
				}
				if len(elems) == 0 || elems[len(elems)-1].op != opDyn {
					elems = append(elems, elem{op: opDyn})
				}
				meta = true
			} else {
				elems = append(elems, elem{op: opLit, r: r})
			}
			i += n
		}
	}
	return elems, meta, nil
}

// parseClass parses a bracket expression at the start of s and returns its set and length.
func parseClass(s string, shell bool) ([]rrange, int, error) {
	i := 1
	neg := false
	if i < len(s) && (s[i] == '^' || s[i] == '!') {
		neg, i = true, i+1
	}
	var rs []rrange
	anyChar := false
	first := true
	for {
		if i >= len(s) {
			return nil, 0, errBadClass
		}
		if s[i] == ']' && !first {
			i++
			break
		}
		first = false
		if s[i] == '[' && i+1 < len(s) && (s[i+1] == ':' || s[i+1] == '=' || s[i+1] == '.') {
			if !shell {
				return nil, 0, errPOSIXClass
			}
			end := strings.Index(s[i+2:], string(s[i+1])+"]")
			if end < 0 {
				return nil, 0, errBadClass
			}
			anyChar = true // over-approximated: may match any character
			i += 2 + end + 2
			continue
		}
		lo, n, ok := classChar(s[i:])
		if !ok {
			return nil, 0, errBadClass
		}
		i += n
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			h, m, ok := classChar(s[i+1:])
			if !ok {
				return nil, 0, errBadClass
			}
			hi = h
			i += 1 + m
			if hi < lo {
				if !shell {
					return nil, 0, errBadRange
				}
				continue // matches nothing
			}
		}
		rs = append(rs, rrange{lo, hi})
	}
	if anyChar {
		return setNonSlash, i, nil
	}
	rs = normalize(rs)
	if neg {
		rs = complement(rs)
	}
	return subtractSlash(rs), i, nil
}

// classChar reads one (possibly escaped) character of a bracket expression.
func classChar(s string) (rune, int, bool) {
	if s[0] == '\\' {
		if len(s) < 2 {
			return 0, 0, false
		}
		r, n := utf8.DecodeRuneInString(s[1:])
		return r, 1 + n, true
	}
	r, n := utf8.DecodeRuneInString(s)
	return r, n, true
}

// normalize sorts and merges ranges, clipped to [1, MaxRune].
func normalize(rs []rrange) []rrange {
	slices.SortFunc(rs, func(a, b rrange) int { return int(a.lo) - int(b.lo) })
	out := rs[:0]
	for _, r := range rs {
		if r.lo < 1 {
			r.lo = 1
		}
		if r.hi > utf8.MaxRune {
			r.hi = utf8.MaxRune
		}
		if r.lo > r.hi {
			continue
		}
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			if r.hi > out[n-1].hi {
				out[n-1].hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// complement returns [1, MaxRune] minus rs (normalized).
func complement(rs []rrange) []rrange {
	var out []rrange
	next := rune(1)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, rrange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, rrange{next, utf8.MaxRune})
	}
	return out
}

// subtractSlash removes '/' from a normalized set.
func subtractSlash(rs []rrange) []rrange { return subtractRune(rs, '/') }

// subtractRune removes x from a normalized set.
func subtractRune(rs []rrange, x rune) []rrange {
	var out []rrange
	for _, r := range rs {
		if r.lo <= x && x <= r.hi {
			if r.lo < x {
				out = append(out, rrange{r.lo, x - 1})
			}
			if r.hi > x {
				out = append(out, rrange{x + 1, r.hi})
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// inSet reports whether r is in the normalized set rs.
func inSet(rs []rrange, r rune) bool {
	for _, x := range rs {
		if r < x.lo {
			return false
		}
		if r <= x.hi {
			return true
		}
	}
	return false
}

// setsOverlap reports whether two normalized sets share a rune.
func setsOverlap(a, b []rrange) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].hi < b[j].lo {
			i++
		} else if b[j].hi < a[i].lo {
			j++
		} else {
			return true
		}
	}
	return false
}

// cglob is a compiled component glob: chunks of fixed-width elements separated by stars.
type cglob struct {
	elems  []elem
	chunks [][]elem // len(chunks) == number of stars + 1
}

func newCGlob(elems []elem) *cglob {
	g := &cglob{elems: elems}
	start := 0
	for i, e := range elems {
		if e.op == opStar || e.op == opDyn {
			g.chunks = append(g.chunks, elems[start:i])
			start = i + 1
		}
	}
	g.chunks = append(g.chunks, elems[start:])
	return g
}

// match reports whether name (one component) matches; fold compares letters case-insensitively.
// Chunks have a fixed width, so placing each middle chunk at its leftmost occurrence is optimal: the
// work is O(len(name)·len(glob)).
func (g *cglob) match(name string, fold bool) bool {
	ch := g.chunks
	n, ok := matchChunk(ch[0], name, fold)
	if !ok {
		return false
	}
	if len(ch) == 1 {
		return n == len(name)
	}
	name = name[n:]
	for _, c := range ch[1 : len(ch)-1] {
		found := false
		for i := 0; i <= len(name); {
			if m, ok := matchChunk(c, name[i:], fold); ok {
				name, found = name[i+m:], true
				break
			}
			if i == len(name) {
				break
			}
			_, w := utf8.DecodeRuneInString(name[i:])
			i += w
		}
		if !found {
			return false
		}
	}
	last := ch[len(ch)-1]
	start := len(name)
	for range last {
		if start == 0 {
			return false
		}
		_, w := utf8.DecodeLastRuneInString(name[:start])
		start -= w
	}
	m, ok := matchChunk(last, name[start:], fold)
	return ok && start+m == len(name)
}

// matchChunk matches a star-free chunk at the start of s and returns the bytes it consumed.
func matchChunk(c []elem, s string, fold bool) (int, bool) {
	i := 0
	for _, e := range c {
		if i >= len(s) {
			return 0, false
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch e.op {
		case opLit:
			if r != e.r && (!fold || !foldEq(r, e.r)) {
				return 0, false
			}
		case opOne:
			if r == '/' {
				return 0, false
			}
		case opClass:
			if !inSet(e.set, r) && (!fold || !inSetFold(e.set, r)) {
				return 0, false
			}
		}
		i += w
	}
	return i, true
}

// foldEq reports whether two runes are equal under Unicode simple case folding.
func foldEq(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// inSetFold reports whether r or a rune it folds to is in the set.
func inSetFold(rs []rrange, r rune) bool {
	if inSet(rs, r) {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if inSet(rs, f) {
			return true
		}
	}
	return false
}

// foldSet closes a set under case folding (ranges of more than 4096 runes are taken as they are).
func foldSet(rs []rrange) []rrange {
	out := append([]rrange(nil), rs...)
	for _, x := range rs {
		if x.hi-x.lo > 4096 {
			continue
		}
		for r := x.lo; r <= x.hi; r++ {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				out = append(out, rrange{f, f})
			}
		}
	}
	return subtractSlash(normalize(out))
}

// literal returns the text of meta-free elements (escapes removed).
func literal(elems []elem) string {
	var b strings.Builder
	for _, e := range elems {
		b.WriteRune(e.r)
	}
	return b.String()
}
