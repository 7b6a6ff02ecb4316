package policy

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Input-guard bounds. A latest user message of at most MaxScanBytes is screened in full (a longer
// one is denied with oap.prompt_injection: it cannot be screened). Every pattern must begin with
// literal text (a word, an alternation of words or a small character class, after optional
// assertions such as \b or ^): the screen searches the message for that text and runs the pattern
// only where it occurs, over at most MaxMatchBytes from there, so a match longer than that is not
// found. Screening that passes the evaluation deadline (crafted input with a great many trigger
// words) denies with oap.prompt_injection: screening fails closed.
const (
	// MaxScanBytes is the longest message the input guards screen (the decider's body limit).
	MaxScanBytes = 1 << 20
	// MaxMatchBytes bounds the length of a match an input pattern can find.
	MaxMatchBytes = 16 << 10
	// MaxPatternInsts bounds the RE2 program of an input pattern (the built-in ones have at most 336).
	MaxPatternInsts = 500
	// MaxPatternRepeat bounds a counted repetition ({n}, {n,m}) in an input pattern.
	MaxPatternRepeat = 100
	// MaxPolicyPatternInsts bounds the RE2 programs of a policy's input patterns together.
	MaxPolicyPatternInsts = 16 << 10
	// MaxBundlePatternInsts bounds the RE2 programs of a bundle's input patterns together.
	MaxBundlePatternInsts = 4 * MaxPolicyPatternInsts
	// maxPatternLiterals bounds the literal texts a pattern may begin with.
	maxPatternLiterals = 64
	// maxClassLiterals bounds a character class a pattern may begin with.
	maxClassLiterals = 16
	// scanCheckEvery is how many candidate positions are tried between deadline checks.
	scanCheckEvery = 8
)

// errScanDeadline is the error of screening that passed the deadline.
var errScanDeadline = errors.New("input screening deadline exceeded")

// scanner matches one input pattern against messages: every match of the pattern begins with one of
// its literal texts; the pattern is run anchored where one occurs. The answer is re.MatchString's
// for any match shorter than MaxMatchBytes.
type scanner struct {
	re    *regexp.Regexp // (?i)P, for a pattern without literals (a default one only)
	first *regexp.Regexp // (?i)\A(?:P): a match at the start of the text
	next  *regexp.Regexp // (?i)\A(?s:.)(?:P): a match after one rune of context (for \b, ^, …)
	lits  []foldLit
	insts int
	// window is how far from a literal the pattern is run: MaxMatchBytes, or less when the pattern's
	// matches are shorter (a short text lets RE2 use its faster backtracking matcher).
	window int
	// needs[litNeed[i]] holds literal texts one of which every match beginning with lits[i]
	// contains after it (-1: none known): the pattern is only run where one of them ends within
	// the window.
	needs   [][]foldLit
	needMin []int // the fewest runes of a text of needs[k]
	litNeed []int
}

// foldLit is a literal text; fold compares it case-insensitively (Unicode simple folding, as RE2).
type foldLit struct {
	runes []rune
	fold  bool
	ascii []byte // the runes lower-cased when all are ASCII (fast comparison), else nil
}

func newFoldLit(runes []rune, fold bool) foldLit {
	l := foldLit{runes: runes, fold: fold}
	b := make([]byte, 0, len(runes))
	for _, r := range runes {
		if r >= utf8.RuneSelf {
			return l
		}
		if fold {
			r = lowerASCII(r)
		}
		b = append(b, byte(r))
	}
	l.ascii = b
	return l
}

// compileScanner compiles an input pattern (matched case-insensitively) and checks its cost.
func compileScanner(pattern string) (*scanner, error) {
	parsed, err := syntax.Parse("(?i)"+pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	if n := maxRepeat(parsed); n > MaxPatternRepeat {
		return nil, fmt.Errorf("counted repetition of %d, more than %d", n, MaxPatternRepeat)
	}
	simple := parsed.Simplify()
	prog, err := syntax.Compile(simple)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	if len(prog.Inst) > MaxPatternInsts {
		return nil, fmt.Errorf("compiles to %d RE2 instructions, more than %d", len(prog.Inst), MaxPatternInsts)
	}
	lits, _, ok := firstLiterals(simple)
	if !ok {
		return nil, errors.New(`must begin with literal text (a word, words in an alternation such as (ignore|disregard), or a small character class), after optional assertions such as \b or ^: the guards search for that text first`)
	}
	s := &scanner{insts: len(prog.Inst), window: MaxMatchBytes}
	if n := maxMatchRunes(simple); n >= 0 && n*utf8.UTFMax < MaxMatchBytes {
		s.window = n * utf8.UTFMax
	}
	// Each alternative of a leading alternation has its own texts to begin with and to contain.
	type branch struct {
		lits []foldLit
		need []foldLit
	}
	var split []branch
	if bs, ok := branches(simple); ok {
		for _, b := range bs {
			bl, _, ok := firstLiterals(&syntax.Regexp{Op: syntax.OpConcat, Sub: b})
			if !ok {
				split = nil
				break
			}
			split = append(split, branch{bl, neededAfterFirst(b)})
		}
	}
	if split == nil {
		split = []branch{{lits, neededAfterFirst(flatten(simple))}}
	}
	needIndex := map[string]int{} // alternatives that share a tail share its texts
	for _, b := range split {
		k := -1
		if b.need != nil {
			key := litsKey(b.need)
			var seen bool
			if k, seen = needIndex[key]; !seen {
				k = len(s.needs)
				needIndex[key] = k
				s.needs = append(s.needs, b.need)
				s.needMin = append(s.needMin, minRunes(b.need))
			}
		}
		for _, l := range b.lits {
			s.lits = append(s.lits, l)
			s.litNeed = append(s.litNeed, k)
		}
	}
	if s.first, err = regexp.Compile(`(?i)\A(?:` + pattern + `)`); err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	if s.next, err = regexp.Compile(`(?i)\A(?s:.)(?:` + pattern + `)`); err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	return s, nil
}

// maxRepeat returns the largest count of a counted repetition in re.
func maxRepeat(re *syntax.Regexp) int {
	n := 0
	if re.Op == syntax.OpRepeat {
		n = max(re.Min, re.Max)
	}
	for _, sub := range re.Sub {
		n = max(n, maxRepeat(sub))
	}
	return n
}

// firstLiterals returns literal texts one of which every match of re begins with (after zero-width
// assertions), or false when there is no small such set. complete says that re matches exactly
// those texts (so what follows may extend them).
func firstLiterals(re *syntax.Regexp) (lits []foldLit, complete, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return nil, false, false
		}
		return []foldLit{newFoldLit(re.Rune, re.Flags&syntax.FoldCase != 0)}, true, true
	case syntax.OpCharClass:
		var out []foldLit
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi-lo >= maxClassLiterals || len(out)+int(hi-lo)+1 > maxClassLiterals {
				return nil, false, false
			}
			for r := lo; r <= hi; r++ {
				out = append(out, newFoldLit([]rune{r}, false))
			}
		}
		return out, true, len(out) > 0
	case syntax.OpCapture:
		return firstLiterals(re.Sub[0])
	case syntax.OpPlus:
		l, _, ok := firstLiterals(re.Sub[0])
		return l, false, ok
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false, false
		}
		l, _, ok := firstLiterals(re.Sub[0])
		return l, false, ok
	case syntax.OpConcat:
		i := 0
		for i < len(re.Sub) && zeroWidth(re.Sub[i]) {
			i++
		}
		if i == len(re.Sub) {
			return nil, false, false
		}
		lits, complete, ok := firstLiterals(re.Sub[i])
		if !ok {
			return nil, false, false
		}
		// Extend complete texts with what must follow ("d" then (o|an) is "do" or "dan").
		for complete {
			i++
			if i == len(re.Sub) {
				return lits, true, true
			}
			if zeroWidth(re.Sub[i]) || startsWithClass(re.Sub[i]) {
				// A class multiplies the texts without making them rarer.
				return lits, false, true
			}
			more, c, ok := firstLiterals(re.Sub[i])
			if !ok || len(lits)*len(more) > maxPatternLiterals {
				return lits, false, true
			}
			ext, ok := crossLiterals(lits, more)
			if !ok {
				return lits, false, true
			}
			lits, complete = ext, c
		}
		return lits, false, true
	case syntax.OpAlternate:
		var out []foldLit
		complete := true
		for _, sub := range re.Sub {
			l, c, ok := firstLiterals(sub)
			if !ok || len(out)+len(l) > maxPatternLiterals {
				return nil, false, false
			}
			out = append(out, l...)
			complete = complete && c
		}
		return out, complete, true
	}
	return nil, false, false
}

