package shell

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// wmode is how a word is expanded.
type wmode uint8

const (
	modeArgs   wmode = iota // command words: brace expansion, field splitting, globs
	modeSingle              // one word, no brace expansion or splitting (redirect targets, [[ ]], case)
	modeAssign              // assignment values and here-strings: no globs, tilde after ':'
	modeHdoc                // unquoted here-document bodies
)

// wbuilder accumulates one field.
type wbuilder struct {
	val, pat []byte
	have     bool // the field exists (even if empty: "")
	dyn      bool
	glob     bool
	differ   bool // pat differs from val
	proc     bool
	qual     bool
}

func (b *wbuilder) reset() {
	b.val, b.pat = b.val[:0], b.pat[:0]
	b.have, b.dyn, b.glob, b.differ, b.proc, b.qual = false, false, false, false, false, false
}

func isPatMeta(c byte) bool { return c == '*' || c == '?' || c == '[' || c == ']' || c == '\\' }

func (b *wbuilder) lit(s string) {
	b.have = true
	b.val = append(b.val, s...)
	for i := 0; i < len(s); i++ {
		if isPatMeta(s[i]) {
			b.pat = append(b.pat, '\\')
			b.differ = true
		}
		b.pat = append(b.pat, s[i])
	}
}

func (b *wbuilder) litByte(c byte) {
	b.have = true
	b.val = append(b.val, c)
	if isPatMeta(c) {
		b.pat = append(b.pat, '\\')
		b.differ = true
	}
	b.pat = append(b.pat, c)
}

func (b *wbuilder) globByte(c byte) {
	b.have, b.glob, b.differ = true, true, true
	b.val = append(b.val, c)
	b.pat = append(b.pat, c)
}

func (b *wbuilder) dynamic() {
	b.have, b.dyn, b.glob, b.differ = true, true, true, true
	b.val = append(b.val, '*')
	b.pat = append(b.pat, '*')
}

func (b *wbuilder) word() Word {
	w := Word{Dynamic: b.dyn, Glob: b.glob, procSubst: b.proc, zshQual: b.qual}
	w.Value = string(b.val)
	if b.differ {
		w.Pattern = string(b.pat)
		if b.glob {
			if _, err := path.Match(w.Pattern, ""); err != nil {
				w.Pattern = "*"
			}
		}
	} else {
		w.Pattern = w.Value
	}
	return w
}

