package shell

import (
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// The fast parser handles a small subset of bash that covers most agent
// commands: words made of plain characters, '...' and "..." without
// expansions, joined by | && || and ;, with >, >>, <, N>, >&N and N>&M
// redirections. It builds the same syntax tree as mvdan.cc/sh (minus
// positions) from a few slab allocations, and gives up (ok=false) on
// anything else, which then goes to the full parser. FuzzFastParse checks
// that both parsers give the same analysis for every input the fast parser
// accepts.

type fastTokKind uint8

const (
	ftWord fastTokKind = iota
	ftPipe
	ftAnd
	ftOr
	ftSemi
	ftRedir
)

// fastTok is one token. It holds no pointers (text is located by offsets
// into the source) so that filling the token buffer needs no write
// barriers.
type fastTok struct {
	kind   fastTokKind
	op     syntax.RedirOperator // ftRedir
	n0, n1 int32                // ftRedir: the fd number, src[n0:n1] (empty if none)
	p0, p1 int32                // ftWord: parts [p0,p1) in fastParser.parts
}

type fastPartKind uint8

const (
	fpLit fastPartKind = iota
	fpSgl
	fpDbl
)

// fastPart is one part of a word: src[i0:i1] (inside the quotes).
type fastPart struct {
	kind   fastPartKind
	i0, i1 int32
}

// fastParser holds reusable token buffers (pooled with the parser).
type fastParser struct {
	src   string // the source being parsed
	toks  []fastTok
	parts []fastPart
	n     fastCounts  // the parts of every word, counted by lex
	slabs fastSlabs   // reused for top-level parses
	file  syntax.File // reused for top-level parses
	// size is the size of the last tree parse returned: its simple
	// commands, words (redirection targets included) and redirections.
	size struct{ calls, words, redirs int }
}

func (fp *fastParser) val(p fastPart) string { return fp.src[p.i0:p.i1] }

// plainByte reports bytes that may appear unquoted in a fast-path word.
// Everything with a meaning to the shell ($ ` \ ( ) { } # ! & | ; < > space
// quotes, newline) and control or non-ASCII bytes are excluded.
var plainByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_-./:,@%+=^~*?[]" {
		t[c] = true
	}
	return t
}()

// dqByte reports bytes allowed inside a fast-path "...": anything but
// $ ` \ " and control bytes.
func dqByte(c byte) bool {
	return c >= 0x20 && c != '$' && c != '`' && c != '\\' && c != '"' && c != 0x7f
}

// fastReserved reports words the full parser treats specially at the start
// of a command.
func fastReserved(w string) bool {
	switch w {
	case "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
		"function", "if", "in", "select", "then", wTime, "until", "while", wDeclare, wLocal, wExport,
		wReadonly, wTypeset, "nameref", "let", "@test":
		return true
	}
	return false
}

// lex splits src into tokens; ok is false for anything outside the subset.
func (fp *fastParser) lex(src string) bool {
	fp.src = src
	fp.toks, fp.parts, fp.n = fp.toks[:0], fp.parts[:0], fastCounts{}
	i := 0
	for i < len(src) {
		switch src[i] {
		case ' ', '\t':
			i++
			continue
		case '|', '&', ';', '>', '<':
			j, ok := fp.lexOp(src, i)
			if !ok {
				return false
			}
			i = j
			continue
		}
		// A word.
		p0 := len(fp.parts)
		start := i
		var ok bool
		if i, ok = fp.lexWord(src, i); !ok {
			return false
		}
		if i == start {
			return false // a byte outside the subset
		}
		// Literal parts next to each other (a'b'c) are separate parts, as
		// in the full parser; adjacent plain runs cannot occur.
		if i < len(src) && (src[i] == '>' || src[i] == '<') && len(fp.parts) == p0+1 &&
			fp.parts[p0].kind == fpLit && isDigits(fp.val(fp.parts[p0])) {
			// N> and N<: the digits are the descriptor.
			n := fp.parts[p0]
			fp.parts = fp.parts[:p0]
			fp.n.lit--
			fp.n.part--
			if !fp.redir(src, &i, n.i0, n.i1) {
				return false
			}
			continue
		}
		if len(fp.parts) == p0+1 && fp.parts[p0].kind == fpLit {
			fp.n.lword++
		}
		fp.toks = append(fp.toks, fastTok{kind: ftWord, p0: int32(p0), p1: int32(len(fp.parts))})
	}
	return true
}