// branches splits a pattern whose matches begin with an alternation into one element sequence per
// alternative, each followed by what follows the alternation; false when it does not so begin.
func branches(re *syntax.Regexp) ([][]*syntax.Regexp, bool) {
	els := flatten(re)
	f := 0
	for f < len(els) && zeroWidth(els[f]) {
		f++
	}
	if f == len(els) {
		return nil, false
	}
	head := els[f]
	for head.Op == syntax.OpCapture {
		head = head.Sub[0]
	}
	if head.Op != syntax.OpAlternate {
		return nil, false
	}
	out := make([][]*syntax.Regexp, 0, len(head.Sub))
	for _, alt := range head.Sub {
		b := append(flatten(alt), els[f+1:]...)
		out = append(out, b)
	}
	return out, true
}

// flatten returns the elements of a sequence, looking through captures and nested sequences.
func flatten(re *syntax.Regexp) []*syntax.Regexp {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat {
		return []*syntax.Regexp{re}
	}
	var out []*syntax.Regexp
	for _, sub := range re.Sub {
		out = append(out, flatten(sub)...)
	}
	return out
}

// neededAfterFirst returns literal texts one of which every match of the sequence els contains
// after the texts it begins with (nil if none is known): those whose shortest text is the longest
// (the rarest, likely), the last of equals.
func neededAfterFirst(els []*syntax.Regexp) []foldLit {
	f := 0
	for f < len(els) && zeroWidth(els[f]) {
		f++
	}
	var best []foldLit
	bestLen := 0
	for _, el := range els[min(f+1, len(els)):] {
		lits, ok := neededIn(el)
		if !ok {
			continue
		}
		if n := minRunes(lits); n >= bestLen {
			best, bestLen = lits, n
		}
	}
	return best
}