func escapePattern(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if isPatMeta(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	out := make([]byte, 0, len(s)+n)
	for i := 0; i < len(s); i++ {
		if isPatMeta(s[i]) {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func litWord(s string) Word { return Word{Value: s, Pattern: escapePattern(s)} }

func dynWord() Word { return Word{Value: "*", Dynamic: true, Glob: true, Pattern: "*"} }

// pushWord appends w to the scratch stack, counting it against the limits.
func (a *analyzer) pushWord(w Word) {
	if a.checkWord(w) {
		a.bufs.words = append(a.bufs.words, w)
	}
}

// checkWord counts w against the limits.
func (a *analyzer) checkWord(w Word) bool {
	a.words++
	if a.words > a.lim.MaxWords {
		a.limitErr("more than %d words", a.lim.MaxWords)
		return false
	}
	if len(w.Value) > a.lim.MaxBytes {
		a.limitErr("expanded word of %d bytes, more than %d", len(w.Value), a.lim.MaxBytes)
		return false
	}
	a.expanded += len(w.Value)
	if a.expanded > 16*a.lim.MaxBytes {
		a.limitErr("more than %d bytes of expanded words", 16*a.lim.MaxBytes)
		return false
	}
	return true
}

// litSpecial holds the bytes that make an unquoted literal expand to
// something else than itself.
var litSpecial = [256]bool{'\\': true, '*': true, '?': true, '[': true, ']': true, '{': true}

// plainLit reports a literal that expands to itself.
func plainLit(s string) bool {
	if len(s) > 0 && s[0] == '~' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if litSpecial[s[i]] {
			return false
		}
	}
	return true
}

// quickWord expands, without allocating, a word that is one plain literal,
// one '...' or one "..." holding only plain text.
func quickWord(w *syntax.Word, mode wmode) (Word, bool) {
	if len(w.Parts) != 1 {
		return Word{}, false
	}
	var v string
	switch x := w.Parts[0].(type) {
	case *syntax.Lit:
		if mode == modeHdoc || !plainLit(x.Value) || (mode == modeAssign && strings.IndexByte(x.Value, ':') >= 0) {
			return Word{}, false
		}
		return Word{Value: x.Value, Pattern: x.Value}, true
	case *syntax.SglQuoted:
		if x.Dollar {
			return Word{}, false
		}
		v = x.Value
	case *syntax.DblQuoted:
		switch len(x.Parts) {
		case 0:
		case 1:
			l, ok := x.Parts[0].(*syntax.Lit)
			if !ok || strings.IndexByte(l.Value, '\\') >= 0 {
				return Word{}, false
			}
			v = l.Value
		default:
			return Word{}, false
		}
	default:
		return Word{}, false
	}
	return Word{Value: v, Pattern: escapePattern(v)}, true
}

func (a *analyzer) expandWords(c ctx, ws []*syntax.Word) []Word {
	if len(ws) == 0 {
		return nil
	}
	// Most words are one field each (quickWord): they go straight to the
	// slab. From the first that is not, the fields go through the scratch
	// stack.
	out := a.wordsN(len(ws))
	for i, w := range ws {
		if a.err != nil {
			return out
		}
		q, ok := quickWord(w, modeArgs)
		if !ok {
			return a.expandRest(c, out, ws[i:])
		}
		if !a.checkWord(q) {
			return out
		}
		out = append(out, q)
	}
	return out
}

// expandRest expands ws after the fields in out (a slab slice with room for
// len(out)+len(ws) words).
func (a *analyzer) expandRest(c ctx, out []Word, ws []*syntax.Word) []Word {
	base := len(a.bufs.words)
	for _, w := range ws {
		if a.err != nil {
			break
		}
		a.expandFields(c, w)
	}
	fields := a.bufs.words[base:]
	if len(out)+len(fields) > cap(out) {
		out = append(a.wordsN(len(out)+len(fields)), out...)
	}
	out = append(out, fields...)
	clear(fields)
	a.bufs.words = a.bufs.words[:base]
	if len(out) == 0 {
		return nil
	}
	return out
}

// expandFields expands one command word into fields, pushed on the scratch
// stack.
func (a *analyzer) expandFields(c ctx, w *syntax.Word) {
	if q, ok := quickWord(w, modeArgs); ok {
		a.pushWord(q)
		return
	}
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.IndexByte(lit.Value, '{') >= 0 {
			w2 := &syntax.Word{Parts: slices.Clone(w.Parts)}
			if syntax.SplitBraces(w2) {
				budget := a.lim.MaxWords - a.words
				// Each brace expansion at least doubles the words.
				n := 0
				for _, p := range w2.Parts {
					if _, ok := p.(*syntax.BraceExp); ok {
						n++
					}
				}
				if n >= 31 || 1<<n > budget {
					a.limitErr("brace expansion makes more than %d words", a.lim.MaxWords)
					return
				}
				alts := a.braceAlts(w2.Parts, &budget)
				for _, alt := range alts {
					if a.err != nil {
						break
					}
					a.partsFields(c, alt)
				}
				return
			}
			break
		}
	}
	a.partsFields(c, w.Parts)
}

// braceAlts performs brace expansion on parts, within budget words.
func (a *analyzer) braceAlts(parts []syntax.WordPart, budget *int) [][]syntax.WordPart {
	i := slices.IndexFunc(parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.BraceExp)
		return ok
	})
	if i < 0 {
		return [][]syntax.WordPart{parts}
	}
	br := parts[i].(*syntax.BraceExp)
	var mids [][]syntax.WordPart
	if br.Sequence {
		seq, ok := a.braceSeq(br, *budget)
		if !ok {
			return nil
		}
		for _, s := range seq {
			mids = append(mids, []syntax.WordPart{&syntax.Lit{Value: s}})
		}
	} else {
		for _, el := range br.Elems {
			sub := a.braceAlts(el.Parts, budget)
			if a.err != nil {
				return nil
			}
			mids = append(mids, sub...)
			if len(mids) > *budget {
				a.limitErr("brace expansion makes more than %d words", a.lim.MaxWords)
				return nil
			}
		}
	}
	rest := a.braceAlts(parts[i+1:], budget)
	if a.err != nil {
		return nil
	}
	if len(mids)*len(rest) > *budget {
		a.limitErr("brace expansion makes more than %d words", a.lim.MaxWords)
		return nil
	}
	out := make([][]syntax.WordPart, 0, len(mids)*len(rest))
	for _, m := range mids {
		for _, r := range rest {
			alt := make([]syntax.WordPart, 0, i+len(m)+len(r))
			alt = append(alt, parts[:i]...)
			alt = append(alt, m...)
			alt = append(alt, r...)
			out = append(out, alt)
		}
	}
	return out
}