// lexOp lexes the operator at src[i], one of | & ; > <. It returns the
// index after it; ok is false for anything outside the subset.
func (fp *fastParser) lexOp(src string, i int) (next int, ok bool) {
	next1 := byte(0)
	if i+1 < len(src) {
		next1 = src[i+1]
	}
	switch src[i] {
	case '|':
		switch next1 {
		case '|':
			fp.toks = append(fp.toks, fastTok{kind: ftOr})
			return i + 2, true
		case '&':
			return i, false // |&
		}
		fp.toks = append(fp.toks, fastTok{kind: ftPipe})
		return i + 1, true
	case '&':
		if next1 == '&' {
			fp.toks = append(fp.toks, fastTok{kind: ftAnd})
			return i + 2, true
		}
		return i, false // background, &>
	case ';':
		if next1 == ';' || next1 == '&' || next1 == '|' {
			return i, false
		}
		fp.toks = append(fp.toks, fastTok{kind: ftSemi})
		return i + 1, true
	}
	ok = fp.redir(src, &i, 0, 0) // > or <
	return i, ok
}

// lexWord lexes the parts of a word from src[i]; it returns the index after
// them, and ok false for anything outside the subset.
func (fp *fastParser) lexWord(src string, i int) (int, bool) {
	for i < len(src) {
		c := src[i]
		switch {
		case plainByte[c]:
			j := i
			for j < len(src) && plainByte[src[j]] {
				j++
			}
			fp.parts = append(fp.parts, fastPart{fpLit, int32(i), int32(j)})
			fp.n.lit++
			fp.n.part++
			i = j
		case c == '\'':
			j := i + 1
			for j < len(src) && src[j] != '\'' {
				if b := src[j]; (b < 0x20 && b != '\t') || b == 0x7f {
					return i, false // control bytes: the full parser decides
				}
				j++
			}
			if j >= len(src) {
				return i, false
			}
			fp.parts = append(fp.parts, fastPart{fpSgl, int32(i + 1), int32(j)})
			fp.n.sgl++
			fp.n.part++
			i = j + 1
		case c == '"':
			j := i + 1
			for j < len(src) && dqByte(src[j]) {
				j++
			}
			if j >= len(src) || src[j] != '"' {
				return i, false
			}
			fp.parts = append(fp.parts, fastPart{fpDbl, int32(i + 1), int32(j)})
			fp.n.dbl++
			fp.n.part++
			if j > i+1 {
				fp.n.lit++
				fp.n.dpart++
			}
			i = j + 1
		default:
			return i, true
		}
	}
	return i, true
}

// redir lexes a redirection operator at src[*i] and the word after it.
// The descriptor number, if any, is src[n0:n1].
func (fp *fastParser) redir(src string, i *int, n0, n1 int32) bool {
	j := *i
	var op syntax.RedirOperator
	switch {
	case src[j] == '<':
		if j+1 < len(src) && (src[j+1] == '<' || src[j+1] == '>' || src[j+1] == '&' || src[j+1] == '(') {
			return false
		}
		op = syntax.RdrIn
		j++
	case j+1 < len(src) && src[j+1] == '>':
		op = syntax.AppOut
		j += 2
	case j+1 < len(src) && src[j+1] == '&':
		op = syntax.DplOut
		j += 2
	case j+1 < len(src) && (src[j+1] == '|' || src[j+1] == '('):
		return false
	default:
		op = syntax.RdrOut
		j++
	}
	if j < len(src) && (src[j] == '>' || src[j] == '<' || src[j] == '&' || src[j] == '|' || src[j] == '(') {
		return false
	}
	*i = j
	fp.toks = append(fp.toks, fastTok{kind: ftRedir, op: op, n0: n0, n1: n1})
	return true
}

// fastSlabs are the nodes of one fast-path tree, allocated together.
type fastSlabs struct {
	lits   []syntax.Lit
	sgls   []syntax.SglQuoted
	dbls   []syntax.DblQuoted
	parts  []syntax.WordPart // words' parts
	dparts []syntax.WordPart // the Lit inside each non-empty "..."
	words  []syntax.Word
	lwords []fastLitWord // words of one unquoted literal
	wptrs  []*syntax.Word
	calls  []syntax.CallExpr
	stmts  []syntax.Stmt
	bins   []syntax.BinaryCmd
	redirs []syntax.Redirect
	rptrs  []*syntax.Redirect
	sptrs  []*syntax.Stmt
}

// fastLitWord is a word of one unquoted literal, its three nodes in one slab
// element.
type fastLitWord struct {
	w    syntax.Word
	lit  syntax.Lit
	part [1]syntax.WordPart
}