// neededIn returns literal texts one of which every match of re contains.
func neededIn(re *syntax.Regexp) ([]foldLit, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return nil, false
		}
		return []foldLit{newFoldLit(re.Rune, re.Flags&syntax.FoldCase != 0)}, true
	case syntax.OpCapture, syntax.OpPlus:
		return neededIn(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return neededIn(re.Sub[0])
	case syntax.OpConcat:
		var best []foldLit
		bestLen := 0
		for _, sub := range re.Sub {
			if lits, ok := neededIn(sub); ok {
				if n := minRunes(lits); n >= bestLen {
					best, bestLen = lits, n
				}
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var out []foldLit
		for _, sub := range re.Sub {
			lits, ok := neededIn(sub)
			if !ok || len(out)+len(lits) > maxPatternLiterals {
				return nil, false
			}
			out = append(out, lits...)
		}
		return out, true
	}
	return nil, false
}

// litsKey identifies a set of literal texts.
func litsKey(lits []foldLit) string {
	var b strings.Builder
	for _, l := range lits {
		if l.fold {
			b.WriteByte('i')
		}
		b.WriteString(string(l.runes))
		b.WriteByte(0)
	}
	return b.String()
}

func minRunes(lits []foldLit) int {
	n := -1
	for _, l := range lits {
		if n < 0 || len(l.runes) < n {
			n = len(l.runes)
		}
	}
	return n
}

// startsWithClass reports whether re's first element is a character class.
func startsWithClass(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCharClass:
		return true
	case syntax.OpCapture, syntax.OpPlus, syntax.OpRepeat, syntax.OpStar, syntax.OpQuest:
		return startsWithClass(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			if startsWithClass(sub) {
				return true
			}
			if re.Op == syntax.OpConcat && !zeroWidth(sub) {
				return false
			}
		}
	}
	return false
}

// maxMatchRunes returns the most runes a match of re can span, or -1 when unbounded.
func maxMatchRunes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatchRunes(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		n := maxMatchRunes(re.Sub[0])
		if re.Max < 0 || n < 0 {
			return -1
		}
		return re.Max * n
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, sub := range re.Sub {
			n := maxMatchRunes(sub)
			if n < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total
	}
	return 0 // assertions, empty
}

