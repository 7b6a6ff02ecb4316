package shell

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// stdinKind says where a command's standard input comes from.
type stdinKind uint8

const (
	stdinTerm stdinKind = iota // not redirected: whatever the caller gives
	stdinPipe                  // a pipe (pipeline stage, >(...))
	stdinFile                  // a file, a descriptor or a process substitution
	stdinDoc                   // a here-document or here-string
	stdinNull                  // /dev/null (xargs children)
)

type stdinSrc struct {
	kind  stdinKind
	op    string // "<<", "<<-", "<<<" for stdinDoc
	doc   string // the document when stdinDoc and known
	known bool
}

// ctx is the context a statement is analysed in.
type ctx struct {
	env      *env
	depth    int        // nesting of -c / eval strings
	wrappers []string   // Wrappers of the commands created here
	via      string     // Via of the commands created here
	parent   int        // Parent of the commands created here
	stdin    stdinSrc   // stdin of the commands created here
	scope    int32      // pipe scope: a new one inside substitutions and function bodies
	redirs   []Redirect // redirections of enclosing compound statements
}

// Bounds on work that the Limits do not name directly.
const (
	maxLoopItems = 32 // a for loop over more static items is analysed once with the variable unknown
	maxLoopFan   = 64 // product of the fan-outs of nested loops
)

type analyzer struct {
	lim      Limits
	ps       *parserState
	out      *Script
	err      error
	words    int // words produced by expansion
	steps    int // statements visited
	parsed   int // bytes parsed, nested strings included
	expanded int // bytes of expanded words
	fan      int // current product of loop fan-outs (0 means 1)
	funcs    map[string]bool
	scopes   int32
	quals    int // words with zshQual set

	bufs  scratchBufs // reused across analyses
	wslab []Word      // slab for Args and Positionals
	sslab []string    // slab for Flags and Wrappers
	rslab []Redirect  // slab for Redirects
}

// scratchBufs are buffers an analysis uses only while it runs; they are
// kept with the parser for the next one. Nothing in them may end up in a
// Script.
type scratchBufs struct {
	words     []Word         // stack of words being expanded
	pipeStmts []*syntax.Stmt // stack of the stages of the pipelines being walked
	stages    []stageRange   // the stages of every pipeline, pipeRec.off-indexed
	pipes     []pipeRec      // every pipeline, in the order Script.stages lists them
	flags     []string       // normalizeFlags' flags
	pos       []Word         // normalizeFlags' positionals when they are not one run of args
}

// pipeRec is one pipeline's stages: bufs.stages[off:off+n].
type pipeRec struct{ off, n int }

// reset empties the buffers for reuse, dropping what they point to.
func (b scratchBufs) reset() scratchBufs {
	clear(b.words)
	clear(b.pipeStmts)
	clear(b.flags[:cap(b.flags)])
	clear(b.pos[:cap(b.pos)])
	return scratchBufs{words: b.words[:0], pipeStmts: b.pipeStmts[:0], stages: b.stages[:0], pipes: b.pipes[:0],
		flags: b.flags[:0], pos: b.pos[:0]}
}

// wordsN returns an empty slice with room for n words, from the slab.
func (a *analyzer) wordsN(n int) []Word { return carve(&a.wslab, n, 16) }

func (a *analyzer) stringsN(n int) []string { return carve(&a.sslab, n, 16) }

func (a *analyzer) redirsN(n int) []Redirect { return carve(&a.rslab, n, 2) }

// carve returns an empty slice with room for n elements from the slab, starting a new slab (of at
// least minSlab elements) when the current one has no room.
func carve[T any](slab *[]T, n, minSlab int) []T {
	if n == 0 {
		return nil
	}
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, max(n, minSlab))
	}
	l := len(*slab)
	*slab = (*slab)[:l+n]
	return (*slab)[l : l : l+n]
}

func (a *analyzer) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

func (a *analyzer) limitErr(format string, args ...any) {
	a.fail(fmt.Errorf("shell: "+format+": %w", append(args, ErrLimit)...))
}

func (a *analyzer) maxSteps() int { return 64 * a.lim.MaxCommands }

func (a *analyzer) stmts(c ctx, list []*syntax.Stmt) {
	for _, s := range list {
		if a.err != nil {
			return
		}
		a.stmt(c, s)
	}
}