// braceSeq expands {x..y[..incr]}.
func (a *analyzer) braceSeq(br *syntax.BraceExp, budget int) ([]string, bool) {
	from, to := br.Elems[0].Lit(), br.Elems[1].Lit()
	incr := int64(1)
	if len(br.Elems) > 2 {
		n, err := strconv.ParseInt(br.Elems[2].Lit(), 10, 64)
		if err == nil && n != 0 && n != -1<<63 {
			if n < 0 {
				n = -n
			}
			incr = n
		}
	}
	chars := false
	f, err1 := strconv.ParseInt(from, 10, 64)
	t, err2 := strconv.ParseInt(to, 10, 64)
	if err1 != nil || err2 != nil {
		if len(from) != 1 || len(to) != 1 {
			return []string{"{" + from + ".." + to + "}"}, true
		}
		chars = true
		f, t = int64(from[0]), int64(to[0])
	}
	// Count in unsigned arithmetic: the span of two int64s can overflow.
	var span uint64
	if t >= f {
		span = uint64(t) - uint64(f)
	} else {
		span = uint64(f) - uint64(t)
	}
	count := span/uint64(incr) + 1
	if span/uint64(incr) >= uint64(budget) || count > uint64(budget) {
		a.limitErr("brace expansion makes more than %d words", a.lim.MaxWords)
		return nil, false
	}
	width := 0
	if !chars && (hasLeadingZero(from) || hasLeadingZero(to)) {
		width = max(len(from), len(to))
	}
	out := make([]string, 0, count)
	for k := uint64(0); k < count; k++ {
		// count <= budget, so k*incr fits: the values stay between f and t.
		var n int64
		if t >= f {
			n = f + int64(k)*incr
		} else {
			n = f - int64(k)*incr
		}
		switch {
		case chars:
			out = append(out, string(rune(n)))
		default:
			s := strconv.FormatInt(n, 10)
			if width > 0 {
				neg := strings.HasPrefix(s, "-")
				s = strings.TrimPrefix(s, "-")
				for len(s) < width-btoi(neg) {
					s = "0" + s
				}
				if neg {
					s = "-" + s
				}
			}
			out = append(out, s)
		}
	}
	return out, true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func hasLeadingZero(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0'
}

// partsFields expands word parts (after brace expansion) into fields.
func (a *analyzer) partsFields(c ctx, parts []syntax.WordPart) {
	parts = mergeLits(parts)
	b := a.getBuilder()
	defer a.putBuilder(b)
	for i, p := range parts {
		if a.err != nil {
			return
		}
		a.part(c, b, p, i == 0, false, modeArgs, true)
	}
	if b.have {
		a.pushWord(b.word())
	}
}

// mergeLits joins adjacent unquoted literals (the parser splits "a[b" into
// "a" and "[b"), so that expansion does not depend on where a parser split.
func mergeLits(parts []syntax.WordPart) []syntax.WordPart {
	adjacent := false
	for i := 1; i < len(parts); i++ {
		if _, ok := parts[i].(*syntax.Lit); ok {
			if _, ok := parts[i-1].(*syntax.Lit); ok {
				adjacent = true
				break
			}
		}
	}
	if !adjacent {
		return parts
	}
	// Each run of adjacent literals is joined once (pairwise concatenation would be quadratic in
	// the run's length).
	out := make([]syntax.WordPart, 0, len(parts))
	for i := 0; i < len(parts); {
		l, ok := parts[i].(*syntax.Lit)
		if !ok {
			out = append(out, parts[i])
			i++
			continue
		}
		j := i + 1
		for j < len(parts) {
			if _, ok := parts[j].(*syntax.Lit); !ok {
				break
			}
			j++
		}
		if j == i+1 {
			out = append(out, l)
			i = j
			continue
		}
		var sb strings.Builder
		for _, q := range parts[i:j] {
			sb.WriteString(q.(*syntax.Lit).Value)
		}
		out = append(out, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: parts[j-1].(*syntax.Lit).ValueEnd, Value: sb.String()})
		i = j
	}
	return out
}