// crossLiterals returns every a followed by every b, when each pair folds alike.
func crossLiterals(as, bs []foldLit) ([]foldLit, bool) {
	out := make([]foldLit, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			fold := a.fold
			switch {
			case a.fold == b.fold:
			case !a.fold && len(a.runes) == 1 && len(foldOrbit(a.runes[0], true)) == 1:
				fold = b.fold // a caseless rune (a digit, punctuation)
			case !b.fold && len(b.runes) == 1 && len(foldOrbit(b.runes[0], true)) == 1:
			default:
				return nil, false
			}
			runes := append(append(make([]rune, 0, len(a.runes)+len(b.runes)), a.runes...), b.runes...)
			out = append(out, newFoldLit(runes, fold))
		}
	}
	return out, true
}

// zeroWidth reports whether re matches only the empty string (an assertion).
func zeroWidth(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpCapture:
		return zeroWidth(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !zeroWidth(sub) {
				return false
			}
		}
		return true
	}
	return false
}

// foldOrbit returns r and, when fold, every rune that folds to it.
func foldOrbit(r rune, fold bool) []rune {
	out := []rune{r}
	if !fold {
		return out
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	return out
}

// at reports whether text at byte i begins with the literal.
func (l *foldLit) at(text string, i int) bool {
	if l.ascii != nil && len(text)-i >= len(l.ascii) {
		j := 0
		for ; j < len(l.ascii); j++ {
			c := text[i+j]
			if c >= utf8.RuneSelf {
				break // a non-ASCII rune may fold to an ASCII one (K, ſ): compare runes
			}
			if l.fold {
				c = asciiLower[c]
			}
			if c != l.ascii[j] {
				return false
			}
		}
		if j == len(l.ascii) {
			return true
		}
	}
	for _, r := range l.runes {
		if i >= len(text) {
			return false
		}
		c, n := rune(text[i]), 1
		if c >= utf8.RuneSelf {
			c, n = utf8.DecodeRuneInString(text[i:])
		}
		if c != r && (!l.fold || !foldEqual(c, r)) {
			return false
		}
		i += n
	}
	return true
}

// asciiLower maps ASCII upper-case letters to lower case and every other byte to itself.
var asciiLower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i + 'a' - 'A')
		}
	}
	return t
}()