func (a *analyzer) stmt(c ctx, s *syntax.Stmt) {
	a.steps++
	if a.steps > a.maxSteps() {
		a.limitErr("more than %d statements to analyse", a.maxSteps())
		return
	}
	if s.Background || s.Coprocess || s.Disown {
		// An asynchronous statement runs in a subshell.
		snap := c.env.clone()
		defer c.env.restore(snap)
	}
	inner := c
	if len(s.Redirs) > 0 {
		rs, in, hasIn := a.redirects(c, s.Redirs)
		if len(rs) > 0 {
			inner.redirs = a.concatRedirs(c.redirs, rs)
		}
		if hasIn {
			inner.stdin = in
		}
	}
	switch x := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		a.call(c, inner, x)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.Pipe, syntax.PipeAll:
			a.pipeline(inner, x)
		default: // && ||
			a.stmt(inner, x.X)
			a.branch(inner, func() { a.stmt(inner, x.Y) })
		}
	case *syntax.Block:
		a.stmts(inner, x.Stmts)
	case *syntax.Subshell:
		snap := c.env.clone()
		a.stmts(inner, x.Stmts)
		c.env.restore(snap)
	case *syntax.IfClause:
		a.ifClause(inner, x)
	case *syntax.WhileClause:
		names, all := a.assignedNames(x)
		a.forget(inner, names, all)
		a.stmts(inner, x.Cond)
		a.stmts(inner, x.Do)
		a.forget(inner, names, all)
	case *syntax.ForClause:
		a.forClause(inner, x)
	case *syntax.CaseClause:
		a.expandWord1(inner, x.Word, modeSingle)
		for _, it := range x.Items {
			a.branch(inner, func() {
				for _, p := range it.Patterns {
					a.expandWord1(inner, p, modeSingle)
				}
				a.stmts(inner, it.Stmts)
			})
		}
	case *syntax.FuncDecl:
		a.funcDecl(inner, x)
	case *syntax.ArithmCmd:
		a.arith(inner, x.X)
	case *syntax.TestClause:
		a.test(inner, x.X)
	case *syntax.DeclClause:
		a.decl(inner, x)
	case *syntax.LetClause:
		for _, e := range x.Exprs {
			a.arith(inner, e)
		}
	case *syntax.TimeClause:
		if x.Stmt != nil {
			a.stmt(inner, x.Stmt)
		}
	case *syntax.CoprocClause:
		snap := c.env.clone()
		a.stmt(inner, x.Stmt)
		c.env.restore(snap)
	case *syntax.TestDecl:
		a.stmt(inner, x.Body)
	default:
		a.fail(fmt.Errorf("shell: unsupported statement %T", x))
	}
}

func (a *analyzer) concatRedirs(x, y []Redirect) []Redirect {
	if len(x) == 0 {
		return y
	}
	out := a.redirsN(len(x) + len(y))
	return append(append(out, x...), y...)
}

// branch runs f, code that may or may not run: variables it changes become
// unknown afterwards.
func (a *analyzer) branch(c ctx, f func()) {
	snap := c.env.clone()
	f()
	c.env.mergeFrom(&snap)
}

func (a *analyzer) ifClause(c ctx, x *syntax.IfClause) {
	a.stmts(c, x.Cond)
	a.branch(c, func() { a.stmts(c, x.Then) })
	if x.Else != nil {
		a.branch(c, func() { a.ifClause(c, x.Else) })
	}
}

func (a *analyzer) pipeline(c ctx, b *syntax.BinaryCmd) {
	base := len(a.bufs.pipeStmts)
	a.bufs.pipeStmts = flattenPipe(b, a.bufs.pipeStmts)
	n := len(a.bufs.pipeStmts) - base
	off := len(a.bufs.stages)
	a.bufs.stages = slices.Grow(a.bufs.stages, n)[:off+n]
	for i := range n {
		if a.err != nil {
			return
		}
		// Nested pipelines push above base+n and pop back: the index stays
		// valid even if the stack moves.
		st := a.bufs.pipeStmts[base+i]
		sc := c
		if i > 0 {
			sc.stdin = stdinSrc{kind: stdinPipe}
		}
		lo := int32(len(a.out.Commands))
		// Each stage runs in a subshell, except (with lastpipe) the last:
		// what a stage assigns becomes unknown.
		a.branch(sc, func() { a.stmt(sc, st) })
		a.bufs.stages[off+i] = stageRange{lo: lo, hi: int32(len(a.out.Commands)), scope: c.scope}
	}
	clear(a.bufs.pipeStmts[base:])
	a.bufs.pipeStmts = a.bufs.pipeStmts[:base]
	a.bufs.pipes = append(a.bufs.pipes, pipeRec{off: off, n: n})
}

