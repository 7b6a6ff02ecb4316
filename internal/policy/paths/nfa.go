package paths

// The glob matcher intersects two character-level automata: one for the strings a pattern matches,
// one for the strings a glob may expand to. Both are Thompson automata whose states have at most one
// consuming edge and two epsilon edges; the product is explored once per state pair, so the work is
// bounded by |pattern states|·|glob states| and by a budget.

// nstate is an automaton state.
type nstate struct {
	lit    rune     // the consuming edge's rune when >= 0
	set    []rrange // the consuming edge's set when lit < 0
	to     int32    // the consuming edge's target, -1 when none
	e1, e2 int32    // epsilon edges, -1 when none
	// strict edges pair only with a literal edge of the other automaton: the '/' that leads below a
	// pattern's literal last component must be written in the glob, not produced by a star.
	strict bool
}

// nfa is an immutable automaton.
type nfa struct {
	st     []nstate
	start  int32
	accept int32
	climb  []int32 // pattern automata: where a path below an unknown directory may start
}

type builder struct {
	st    []nstate
	cur   int32
	climb []int32
	fold  bool // the pattern's classes are closed under case folding
}

func newBuilder(capacity int) *builder {
	b := &builder{st: make([]nstate, 0, capacity)}
	b.cur = b.add()
	return b
}

func (b *builder) add() int32 {
	b.st = append(b.st, nstate{lit: -1, to: -1, e1: -1, e2: -1})
	return int32(len(b.st) - 1)
}

func (b *builder) eps(from, to int32) {
	s := &b.st[from]
	switch {
	case s.e1 < 0:
		s.e1 = to
	case s.e2 < 0:
		s.e2 = to
	default:
		m := b.add()
		s = &b.st[from]
		b.st[m].e1, b.st[m].e2 = s.e2, to
		s.e2 = m
	}
}

// free returns the current state, moved past a fresh epsilon when it already consumes.
func (b *builder) free() int32 {
	if b.st[b.cur].to >= 0 {
		n := b.add()
		b.eps(b.cur, n)
		b.cur = n
	}
	return b.cur
}

// lit emits r and returns the state that consumes it.
func (b *builder) lit(r rune) int32 {
	s := b.free()
	n := b.add()
	b.st[s].lit, b.st[s].to = r, n
	b.cur = n
	return s
}

func (b *builder) str(s string) {
	for _, r := range s {
		b.lit(r)
	}
}

func (b *builder) set(rs []rrange) {
	s := b.free()
	n := b.add()
	b.st[s].set, b.st[s].to = rs, n
	b.cur = n
}

// loop emits rs* and returns the loop state. The loop state is always fresh: reusing the current
// state would let other epsilon edges leaving it (an opt's skip) follow the loop.
func (b *builder) loop(rs []rrange) int32 {
	s := b.add()
	b.eps(b.cur, s)
	b.st[s].set, b.st[s].to = rs, s
	n := b.add()
	b.eps(s, n)
	b.cur = n
	return s
}

func (b *builder) opt(inner func()) {
	s := b.cur
	inner()
	b.eps(s, b.cur)
}

func (b *builder) alt(branches ...func()) {
	s := b.cur
	end := b.add()
	for _, br := range branches {
		st := b.add()
		b.eps(s, st)
		b.cur = st
		br()
		b.eps(b.cur, end)
	}
	b.cur = end
}

func (b *builder) mark() { b.climb = append(b.climb, b.cur) }

func (b *builder) done() *nfa {
	return &nfa{st: b.st, start: 0, accept: b.cur, climb: b.climb}
}

// elems emits a component glob. With noDot, a wildcard never matches the component's leading '.'.
func (b *builder) elems(es []elem, noDot bool) {
	for i, e := range es {
		first := noDot && i == 0
		switch e.op {
		case opLit:
			b.lit(e.r)
		case opOne:
			if first {
				b.set(setUser1)
			} else {
				b.set(setNonSlash)
			}
		case opClass:
			switch {
			case first:
				b.set(subtractRune(e.set, '.'))
			case b.fold:
				b.set(foldSet(e.set))
			default:
				b.set(e.set)
			}
		case opStar:
			if first {
				b.opt(func() { b.set(setUser1); b.loop(setNonSlash) })
			} else {
				b.loop(setNonSlash)
			}
		case opDyn:
			b.loop(setAll)
		}
	}
}