// foldEqual reports whether a and b are equal under simple case folding.
func foldEqual(a, b rune) bool {
	if a < utf8.RuneSelf && b < utf8.RuneSelf {
		return lowerASCII(a) == lowerASCII(b)
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// scanClock bounds the screening of one message.
type scanClock struct {
	deadline time.Time
	tries    int
}

// try counts one anchored run; it reports false when the deadline has passed.
func (c *scanClock) try() bool {
	c.tries++
	return c.tries%scanCheckEvery != 0 || c.live()
}

func (c *scanClock) live() bool { return time.Now().Before(c.deadline) }

// scanSet screens a message with several patterns in one pass: for each byte, the literals that
// may begin there.
type scanSet struct {
	scanners []*scanner
	// need finds the scanners' need texts in one pass: its scanner needBase[k]+j is scanner k's
	// needs[j].
	need     *scanSet
	needBase []int
	byFirst  [256][]litRef
	// pairs[a][b>>6]&(1<<(b&63)) says some literal may begin with the bytes a, b: most positions
	// of a text are ruled out by one look-up.
	pairs [256][4]uint64
	whole []int // scanners without literals: run over the whole text
}

type litRef struct {
	scanner int32
	lit     int32
}

func newScanSet(scanners []*scanner) *scanSet {
	set := &scanSet{scanners: scanners}
	for si, s := range scanners {
		if len(s.lits) == 0 {
			set.whole = append(set.whole, si)
			continue
		}
		for li, l := range s.lits {
			for _, r := range foldOrbit(l.runes[0], l.fold) {
				var b [utf8.UTFMax]byte
				n := utf8.EncodeRune(b[:], r)
				ref := litRef{int32(si), int32(li)}
				if !slices.Contains(set.byFirst[b[0]], ref) {
					set.byFirst[b[0]] = append(set.byFirst[b[0]], ref)
				}
				switch {
				case n > 1:
					set.addPair(b[0], b[1])
				case len(l.runes) == 1:
					for c := range 256 {
						set.addPair(b[0], byte(c))
					}
				default:
					for _, r2 := range foldOrbit(l.runes[1], l.fold) {
						var b2 [utf8.UTFMax]byte
						utf8.EncodeRune(b2[:], r2)
						set.addPair(b[0], b2[0])
					}
				}
			}
		}
	}
	set.needBase = make([]int, len(scanners)+1)
	var needs []*scanner
	for k, s := range scanners {
		set.needBase[k+1] = set.needBase[k] + len(s.needs)
		for _, lits := range s.needs {
			needs = append(needs, &scanner{lits: lits})
		}
	}
	if len(needs) > 0 {
		set.need = newScanSet(needs)
	}
	return set
}

// occurrences returns, for each scanner of the set, where its literals begin in text, in order.
func (set *scanSet) occurrences(text string) [][]int32 {
	occ := make([][]int32, len(set.scanners))
	last := len(text) - 1
	for i := 0; i <= last; i++ {
		if i < last {
			a, b := text[i], text[i+1]
			if set.pairs[a][b>>6]&(1<<(b&63)) == 0 {
				continue
			}
		}
		for _, ref := range set.byFirst[text[i]] {
			o := occ[ref.scanner]
			if n := len(o); n > 0 && o[n-1] == int32(i) {
				continue
			}
			if set.scanners[ref.scanner].lits[ref.lit].at(text, i) {
				occ[ref.scanner] = append(o, int32(i))
			}
		}
	}
	return occ
}

func (set *scanSet) addPair(a, b byte) { set.pairs[a][b>>6] |= 1 << (b & 63) }

// match sets hit[i] (len(hit) == len(set.scanners)) for each scanner i that matches text; it
// returns errScanDeadline when the clock ran out first.
func (set *scanSet) match(text string, clk *scanClock, hit []bool) error {
	left := 0
	for _, h := range hit {
		if !h {
			left++
		}
	}
	for _, si := range set.whole {
		if hit[si] {
			continue
		}
		if !clk.live() {
			return errScanDeadline
		}
		if set.scanners[si].re.MatchString(text) {
			hit[si] = true
			left--
		}
	}
	// occ[needBase[k]+j] lists where the texts of scanner k's needs[j] begin; cursor[…] is the
	// first of them at or after the last position tried.
	var occ [][]int32
	var cursor []int
	if set.need != nil {
		occ = set.need.occurrences(text)
		cursor = make([]int, len(occ))
	}
	last := len(text) - 1
	for i := 0; i <= last && left > 0; i++ {
		if i < last {
			a, b := text[i], text[i+1]
			if set.pairs[a][b>>6]&(1<<(b&63)) == 0 {
				continue
			}
		}
		for _, ref := range set.byFirst[text[i]] {
			if hit[ref.scanner] {
				continue
			}
			s := set.scanners[ref.scanner]
			if !s.lits[ref.lit].at(text, i) {
				continue
			}
			if j := s.litNeed[ref.lit]; j >= 0 {
				k := set.needBase[ref.scanner] + j
				c := cursor[k]
				for c < len(occ[k]) && int(occ[k][c]) < i {
					c++
				}
				cursor[k] = c
				if c == len(occ[k]) || int(occ[k][c])+s.needMin[j] > i+s.window {
					continue // no match beginning here fits in the window
				}
			}
			if !clk.try() {
				return errScanDeadline
			}
			if s.matchAt(text, i) {
				hit[ref.scanner] = true
				left--
			}
		}
	}
	return nil
}

// matchAt reports whether a match of the pattern starts at byte i (a rune boundary: every literal
// begins with a whole rune, and a byte < 0x80 or a valid sequence's first byte always starts one).
func (s *scanner) matchAt(text string, i int) bool {
	re, start := s.first, 0
	if i > 0 {
		_, w := utf8.DecodeLastRuneInString(text[:i])
		re, start = s.next, i-w
	}
	end := min(len(text), i+s.window)
	window := text[start:end]
	if !re.MatchString(window) {
		return false
	}
	if end == len(text) {
		return true
	}
	// The window was cut: a match that ends before the cut is a match of the whole text; one that
	// reaches it may depend on what follows (\b, $), so the rest decides.
	if loc := re.FindStringIndex(window); loc != nil && loc[1] < len(window) {
		return true
	}
	return re.MatchString(text[start:])
}