// stageRange is one pipeline stage: the commands in [lo, hi) created in
// the pipeline's scope (not those of substitutions inside the stage).
type stageRange struct {
	lo, hi, scope int32
}

func (a *analyzer) newScope() int32 {
	a.scopes++
	return a.scopes
}

func flattenPipe(b *syntax.BinaryCmd, out []*syntax.Stmt) []*syntax.Stmt {
	for _, s := range [2]*syntax.Stmt{b.X, b.Y} {
		if x, ok := s.Cmd.(*syntax.BinaryCmd); ok && (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) &&
			len(s.Redirs) == 0 && !s.Negated && !s.Background && !s.Coprocess && !s.Disown {
			out = flattenPipe(x, out)
			continue
		}
		out = append(out, s)
	}
	return out
}

func (a *analyzer) forClause(c ctx, x *syntax.ForClause) {
	names, all := a.assignedNames(x)
	switch l := x.Loop.(type) {
	case *syntax.WordIter:
		name := l.Name.Value
		var items []string
		static := true
		if l.InPos.IsValid() {
			ws := a.expandWords(c, l.Items)
			for _, w := range ws {
				if w.Dynamic || w.Glob {
					static = false
				}
				items = append(items, w.Value)
			}
		} else if c.env.posKnown && !c.env.poisoned {
			items = c.env.pos
		} else {
			static = false
		}
		fan := max(a.fan, 1)
		if static && len(items) > 0 && len(items) <= maxLoopItems && fan*len(items) <= maxLoopFan {
			saved := a.fan
			a.fan = fan * len(items)
			for _, it := range items {
				if a.err != nil {
					break
				}
				a.forget(c, names, all)
				c.env.set(name, it, true)
				a.stmts(c, x.Do)
			}
			a.fan = saved
		} else {
			a.forget(c, names, all)
			c.env.unknown(name)
			a.stmts(c, x.Do)
		}
	case *syntax.CStyleLoop:
		a.forget(c, names, all)
		for _, e := range [3]syntax.ArithmExpr{l.Init, l.Cond, l.Post} {
			if e != nil {
				a.arith(c, e)
			}
		}
		a.stmts(c, x.Do)
	}
	a.forget(c, names, all)
}

// forget makes the named variables unknown (all: every variable).
func (a *analyzer) forget(c ctx, names []string, all bool) {
	if all {
		c.env.softPoison()
		return
	}
	for _, n := range names {
		c.env.unknown(n)
	}
}

// varBuiltins assign the variables named in their arguments.
var varBuiltins = map[string]bool{
	"read": true, "mapfile": true, "readarray": true, "getopts": true, wPrintf: true,
	"unset": true, wExport: true, wDeclare: true, wTypeset: true, wLocal: true,
	wReadonly: true, wWait: true, "let": true, "shift": true, "set": true,
}

// assignedNames lists the variables a loop may assign; all reports that it
// may assign any (eval, source, a function call, a dynamic command).
func (a *analyzer) assignedNames(n syntax.Node) (names []string, all bool) {
	nc := nameCollector{a: a}
	syntax.Walk(n, nc.visit)
	return nc.names, nc.all
}

// nameCollector is assignedNames' walk.
type nameCollector struct {
	a     *analyzer
	names []string
	all   bool
}

func (nc *nameCollector) visit(n syntax.Node) bool {
	if nc.all {
		return false
	}
	switch x := n.(type) {
	case *syntax.CmdSubst:
		return x.TempFile || x.ReplyVar // otherwise a subshell
	case *syntax.CallExpr:
		nc.call(x)
	default:
		nc.node(n)
	}
	return true
}