// getBuilder takes a word builder from the pool kept across calls.
func (a *analyzer) getBuilder() *wbuilder {
	ps := a.ps
	if n := len(ps.builders); n > 0 {
		b := ps.builders[n-1]
		ps.builders = ps.builders[:n-1]
		return b
	}
	return &wbuilder{val: make([]byte, 0, 64), pat: make([]byte, 0, 64)}
}

func (a *analyzer) putBuilder(b *wbuilder) {
	if cap(b.val) > 4<<10 || cap(b.pat) > 4<<10 {
		return // do not keep large buffers
	}
	b.reset()
	a.ps.builders = append(a.ps.builders, b)
}

// expandWord1 expands a word that stays one word.
func (a *analyzer) expandWord1(c ctx, w *syntax.Word, mode wmode) Word {
	if w == nil {
		return Word{}
	}
	if q, ok := quickWord(w, mode); ok {
		a.words++
		return q
	}
	b := a.getBuilder()
	defer a.putBuilder(b)
	for i, p := range mergeLits(w.Parts) {
		if a.err != nil {
			break
		}
		a.part(c, b, p, i == 0, false, mode, false)
	}
	res := b.word()
	if !a.checkWord(res) {
		return dynWord()
	}
	return res
}

// part expands one word part into b. With split, field splitting applies
// and finished fields are pushed on the scratch stack.
func (a *analyzer) part(c ctx, b *wbuilder, p syntax.WordPart, first, quoted bool, mode wmode, split bool) {
	switch x := p.(type) {
	case *syntax.Lit:
		switch {
		case quoted:
			dqLit(b, x.Value)
		case mode == modeHdoc:
			hdocLit(b, x.Value)
		default:
			a.unquotedLit(c, b, x.Value, first, mode)
		}
	case *syntax.SglQuoted:
		b.have = true
		if x.Dollar {
			b.lit(ansiC(x.Value))
		} else {
			b.lit(x.Value)
		}
	case *syntax.DblQuoted:
		b.have = true
		for _, q := range x.Parts {
			a.part(c, b, q, false, true, mode, split)
		}
	case *syntax.ParamExp:
		a.paramExp(c, b, x, quoted, mode, split)
	case *syntax.CmdSubst:
		a.cmdSubst(c, x)
		b.dynamic()
	case *syntax.ArithmExp:
		a.arith(c, x.X)
		b.dynamic()
	case *syntax.ProcSubst:
		a.procSubst(c, x)
		b.dynamic()
		b.proc = true
	case *syntax.ExtGlob:
		// In bash a harmless pattern; in zsh *(e:'cmd':) and *(+cmd) are glob
		// qualifiers that run code.
		pat := x.Pattern.Value
		if len(pat) > 0 && (pat[0] == 'e' || pat[0] == '+' || strings.ContainsAny(pat, "'\":$`")) {
			b.qual = true
			a.quals++
		}
		b.dynamic()
	default:
		b.dynamic()
	}
}