// fastCounts counts the nodes of a tree. lword counts the words of one
// unquoted literal, which are also counted in lit, part and word.
type fastCounts struct {
	lit, sgl, dbl, dpart, part, word, lword int
}

// parse parses src with the fast parser, or returns ok=false. With reuse,
// the tree lives in fp and is valid until the next reusing parse: only the
// top-level parse of an analysis may reuse (nested strings are parsed while
// the outer tree is still in use).
func (fp *fastParser) parse(src string, reuse bool) (*syntax.File, bool) {
	if len(src) > 4<<10 || !utf8.ValidString(src) || !fp.lex(src) {
		return nil, false
	}
	toks := fp.toks
	if len(toks) == 0 {
		return nil, false
	}
	// Check the grammar and count nodes.
	n := fp.n
	nBins, nRedirs, nTop, nCalls := 0, 0, 0, 0
	cmdWords, cmdAny := 0, false
	for k := 0; k < len(toks); k++ {
		t := toks[k]
		switch t.kind {
		case ftWord:
			if cmdWords == 0 && !fp.firstWordOK(t) {
				return nil, false
			}
			cmdWords++
			cmdAny = true
			n.word++
		case ftRedir:
			if k+1 >= len(toks) || toks[k+1].kind != ftWord {
				return nil, false
			}
			k++
			n.word++
			nRedirs++
			if t.n1 > t.n0 {
				n.lit++
			}
			cmdAny = true
		case ftPipe, ftAnd, ftOr, ftSemi:
			if !cmdAny {
				return nil, false
			}
			nCalls++
			if t.kind == ftSemi {
				nTop++
			} else {
				nBins++
			}
			cmdWords, cmdAny = 0, false
		}
	}
	switch toks[len(toks)-1].kind {
	case ftPipe, ftAnd, ftOr:
		return nil, false
	case ftSemi:
	default:
		nTop++
		nCalls++
	}
	var sl *fastSlabs
	var f *syntax.File
	if reuse {
		sl, f = &fp.slabs, &fp.file
		*f = syntax.File{}
	} else {
		sl, f = &fastSlabs{}, &syntax.File{}
	}
	sl.lits = grow(sl.lits, n.lit-n.lword)
	sl.sgls = grow(sl.sgls, n.sgl)
	sl.dbls = grow(sl.dbls, n.dbl)
	sl.parts = grow(sl.parts, n.part-n.lword)
	sl.dparts = grow(sl.dparts, n.dpart)
	sl.words = grow(sl.words, n.word-n.lword)
	sl.lwords = grow(sl.lwords, n.lword)
	sl.wptrs = grow(sl.wptrs, n.word-nRedirs) // redirection targets are not arguments
	sl.calls = grow(sl.calls, nCalls)
	sl.stmts = grow(sl.stmts, nCalls+nBins)
	sl.bins = grow(sl.bins, nBins)
	sl.redirs = grow(sl.redirs, nRedirs)
	sl.rptrs = grow(sl.rptrs, nRedirs)
	sl.sptrs = grow(sl.sptrs, nTop)

	k := 0
	for k < len(toks) {
		s := fp.andOr(toks, &k, sl)
		sl.sptrs = append(sl.sptrs, s)
		if k < len(toks) && toks[k].kind == ftSemi {
			k++
		}
	}
	f.Stmts = sl.sptrs
	fp.size.calls, fp.size.words, fp.size.redirs = nCalls, n.word, nRedirs
	return f, true
}

// firstWordOK reports whether the word t can start a simple command in the
// fast subset: no assignment, no reserved word.
func (fp *fastParser) firstWordOK(t fastTok) bool {
	for _, p := range fp.parts[t.p0:t.p1] {
		if p.kind != fpLit {
			continue
		}
		for _, c := range []byte(fp.val(p)) {
			if c == '=' || c == '[' {
				return false
			}
		}
	}
	return t.p1 != t.p0+1 || fp.parts[t.p0].kind != fpLit || !fastReserved(fp.val(fp.parts[t.p0]))
}

// andOr builds pipelines joined by && and ||, left-associative.
func (fp *fastParser) andOr(toks []fastTok, k *int, sl *fastSlabs) *syntax.Stmt {
	s := fp.pipeline(toks, k, sl)
	for *k < len(toks) && (toks[*k].kind == ftAnd || toks[*k].kind == ftOr) {
		op := syntax.AndStmt
		if toks[*k].kind == ftOr {
			op = syntax.OrStmt
		}
		*k++
		y := fp.pipeline(toks, k, sl)
		s = fp.bin(op, s, y, sl)
	}
	return s
}