// node collects the names that assignments, loops, arithmetic and ${x=v}
// assign.
func (nc *nameCollector) node(n syntax.Node) {
	switch x := n.(type) {
	case *syntax.Assign:
		if x.Name != nil {
			nc.names = append(nc.names, x.Name.Value)
		} else if x.Naked {
			nc.all = true // declare "$x"
		}
	case *syntax.WordIter:
		nc.names = append(nc.names, x.Name.Value)
	case *syntax.BinaryArithm:
		if isAssignOp(x.Op) {
			nc.arithTarget(x.X)
		}
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			nc.arithTarget(x.X)
		}
	case *syntax.ParamExp:
		if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) && x.Param != nil {
			nc.names = append(nc.names, x.Param.Value)
		}
	}
}

// arithTarget collects the variable an arithmetic assignment assigns.
func (nc *nameCollector) arithTarget(e syntax.ArithmExpr) {
	if w, ok := e.(*syntax.Word); ok {
		nc.names = append(nc.names, w.Lit())
	}
}

// call collects the names a command may assign.
func (nc *nameCollector) call(x *syntax.CallExpr) {
	if len(x.Args) == 0 {
		return
	}
	first := x.Args[0].Lit()
	name := strings.ToLower(first)
	switch {
	case first == "" || name == wEval || name == wSource || name == "." || nc.a.funcs[first]:
		nc.all = true
	case varBuiltins[name] || name == wCommand || name == "builtin":
		for _, w := range x.Args[1:] {
			if l := w.Lit(); l != "" {
				if i := strings.IndexAny(l, "=["); i > 0 {
					l = l[:i]
				}
				nc.names = append(nc.names, l)
			} else {
				nc.all = true
			}
		}
	}
}

func isAssignOp(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
		syntax.ShrAssgn, syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
		return true
	}
	return false
}

func (a *analyzer) funcDecl(c ctx, x *syntax.FuncDecl) {
	var names []string
	if x.Name != nil {
		names = append(names, x.Name.Value)
	}
	for _, n := range x.Names {
		names = append(names, n.Value)
	}
	// The body runs when called, with the caller's variables and stdin: both
	// are unknown here, so the body is analysed with every variable unknown
	// and stdin taken as a pipe (the conservative choice).
	fc := c
	fc.env = funcEnv()
	fc.stdin = stdinSrc{kind: stdinPipe}
	fc.scope = a.newScope()
	a.stmt(fc, x.Body)
	if a.funcs == nil {
		a.funcs = make(map[string]bool)
	}
	for _, n := range names {
		a.funcs[n] = fc.env.poisoned
	}
}

// arith analyses an arithmetic expression: substitutions run, assignments
// make their variable unknown, and a variable whose value holds a
// substitution is evaluated as an expression (bash does this: x='a[$(id)]';
// echo $((x)) runs id).
func (a *analyzer) arith(c ctx, e syntax.ArithmExpr) {
	if a.err != nil || e == nil {
		return
	}
	switch x := e.(type) {
	case *syntax.BinaryArithm:
		if isAssignOp(x.Op) {
			if w, ok := x.X.(*syntax.Word); ok {
				if n := w.Lit(); n != "" {
					c.env.unknown(n)
				}
			}
		}
		a.arith(c, x.X)
		a.arith(c, x.Y)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			if w, ok := x.X.(*syntax.Word); ok {
				if n := w.Lit(); n != "" {
					c.env.unknown(n)
				}
			}
		}
		a.arith(c, x.X)
	case *syntax.ParenArithm:
		a.arith(c, x.X)
	case *syntax.FlagsArithm:
		a.arith(c, x.X)
	case *syntax.Word:
		if n := x.Lit(); n != "" {
			if syntax.ValidName(n) {
				a.arithValue(c, n)
			}
			return
		}
		for _, p := range x.Parts {
			if pe, ok := p.(*syntax.ParamExp); ok && pe.Param != nil && pe.Exp == nil && pe.Index == nil {
				a.arithValue(c, pe.Param.Value)
			}
		}
		a.expandWord1(c, x, modeSingle)
	}
}

// arithValue evaluates a variable's known value as an arithmetic expression
// when it could run something.
func (a *analyzer) arithValue(c ctx, name string) {
	v, ok := c.env.lookup(name)
	if ok && strings.ContainsAny(v, "$`") {
		a.nested(c, "(( "+v+" ))", "arithmetic", c.env)
	}
}