// unquotedLit expands an unquoted literal: backslash escapes, glob
// characters, tilde prefixes.
func (a *analyzer) unquotedLit(c ctx, b *wbuilder, v string, first bool, mode wmode) {
	i := 0
	if first && len(v) > 0 && v[0] == '~' {
		i = a.tilde(c, b, v)
	}
	for ; i < len(v); i++ {
		ch := v[i]
		switch ch {
		case '\\':
			if i+1 < len(v) {
				i++
				if v[i] == '\n' {
					continue
				}
				b.litByte(v[i])
			} else {
				b.litByte('\\')
			}
		case '*', '?', '[':
			if mode == modeAssign {
				b.litByte(ch)
			} else {
				b.globByte(ch)
			}
		case ']':
			if mode == modeAssign {
				b.litByte(ch)
			} else {
				// Unquoted: it may close a bracket expression.
				b.have, b.differ = true, true
				b.val = append(b.val, ch)
				b.pat = append(b.pat, ch)
			}
		case ':':
			b.litByte(ch)
			if mode == modeAssign && i+1 < len(v) && v[i+1] == '~' {
				i += a.tilde(c, b, v[i+1:])
			}
		default:
			b.litByte(ch)
		}
	}
}

// tilde expands a tilde prefix at the start of v and returns how many bytes
// it used (0: none).
func (a *analyzer) tilde(c ctx, b *wbuilder, v string) int {
	end := strings.IndexByte(v, '/')
	if end < 0 {
		end = len(v)
	}
	if i := strings.IndexByte(v[:end], ':'); i >= 0 {
		end = i
	}
	user := v[1:end]
	if user == "" {
		if home, ok := c.env.lookup("HOME"); ok {
			b.lit(home)
		} else {
			b.dynamic()
		}
		return end
	}
	if strings.ContainsAny(user, "\\*?[") {
		return 0
	}
	b.dynamic() // ~user, ~+, ~-
	return end
}

func dqLit(b *wbuilder, v string) {
	b.have = true
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if ch == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				i++
				b.litByte(v[i])
				continue
			case '\n':
				i++
				continue
			}
		}
		b.litByte(ch)
	}
}

func hdocLit(b *wbuilder, v string) {
	b.have = true
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if ch == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '\\':
				i++
				b.litByte(v[i])
				continue
			case '\n':
				i++
				continue
			}
		}
		b.litByte(ch)
	}
}

// ansiC decodes the body of $'...'.
func ansiC(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '\\' || i+1 >= len(s) {
			out = append(out, ch)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'e', 'E':
			out = append(out, 27)
		case 'f':
			out = append(out, 12)
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, 11)
		case '\\', '\'', '"', '?':
			out = append(out, e)
		case 'c':
			if i+1 < len(s) {
				i++
				out = append(out, s[i]&0x1f)
			} else {
				out = append(out, '\\', 'c')
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, j := 0, i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				n = n*8 + int(s[j]-'0')
			}
			i = j - 1
			out = append(out, byte(n))
		case 'x', 'u', 'U':
			out, i = ansiCHex(out, s, i, e)
		default:
			out = append(out, '\\', e)
		}
	}
	// bash ends the string at a NUL byte.
	if i := slices.Index(out, 0); i >= 0 {
		out = out[:i]
	}
	return string(out)
}