// pipeline builds commands joined by |, left-associative.
func (fp *fastParser) pipeline(toks []fastTok, k *int, sl *fastSlabs) *syntax.Stmt {
	s := fp.simple(toks, k, sl)
	for *k < len(toks) && toks[*k].kind == ftPipe {
		*k++
		y := fp.simple(toks, k, sl)
		s = fp.bin(syntax.Pipe, s, y, sl)
	}
	return s
}

func (fp *fastParser) bin(op syntax.BinCmdOperator, x, y *syntax.Stmt, sl *fastSlabs) *syntax.Stmt {
	sl.bins = append(sl.bins, syntax.BinaryCmd{Op: op, X: x, Y: y})
	sl.stmts = append(sl.stmts, syntax.Stmt{Cmd: &sl.bins[len(sl.bins)-1]})
	return &sl.stmts[len(sl.stmts)-1]
}

func (fp *fastParser) simple(toks []fastTok, k *int, sl *fastSlabs) *syntax.Stmt {
	sl.calls = append(sl.calls, syntax.CallExpr{})
	call := &sl.calls[len(sl.calls)-1]
	sl.stmts = append(sl.stmts, syntax.Stmt{})
	st := &sl.stmts[len(sl.stmts)-1]
	r0 := len(sl.rptrs)
	w0 := len(sl.wptrs)
loop:
	for *k < len(toks) {
		t := toks[*k]
		switch t.kind {
		case ftWord:
			sl.wptrs = append(sl.wptrs, fp.word(t, sl))
			*k++
		case ftRedir:
			r := syntax.Redirect{Op: t.op}
			if t.n1 > t.n0 {
				sl.lits = append(sl.lits, syntax.Lit{Value: fp.src[t.n0:t.n1]})
				r.N = &sl.lits[len(sl.lits)-1]
			}
			r.Word = fp.word(toks[*k+1], sl)
			sl.redirs = append(sl.redirs, r)
			sl.rptrs = append(sl.rptrs, &sl.redirs[len(sl.redirs)-1])
			*k += 2
		default:
			break loop
		}
	}
	if len(sl.wptrs) > w0 {
		call.Args = sl.wptrs[w0:len(sl.wptrs):len(sl.wptrs)]
		st.Cmd = call
	}
	if len(sl.rptrs) > r0 {
		st.Redirs = sl.rptrs[r0:len(sl.rptrs):len(sl.rptrs)]
	}
	return st
}

func (fp *fastParser) word(t fastTok, sl *fastSlabs) *syntax.Word {
	if t.p1 == t.p0+1 && fp.parts[t.p0].kind == fpLit {
		sl.lwords = append(sl.lwords, fastLitWord{})
		lw := &sl.lwords[len(sl.lwords)-1]
		lw.lit.Value = fp.val(fp.parts[t.p0])
		lw.part[0] = &lw.lit
		lw.w.Parts = lw.part[:]
		return &lw.w
	}
	p0 := len(sl.parts)
	for _, p := range fp.parts[t.p0:t.p1] {
		v := fp.val(p)
		switch p.kind {
		case fpLit:
			sl.lits = append(sl.lits, syntax.Lit{Value: v})
			sl.parts = append(sl.parts, &sl.lits[len(sl.lits)-1])
		case fpSgl:
			sl.sgls = append(sl.sgls, syntax.SglQuoted{Value: v})
			sl.parts = append(sl.parts, &sl.sgls[len(sl.sgls)-1])
		case fpDbl:
			d := syntax.DblQuoted{}
			if v != "" {
				sl.lits = append(sl.lits, syntax.Lit{Value: v})
				sl.dparts = append(sl.dparts, &sl.lits[len(sl.lits)-1])
				d.Parts = sl.dparts[len(sl.dparts)-1 : len(sl.dparts) : len(sl.dparts)]
			}
			sl.dbls = append(sl.dbls, d)
			sl.parts = append(sl.parts, &sl.dbls[len(sl.dbls)-1])
		}
	}
	sl.words = append(sl.words, syntax.Word{Parts: sl.parts[p0:len(sl.parts):len(sl.parts)]})
	return &sl.words[len(sl.words)-1]
}

// grow returns s emptied, with room for n elements. The parse appends
// exactly n elements, overwriting the first n of the last parse; the old
// elements beyond them are cleared so that a reused slab keeps nothing of
// the last parse alive. Elements are only appended within capacity, so
// pointers into the slab stay valid.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n && cap(s) <= 4*n+64 {
		if len(s) > n {
			clear(s[n:]) // the rest of cap is still zero
		}
		return s[:0]
	}
	return make([]T, 0, n)
}