// test analyses a [[ ]] expression.
func (a *analyzer) test(c ctx, e syntax.TestExpr) {
	if a.err != nil || e == nil {
		return
	}
	switch x := e.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			// Operands are evaluated as arithmetic expressions.
			for _, side := range [2]syntax.TestExpr{x.X, x.Y} {
				if w, ok := side.(*syntax.Word); ok {
					v := a.expandWord1(c, w, modeSingle)
					if !v.Dynamic && strings.ContainsAny(v.Value, "$`") {
						a.nested(c, "(( "+v.Value+" ))", "arithmetic", c.env)
					} else if !v.Dynamic && syntax.ValidName(v.Value) {
						a.arithValue(c, v.Value)
					}
				} else {
					a.test(c, side)
				}
			}
			return
		}
		a.test(c, x.X)
		a.test(c, x.Y)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet {
			if w, ok := x.X.(*syntax.Word); ok {
				v := a.expandWord1(c, w, modeSingle)
				a.subscript(c, v)
				return
			}
		}
		a.test(c, x.X)
	case *syntax.ParenTest:
		a.test(c, x.X)
	case *syntax.Word:
		a.expandWord1(c, x, modeSingle)
	}
}

// subscript analyses the subscript of a variable name given to a builtin
// (read 'a[$(id)]', unset, printf -v, test -v, ${!x}): bash evaluates it.
func (a *analyzer) subscript(c ctx, w Word) {
	if w.Dynamic {
		return
	}
	i := strings.IndexByte(w.Value, '[')
	if i < 0 || !strings.ContainsAny(w.Value[i:], "$`") {
		return
	}
	sub := w.Value[i+1:]
	if j := strings.LastIndexByte(sub, ']'); j >= 0 {
		sub = sub[:j]
	}
	a.nested(c, "(( "+sub+" ))", "subscript", c.env)
}

// decl analyses declare, local, export, readonly, typeset and nameref.
func (a *analyzer) decl(c ctx, x *syntax.DeclClause) {
	variant := x.Variant.Value
	sticky := false
	if variant == "nameref" {
		c.env.poisoned = true
	}
	for _, as := range x.Args {
		if !as.Naked || as.Name != nil || as.Value == nil {
			continue
		}
		w := a.expandWord1(c, as.Value, modeSingle)
		if w.Dynamic {
			c.env.poisoned = true // may be -n, or any assignment
			continue
		}
		v := w.Value
		if len(v) > 1 && (v[0] == '-' || v[0] == '+') {
			for i := 1; i < len(v); i++ {
				switch v[i] {
				case 'x', 'r', 'g', 'a', 'A', 'p', 'f', 'F', 't':
				case 'n':
					if variant != wExport {
						c.env.poisoned = true
					}
				default:
					sticky = true
				}
			}
			continue
		}
		// A quoted "name=value" is an assignment at run time.
		name, val, hasEq := strings.Cut(v, "=")
		a.subscript(c, Word{Value: name})
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		if !syntax.ValidName(name) {
			continue
		}
		if hasEq {
			c.env.set(name, val, true)
			a.recordAssign(name, Word{Value: val, Pattern: escapePattern(val)}, -1)
		} else if variant != wExport && variant != wReadonly {
			c.env.unknown(name)
		}
	}
	for _, as := range x.Args {
		if a.err != nil {
			return
		}
		if as.Name == nil {
			continue
		}
		name := as.Name.Value
		if as.Naked {
			if variant != wExport && variant != wReadonly {
				c.env.unknown(name)
			}
		} else {
			w, known := a.assignValue(c, as)
			c.env.set(name, w.Value, known)
			a.recordAssign(name, w, -1)
			a.envString(c, name, w, -1)
		}
		if sticky {
			c.env.makeSticky(name)
		}
	}
}

// assignValue expands the value of an assignment.
func (a *analyzer) assignValue(c ctx, as *syntax.Assign) (Word, bool) {
	if as.Index != nil {
		a.arith(c, as.Index)
	}
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				a.arith(c, el.Index)
			}
			if el.Value != nil {
				base := len(a.bufs.words)
				a.expandFields(c, el.Value)
				clear(a.bufs.words[base:])
				a.bufs.words = a.bufs.words[:base]
			}
		}
		return dynWord(), false
	}
	var w Word
	if as.Value != nil {
		w = a.expandWord1(c, as.Value, modeAssign)
	}
	known := !w.Dynamic && as.Index == nil
	if as.Append && known {
		old, ok := c.env.lookup(as.Name.Value)
		if !ok {
			known = false
		} else {
			w.Value = old + w.Value
			w.Pattern = escapePattern(w.Value)
		}
	}
	if !known && !w.Dynamic {
		w = dynWord()
	}
	return w, known
}