// ansiCHex appends the character of the \xHH, \uHHHH or \UHHHHHHHH escape
// (e is 'x', 'u' or 'U') at s[i] and returns the index of its last byte.
func ansiCHex(out []byte, s string, i int, e byte) ([]byte, int) {
	maxd := 2
	switch e {
	case 'u':
		maxd = 4
	case 'U':
		maxd = 8
	}
	n, j := 0, i+1
	for ; j < len(s) && j < i+1+maxd && isHex(s[j]); j++ {
		n = n*16 + hexVal(s[j])
	}
	if j == i+1 {
		return append(out, '\\', e), i
	}
	if e == 'x' {
		return append(out, byte(n)), j - 1
	}
	if n > utf8.MaxRune {
		n = utf8.RuneError
	}
	return utf8.AppendRune(out, rune(n)), j - 1
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// paramExp expands $x, ${x}, ${x:-y}, ...
func (a *analyzer) paramExp(c ctx, b *wbuilder, x *syntax.ParamExp, quoted bool, mode wmode, split bool) {
	val, known, list := a.paramValue(c, x, quoted)
	if list != nil && quoted && mode == modeArgs && split {
		// "$@": one field per positional parameter.
		for i, s := range list {
			if i > 0 {
				a.pushWord(b.word())
				b.reset()
			}
			b.lit(s)
		}
		return
	}
	if !known {
		b.dynamic()
		return
	}
	if quoted || mode != modeArgs || !split {
		b.lit(val)
		if mode == modeSingle && !quoted {
			// Unquoted in a redirection target: glob characters are live.
			b.glob = b.glob || strings.ContainsAny(val, "*?[")
		}
		return
	}
	ifs, ok := c.env.lookup("IFS")
	if !ok {
		if val != "" {
			b.dynamic()
		}
		return
	}
	for i := 0; i < len(val); i++ {
		ch := val[i]
		if strings.IndexByte(ifs, ch) >= 0 {
			if ch == ' ' || ch == '\t' || ch == '\n' {
				if b.have {
					a.pushWord(b.word())
					b.reset()
				}
			} else {
				b.have = true
				a.pushWord(b.word())
				b.reset()
			}
			continue
		}
		switch ch {
		case '*', '?', '[':
			b.globByte(ch)
		default:
			b.litByte(ch)
		}
	}
}

// paramValue resolves a parameter expansion; list is set for "$@" with known
// positional parameters.
func (a *analyzer) paramValue(c ctx, x *syntax.ParamExp, quoted bool) (string, bool, []string) {
	def := a.paramSubWords(c, x)
	if x.Param == nil || x.NestedParam != nil || x.Flags != nil || len(x.Modifiers) > 0 {
		return "", false, nil
	}
	name := x.Param.Value
	if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) {
		c.env.unknown(name)
		return "", false, nil
	}
	if x.Excl {
		// ${!x}: indirection, evaluating x's value as a name (and subscript).
		if v, ok := a.lookupParam(c, name); ok {
			a.subscript(c, Word{Value: v})
		}
		return "", false, nil
	}
	if paramTransformed(x) {
		return "", false, nil
	}
	if x.Exp != nil {
		v, ok := a.paramExpValue(c, x.Exp.Op, name, def)
		return v, ok, nil
	}
	if (name == "@" || name == "*") && c.env.posKnown && !c.env.poisoned {
		return positionalValue(c, name, quoted)
	}
	v, ok := a.lookupParam(c, name)
	return v, ok, nil
}

// paramSubWords analyses the words and arithmetic inside a parameter
// expansion; it returns the expanded word of ${x op word}.
func (a *analyzer) paramSubWords(c ctx, x *syntax.ParamExp) Word {
	if x.Index != nil {
		a.arith(c, x.Index)
	}
	if x.Slice != nil {
		a.arith(c, x.Slice.Offset)
		a.arith(c, x.Slice.Length)
	}
	if x.Repl != nil {
		if x.Repl.Orig != nil {
			a.expandWord1(c, x.Repl.Orig, modeSingle)
		}
		if x.Repl.With != nil {
			a.expandWord1(c, x.Repl.With, modeSingle)
		}
	}
	var def Word
	if x.Exp != nil && x.Exp.Word != nil {
		def = a.expandWord1(c, x.Exp.Word, modeSingle)
	}
	return def
}