// buildPatternNFA builds the automaton of the strings a pattern may match (Match's semantics).
func buildPatternNFA(p *Pattern) *nfa {
	b := newBuilder(len(p.raw) + 48)
	b.fold = true
	needSep := false
	switch p.kind {
	case kindAbs:
		b.lit('/')
	case kindHome:
		// "~" or "~user", /root, /home/<user>
		b.alt(
			func() { b.lit('~'); b.loop(setNonSlash) },
			func() { b.lit('/'); b.mark(); b.str(rootHome) },
			func() {
				b.lit('/')
				b.mark()
				b.str("home/")
				b.mark()
				b.set(setUser1)
				b.loop(setNonSlash)
			},
			func() {
				b.lit('/')
				b.mark()
				b.str("Users/")
				b.mark()
				b.set(setUser1)
				b.loop(setNonSlash)
			},
		)
		needSep = true
	case kindRel:
		// Directly under the working directory, or below any absolute or home directory.
		b.opt(func() {
			b.alt(
				func() { b.lit('/') },
				func() { b.lit('~'); b.loop(setNonSlash); b.lit('/') },
			)
			b.opt(func() {
				b.climb = append(b.climb, b.loop(setAll))
				b.lit('/')
			})
		})
	}
	for i, c := range p.seq[:p.n] {
		last := i == p.n-1
		if c.dstar {
			switch {
			case last && needSep:
				b.opt(func() { b.lit('/'); b.climb = append(b.climb, b.loop(setAll)) })
			case last:
				b.climb = append(b.climb, b.loop(setAll))
			default:
				if needSep {
					b.lit('/')
				}
				b.opt(func() { b.climb = append(b.climb, b.loop(setAll)); b.lit('/') })
				needSep = false
				continue
			}
			needSep = true
			continue
		}
		if needSep {
			b.lit('/')
		}
		b.mark()
		if c.g == nil {
			b.str(c.lit)
		} else {
			b.elems(c.g.elems, false)
		}
		needSep = true
	}
	if p.below {
		var l int32
		if needSep {
			b.opt(func() {
				s := b.lit('/')
				b.st[s].strict = true
				l = b.loop(setAll)
			})
		} else {
			l = b.loop(setAll)
		}
		if p.n == 0 {
			b.climb = append(b.climb, l)
		}
	}
	return b.done()
}

// intersect reports whether some string is accepted by both automata, starting a in any of starts.
// It spends one unit of budget per state pair; past the budget it answers true (fail closed).
func intersect(a, g *nfa, starts []int32, budget *int) bool {
	na, ng := len(a.st), len(g.st)
	total := na * ng
	if total > maxProduct {
		*budget = -1
		return true
	}
	seen := make([]uint64, (total+63)/64)
	stack := make([]uint32, 0, 64)
	push := func(x, y int32) {
		k := int(x)*ng + int(y)
		if seen[k>>6]&(1<<(k&63)) != 0 {
			return
		}
		seen[k>>6] |= 1 << (k & 63)
		stack = append(stack, uint32(k))
	}
	for _, s := range starts {
		push(s, g.start)
	}
	for len(stack) > 0 {
		*budget--
		if *budget < 0 {
			return true
		}
		k := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		x, y := int32(k/ng), int32(k%ng)
		if x == a.accept && y == g.accept {
			return true
		}
		sa, sg := &a.st[x], &g.st[y]
		if sa.e1 >= 0 {
			push(sa.e1, y)
		}
		if sa.e2 >= 0 {
			push(sa.e2, y)
		}
		if sg.e1 >= 0 {
			push(x, sg.e1)
		}
		if sg.e2 >= 0 {
			push(x, sg.e2)
		}
		if sa.to >= 0 && sg.to >= 0 && overlaps(sa, sg) {
			push(sa.to, sg.to)
		}
	}
	return false
}

// maxProduct caps the state pairs of one intersection (a 512 KiB bit set); past it the answer is
// true at once.
const maxProduct = 1 << 22

// overlaps reports whether two consuming edges share a rune, letters compared case-insensitively
// (the pattern automaton's sets are closed under folding).
func overlaps(a, b *nstate) bool {
	if (a.strict && b.lit < 0) || (b.strict && a.lit < 0) {
		return false
	}
	switch {
	case a.lit >= 0 && b.lit >= 0:
		return foldEq(a.lit, b.lit)
	case a.lit >= 0:
		return inSetFold(b.set, a.lit)
	case b.lit >= 0:
		return inSetFold(a.set, b.lit)
	}
	return setsOverlap(a.set, b.set)
}