// recordAssign reports an assignment of w to name (by command cmd, or -1).
func (a *analyzer) recordAssign(name string, w Word, cmd int) {
	a.out.Assignments = append(a.out.Assignments, Assignment{Name: name, Value: w, Cmd: cmd})
}

// shellStringVars hold shell command text that some program runs.
var shellStringVars = map[string]bool{
	"GIT_SSH_COMMAND": true, "GIT_PAGER": true, "GIT_EDITOR": true, "GIT_SEQUENCE_EDITOR": true,
	"GIT_EXTERNAL_DIFF": true, "GIT_ASKPASS": true, "PAGER": true, "MANPAGER": true, "EDITOR": true,
	"VISUAL": true, "PROMPT_COMMAND": true, "LESSOPEN": true, "LESSCLOSE": true, "SSH_ASKPASS": true,
	"SUDO_ASKPASS": true, "BROWSER": true, "PS4": true, "RSYNC_RSH": true,
}

// envString analyses the value of a variable that programs run as a shell
// command (GIT_SSH_COMMAND, PAGER, ...). cmd is the command it is exported
// to, or -1.
func (a *analyzer) envString(c ctx, name string, w Word, cmd int) {
	if !shellStringVars[name] {
		return
	}
	if w.Dynamic {
		if cmd >= 0 {
			a.setCode(cmd, CodeDynamic)
		}
		return
	}
	src := strings.TrimLeft(w.Value, "|!")
	if strings.TrimSpace(src) == "" {
		return
	}
	nc := c
	if cmd >= 0 {
		nc = a.childCtx(c, cmd)
	}
	a.nested(nc, src, name+"=", c.env.child())
}

func (a *analyzer) setCode(idx int, k CodeKind) {
	if idx < 0 || idx >= len(a.out.Commands) {
		return
	}
	cur := &a.out.Commands[idx].Code
	// Keep the most severe: Dynamic > Piped > Inline.
	if codeRank(k) > codeRank(*cur) {
		*cur = k
	}
}

func codeRank(k CodeKind) int {
	switch k {
	case CodeDynamic:
		return 3
	case CodePiped:
		return 2
	case CodeInline:
		return 1
	}
	return 0
}

// nested parses src and analyses it in c (whose env, wrappers, via and
// parent the caller set up), one level deeper.
func (a *analyzer) nested(c ctx, src, via string, e *env) {
	if a.err != nil {
		return
	}
	depth := c.depth + 1
	if depth > a.lim.MaxDepth {
		a.limitErr("nesting deeper than %d (%s)", a.lim.MaxDepth, via)
		return
	}
	if len(src) > a.lim.MaxBytes {
		a.limitErr("%s string is %d bytes, more than %d", via, len(src), a.lim.MaxBytes)
		return
	}
	a.parsed += len(src)
	if a.parsed > 8*a.lim.MaxBytes {
		a.limitErr("more than %d bytes of nested strings", 8*a.lim.MaxBytes)
		return
	}
	f, err := a.ps.parse(src, false)
	if err != nil {
		if errors.Is(err, ErrLimit) {
			a.fail(err)
		} else {
			a.fail(fmt.Errorf("shell: parse %s string: %w", via, err))
		}
		return
	}
	nc := c
	nc.depth = depth
	nc.via = via
	nc.env = e
	a.stmts(nc, f.Stmts)
}

// childCtx is the context of commands run by command idx.
func (a *analyzer) childCtx(c ctx, idx int) ctx {
	nc := c
	cmd := &a.out.Commands[idx]
	w := a.stringsN(len(cmd.Wrappers) + 1)
	w = append(w, cmd.Wrappers...)
	w = append(w, cmd.Name)
	nc.wrappers = w
	nc.parent = idx
	nc.redirs = cmd.Redirects
	return nc
}