// paramTransformed reports whether a parameter expansion does more than
// read the value (length, subscript, slice, replacement, zsh flags).
func paramTransformed(x *syntax.ParamExp) bool {
	return x.Length || x.Width || x.IsSet || x.Index != nil || x.Slice != nil || x.Repl != nil || x.Names != 0 ||
		x.Split != syntax.OptUnset || x.GlobSubst != syntax.OptUnset || x.RcExpand != syntax.OptUnset
}

// paramExpValue resolves ${x op def}. A known value decides ${x:-d},
// ${x:?msg}, ${x:+alt}; unset and empty are not told apart, so only
// non-empty values resolve the forms without a colon.
func (a *analyzer) paramExpValue(c ctx, op syntax.ParExpOperator, name string, def Word) (string, bool) {
	v, ok := a.lookupParam(c, name)
	if !ok {
		return "", false
	}
	switch op {
	case syntax.DefaultUnsetOrNull:
		if v != "" {
			return v, true
		}
		if !def.Dynamic {
			return def.Value, true
		}
	case syntax.DefaultUnset, syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		if v != "" {
			return v, true
		}
	case syntax.AlternateUnsetOrNull:
		if v == "" {
			return "", true
		}
		if !def.Dynamic {
			return def.Value, true
		}
	case syntax.AlternateUnset:
		if v != "" && !def.Dynamic {
			return def.Value, true
		}
	}
	return "", false
}

// positionalValue resolves $@ and $* (name) from known positional
// parameters.
func positionalValue(c ctx, name string, quoted bool) (string, bool, []string) {
	if name == "@" && quoted {
		if len(c.env.pos) == 0 {
			return "", true, nil
		}
		return "", true, c.env.pos
	}
	sep := " "
	if name == "*" && quoted {
		ifs, ok := c.env.lookup("IFS")
		if !ok {
			return "", false, nil
		}
		sep = ifs[:min(1, len(ifs))]
	}
	return strings.Join(c.env.pos, sep), true, nil
}

func (a *analyzer) lookupParam(c ctx, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	if name[0] >= '0' && name[0] <= '9' {
		n, err := strconv.Atoi(name)
		if err != nil || !c.env.posKnown || c.env.poisoned {
			return "", false
		}
		if n == 0 {
			return c.env.arg0, c.env.arg0Known
		}
		if n <= len(c.env.pos) {
			return c.env.pos[n-1], true
		}
		return "", true
	}
	switch name {
	case "#":
		if c.env.posKnown && !c.env.poisoned {
			return strconv.Itoa(len(c.env.pos)), true
		}
		return "", false
	case "@", "*", "?", "$", "!", "-", "_":
		return "", false
	}
	return c.env.lookup(name)
}

func (a *analyzer) cmdSubst(c ctx, x *syntax.CmdSubst) {
	sc := c
	sc.scope = a.newScope()
	sc.redirs = nil
	if x.TempFile || x.ReplyVar {
		// ${ cmd; } and ${| cmd; } run in the current shell.
		a.stmts(sc, x.Stmts)
		return
	}
	snap := c.env.clone()
	a.stmts(sc, x.Stmts)
	c.env.restore(snap)
}

func (a *analyzer) procSubst(c ctx, x *syntax.ProcSubst) {
	sc := c
	sc.scope = a.newScope()
	sc.redirs = nil
	if x.Op == syntax.CmdOut {
		sc.stdin = stdinSrc{kind: stdinPipe} // >(cmd) reads what the command writes
	}
	snap := c.env.clone()
	a.stmts(sc, x.Stmts)
	c.env.restore(snap)
}