// redirects expands a statement's redirections, reports them, and says
// where they point stdin.
func (a *analyzer) redirects(c ctx, rs []*syntax.Redirect) (out []Redirect, in stdinSrc, hasIn bool) {
	out = a.redirsN(len(rs))
	for _, r := range rs {
		if a.err != nil {
			return out, in, hasIn
		}
		op := r.Op.String()
		rd := Redirect{Op: op, FD: 1}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			rd.FD = 0
		}
		if r.N != nil {
			if n, err := strconv.Atoi(r.N.Value); err == nil {
				rd.FD = n
			} else {
				rd.FD = -1
			}
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			var w Word
			if r.Hdoc != nil {
				if hdocQuoted(r.Word) {
					w = litWord(r.Hdoc.Lit())
					if w.Value == "" && len(r.Hdoc.Parts) > 0 {
						w = litWord(joinLits(r.Hdoc))
					}
				} else {
					w = a.expandWord1(c, r.Hdoc, modeHdoc)
				}
			}
			rd.Target = w
		case syntax.WordHdoc:
			rd.Target = a.expandWord1(c, r.Word, modeAssign)
			if !rd.Target.Dynamic {
				rd.Target.Value += "\n"
				rd.Target.Pattern = escapePattern(rd.Target.Value)
			}
		case syntax.DplIn, syntax.DplOut:
			w := a.expandWord1(c, r.Word, modeSingle)
			if !w.Dynamic && isFDWord(w.Value) {
				w.Value = "&" + w.Value
				w.Pattern = w.Value
			} else if r.Op == syntax.DplOut {
				rd.Write = true // >&file writes file (stdout and stderr)
			}
			rd.Target = w
		default:
			rd.Target = a.expandWord1(c, r.Word, modeSingle)
			switch r.Op {
			case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
				syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
				rd.Write = true
			}
		}
		if rd.FD == 0 {
			switch r.Op {
			case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
				in = stdinSrc{kind: stdinDoc, op: op, doc: rd.Target.Value, known: !rd.Target.Dynamic}
				hasIn = true
			case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
				if rd.Target.Value != "&0" {
					in = stdinSrc{kind: stdinFile}
					if rd.Target.Value == "/dev/null" || rd.Target.Value == "&-" {
						in.kind = stdinNull
					}
					hasIn = true
				}
			}
		}
		out = append(out, rd)
		a.out.Redirects = append(a.out.Redirects, rd)
	}
	return out, in, hasIn
}

func isFDWord(s string) bool {
	if s == "-" {
		return true
	}
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// hdocQuoted reports whether a here-document delimiter is quoted, which makes
// the body literal.
func hdocQuoted(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			if strings.ContainsRune(x.Value, '\\') {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func joinLits(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	return b.String()
}

// call analyses a simple command. c is the statement's context before its
// own redirections (substitutions in the words see that stdin), in the
// context with them.
func (a *analyzer) call(c, in ctx, ce *syntax.CallExpr) {
	type pending struct {
		name  string
		w     Word
		known bool
	}
	var assigns []pending
	for _, as := range ce.Assigns {
		if a.err != nil {
			return
		}
		if as.Name == nil {
			continue
		}
		w, known := a.assignValue(c, as)
		assigns = append(assigns, pending{as.Name.Value, w, known})
	}
	words := a.expandWords(c, ce.Args)
	if a.err != nil {
		return
	}
	if len(words) == 0 {
		// Assignments to shell variables (and redirections only).
		for _, p := range assigns {
			c.env.set(p.name, p.w.Value, p.known)
			a.recordAssign(p.name, p.w, -1)
			a.envString(c, p.name, p.w, -1)
		}
		return
	}
	// Prefix assignments are in effect while the command runs: eval'd
	// strings and functions see them.
	var saved []varVal
	var had []bool
	if len(assigns) > 0 {
		saved = make([]varVal, len(assigns))
		had = make([]bool, len(assigns))
		for i, p := range assigns {
			saved[i], had[i] = c.env.vars[p.name]
			c.env.set(p.name, p.w.Value, p.known)
		}
	}
	a.command(in, words, func(idx int) {
		for _, p := range assigns {
			a.recordAssign(p.name, p.w, idx)
			a.envString(in, p.name, p.w, idx)
		}
	})
	// Restore what the prefix assignments hid, unless the command changed
	// the variable itself.
	for i := len(assigns) - 1; i >= 0; i-- {
		p := assigns[i]
		cur, ok := c.env.vars[p.name]
		if !ok || cur.sticky || cur.known != p.known || cur.s != p.w.Value || c.env.poisoned {
			continue
		}
		if had[i] {
			c.env.vars[p.name] = saved[i]
		} else {
			delete(c.env.vars, p.name)
		}
	}
}
