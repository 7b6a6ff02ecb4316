package policy

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// CEL variable names.
const (
	varTool     = "tool"
	varInput    = "input"
	varPassport = "passport"
	varLimits   = "limits"
	varRequest  = "request"
)

// baseCELEnv is the environment every expression is checked against, built once: a cel.Env is
// immutable and safe for concurrent use, and building one costs far more than compiling a rule.
var baseCELEnv = sync.OnceValues(newCELEnv)

// newCELEnv builds the environment every expression is checked against.
func newCELEnv() (*cel.Env, error) {
	opts := []cel.EnvOption{
		cel.Variable(varTool, cel.StringType),
		cel.Variable(varInput, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varPassport, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varLimits, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varRequest, cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		ext.Strings(),
	}
	env, err := cel.NewEnv(append(opts, guardCELOptions()...)...)
	if err != nil {
		return nil, fmt.Errorf("build CEL environment: %w", err)
	}
	return env, nil
}

// Compile budgets of expressions. Type-checking an expression takes work that grows with the square
// of its typed operations (cel-go copies its type substitutions at each overload resolution) and
// with the size of the types it builds, which nesting can make grow exponentially; both are read
// off the parsed expression and bounded before checking starts:
//
//   - an expression is at most MaxExpressionBytes characters (the CRD's limit), MaxExpressionNodes
//     operations (non-literal nodes, macros expanded) and types of size maxExpressionTypeSize;
//   - its check work is 256 + operations × max(operations, type size²) units (a unit is about 100
//     bytes allocated and 0.1–0.3 µs);
//   - a policy's distinct expressions total at most MaxPolicyExpressionBytes characters and
//     MaxPolicyCheckWork; a bundle's at most MaxBundleExpressionBytes and MaxBundleCheckWork.
//
// Past a budget the remaining expressions are not compiled, so compiling any policy or bundle takes
// bounded time and memory.
const (
	// MaxExpressionBytes bounds one CEL expression.
	MaxExpressionBytes = 4096
	// MaxExpressionNodes bounds the operations of one parsed expression.
	MaxExpressionNodes = 256
	// MaxPolicyExpressionBytes bounds the total length of a policy's distinct CEL expressions.
	MaxPolicyExpressionBytes = 32 << 10
	// MaxPolicyCheckWork bounds the check work of a policy's distinct CEL expressions.
	MaxPolicyCheckWork = 500_000
	// exprFixedWork is the check work of any expression: planning its program costs about as much
	// as checking 256 operations (25 KB and 40 µs).
	exprFixedWork = 256
	// MaxBundleExpressionBytes bounds the total length of a bundle's distinct CEL expressions.
	MaxBundleExpressionBytes = 4 * MaxPolicyExpressionBytes
	// MaxBundleCheckWork bounds the check work of a bundle's distinct CEL expressions.
	MaxBundleCheckWork = 4 * MaxPolicyCheckWork
	// maxExpressionTypeSize bounds the estimated size of the largest type an expression builds.
	maxExpressionTypeSize = 32
	// maxIssues is how many problems of one expression are reported.
	maxIssues = 5
	// interruptEvery is how many comprehension iterations run between deadline checks.
	interruptEvery = 64
	// untrackedCost: a program without comprehensions whose estimated cost is at most this runs
	// without run-time cost tracking (which costs about 1 µs and 3–7 allocations per evaluation):
	// its actual cost reaches MaxExpressionCost only with values four times the declared sizes,
	// which no request within the decider's body limit carries. Costlier programs without
	// comprehensions run under cel.CostLimit(MaxExpressionCost). Programs with comprehensions run
	// under the evaluation deadline instead, checked every interruptEvery iterations: cel-go's cost
	// tracker does work linear in the iterations already run at every step of a loop (20,000
	// iterations of a one-call body take 0.8 s tracked, 5 ms untracked), so a cost limit would stop
	// a long loop later than the deadline does, after doing far more work.
	untrackedCost = MaxExpressionCost / 4
)

// compileBudget counts the distinct expressions of a policy or a bundle against its budgets.
type compileBudget struct {
	what            string // "policy", "bundle"
	bytes, work     int
	maxBytes, maxWk int
	seen            map[celKey]bool
}

func newCompileBudget(what string, maxBytes, maxWork int) *compileBudget {
	return &compileBudget{what: what, maxBytes: maxBytes, maxWk: maxWork, seen: map[celKey]bool{}}
}

// take charges an expression of n characters and work w (once per distinct expression); it returns
// why the budget refuses it, or "".
func (b *compileBudget) take(k celKey, w int) string {
	if b.seen[k] {
		return ""
	}
	b.seen[k] = true
	b.bytes += len(k.expr)
	b.work += w
	switch {
	case b.bytes > b.maxBytes:
		return fmt.Sprintf("the %s's distinct CEL expressions total more than %d characters here (the per-%s budget)", b.what, b.maxBytes, b.what)
	case b.work > b.maxWk:
		return fmt.Sprintf("the %s's distinct CEL expressions need more than %d units of type-checking work here (the per-%s budget; an expression of n operations needs n², more when it nests lists and maps deeply)", b.what, b.maxWk, b.what)
	}
	return ""
}

// celCompiler compiles expressions against one environment, reusing programs for identical text.
// It holds the bundle's compile budgets.
type celCompiler struct {
	env    *cel.Env
	cache  map[celKey]celResult
	bundle *compileBudget
	// patternInsts counts the RE2 programs of the bundle's input patterns (MaxBundlePatternInsts).
	patternInsts int
}

type celKey struct {
	expr     string
	wantBool bool
}

type celResult struct {
	prg  *celProgram
	msg  string
	work int
}

// celProgram is a compiled expression. Its estimated cost is at most MaxExpressionCost; at run time
// a program with comprehensions (the only loops) is interrupted at the evaluation deadline, and one
// without that may cost more than untrackedCost runs under cel.CostLimit(MaxExpressionCost).
type celProgram struct {
	prg     cel.Program
	cost    uint64 // estimated maximum cost against the declared sizes
	loops   bool
	tracked bool // runs under cel.CostTracking and cel.CostLimit
	// shared: more than one place of the snapshot evaluates this expression (the compiler's cache
	// gave it out again), so a decision keeps its result for the next place (celRun.memo).
	shared bool
}

func newCELCompiler() (*celCompiler, error) {
	env, err := baseCELEnv()
	if err != nil {
		return nil, err
	}
	return &celCompiler{env: env, cache: map[celKey]celResult{},
		bundle: newCompileBudget("bundle", MaxBundleExpressionBytes, MaxBundleCheckWork)}, nil
}

// compile checks expr, charging it to the policy's budget pol and the bundle's; wantBool requires a
// bool (or dyn, checked at runtime) result. On failure the returned message describes the problem;
// over a budget, spent is true.
func (c *celCompiler) compile(expr string, wantBool bool, pol *compileBudget) (prg *celProgram, msg string, spent bool) {
	k := celKey{expr, wantBool}
	if r, ok := c.cache[k]; ok {
		if why := pol.take(k, r.work); why != "" {
			return nil, why, true
		}
		if r.prg != nil {
			r.prg.shared = true
		}
		return r.prg, r.msg, false
	}
	parsed, work, msg := c.parse(expr)
	if msg != "" {
		// Parsing is work too (an error costs as much as a success).
		if why := pol.take(k, exprFixedWork); why != "" {
			return nil, why, true
		}
		if why := c.bundle.take(k, exprFixedWork); why != "" {
			return nil, why + ": split the namespace's policies or simplify them", true
		}
		c.cache[k] = celResult{msg: msg, work: exprFixedWork}
		return nil, msg, false
	}
	if why := pol.take(k, work); why != "" {
		return nil, why, true
	}
	if why := c.bundle.take(k, work); why != "" {
		return nil, why + ": split the namespace's policies or simplify them", true
	}
	prg, msg = c.check(parsed, wantBool)
	c.cache[k] = celResult{prg: prg, msg: msg, work: work}
	return prg, msg, false
}

// compileUncached compiles expr outside any budget (tests).
func (c *celCompiler) compileUncached(expr string, wantBool bool) (*celProgram, string) {
	parsed, _, msg := c.parse(expr)
	if msg != "" {
		return nil, msg
	}
	return c.check(parsed, wantBool)
}

// parse parses expr and measures its check work, refusing what is too large to check.
func (c *celCompiler) parse(expr string) (*cel.Ast, int, string) {
	if strings.TrimSpace(expr) == "" {
		return nil, 0, "expression is empty"
	}
	if len(expr) > MaxExpressionBytes {
		return nil, 0, fmt.Sprintf("must be at most %d characters", MaxExpressionBytes)
	}
	parsed, iss := c.env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return nil, 0, celIssues(iss)
	}
	work, msg := checkShape(parsed.NativeRep().Expr())
	if msg != "" {
		return nil, 0, msg
	}
	return parsed, work, ""
}

// check type-checks a parsed expression, estimates its cost and plans its program.
func (c *celCompiler) check(parsed *cel.Ast, wantBool bool) (*celProgram, string) {
	checked, iss := c.env.Check(parsed)
	if iss != nil && iss.Err() != nil {
		return nil, celIssues(iss)
	}
	if wantBool {
		out := checked.OutputType()
		if !out.IsExactType(types.BoolType) && !out.IsExactType(types.DynType) {
			return nil, fmt.Sprintf("expression must evaluate to bool, not %s", out)
		}
	}
	est, err := c.env.EstimateCost(checked, newCostEstimator(checked.NativeRep()))
	if err != nil {
		return nil, "estimate cost: " + err.Error()
	}
	if est.Max > MaxExpressionCost {
		return nil, fmt.Sprintf("estimated cost %s exceeds the budget %s (assuming request strings and lists of up to %d bytes)",
			formatCost(est.Max), formatCost(MaxExpressionCost), DeclaredRequestBytes)
	}
	loops := hasComprehension(checked)
	tracked := !loops && est.Max > untrackedCost
	popts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	switch {
	case loops:
		popts = append(popts, cel.InterruptCheckFrequency(interruptEvery))
	case tracked:
		popts = append(popts, cel.CostTracking(runtimeCost), cel.CostLimit(MaxExpressionCost))
	}
	prg, err := c.env.Program(checked, popts...)
	if err != nil {
		return nil, celIssueMessage(err.Error())
	}
	return &celProgram{prg: prg, cost: est.Max, loops: loops, tracked: tracked}, ""
}

// celIssues lists the first problems of a CEL issue report on one line: "msg (at 1:5); …".
func celIssues(iss *cel.Issues) string {
	errs := iss.Errors()
	msgs := make([]string, 0, min(len(errs), maxIssues+1))
	for i, e := range errs {
		if i == maxIssues {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(errs)-maxIssues))
			break
		}
		msg := strings.ReplaceAll(e.Message, " (in container '')", "")
		if loc := e.Location; loc != nil {
			msg += fmt.Sprintf(" (at %d:%d)", loc.Line(), loc.Column()+1)
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return celIssueMessage(iss.Err().Error())
	}
	return strings.Join(msgs, "; ")
}

// celIssueMessage flattens a CEL issue report to one line: "ERROR: <input>:1:1: msg\n | src\n | ^"
// becomes "msg (1:1)".
func celIssueMessage(s string) string {
	var msgs []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "ERROR: ") {
			continue
		}
		line = strings.TrimPrefix(line, "ERROR: <input>:")
		line = strings.ReplaceAll(line, " (in container '')", "")
		// line is now "L:C: message"
		pos := ""
		if i := strings.Index(line, ": "); i > 0 {
			pos, line = line[:i], line[i+2:]
		}
		if pos != "" {
			line += " (at " + pos + ")"
		}
		msgs = append(msgs, line)
		if len(msgs) == maxIssues {
			break
		}
	}
	if len(msgs) == 0 {
		return strings.TrimSpace(s)
	}
	return strings.Join(msgs, "; ")
}

// hasComprehension reports whether a checked expression contains a comprehension (all, exists,
// exists_one, map, filter, …), the only looping construct of CEL.
func hasComprehension(a *cel.Ast) bool {
	found := false
	ast.PreOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.ComprehensionKind {
			found = true
		}
	}))
	return found
}

// checkShape measures the type-checking work of a parsed expression from its operations
// (non-literal nodes) and the size of the largest type it can build (nested lists and maps,
// comprehensions over them), refusing an expression too large to check.
func checkShape(e ast.Expr) (int, string) {
	w := shapeWalker{scopes: map[string][]int{}}
	ts := w.typeSize(e)
	switch {
	case w.nodes > MaxExpressionNodes:
		return 0, fmt.Sprintf("expression has %d operations, more than %d: split it", w.nodes, MaxExpressionNodes)
	case ts > maxExpressionTypeSize:
		return 0, fmt.Sprintf("expression nests lists, maps and comprehensions too deeply (type size %d, more than %d)", ts, maxExpressionTypeSize)
	}
	return exprFixedWork + w.nodes*max(w.nodes, ts*ts), ""
}

type shapeWalker struct {
	scopes map[string][]int
	nodes  int
}

// typeSize is an upper bound of the size of the type of e: a list adds one to its elements', a map
// the sizes of its keys and values, a comprehension's variables have the size of its range; other
// calls produce either a declared type (at most 4: list(map(string, dyn))) or one of their
// arguments' types.
func (w *shapeWalker) typeSize(e ast.Expr) int {
	if e.Kind() != ast.LiteralKind {
		w.nodes++
	}
	switch e.Kind() {
	case ast.IdentKind:
		if st := w.scopes[e.AsIdent()]; len(st) > 0 {
			return st[len(st)-1]
		}
		return 3 // map(string, dyn)
	case ast.SelectKind:
		return w.typeSize(e.AsSelect().Operand())
	case ast.CallKind:
		call := e.AsCall()
		n := 4
		if call.IsMemberFunction() {
			n = max(n, w.typeSize(call.Target()))
		}
		for _, a := range call.Args() {
			n = max(n, w.typeSize(a))
		}
		return n
	case ast.ListKind:
		n := 1
		for _, x := range e.AsList().Elements() {
			n = max(n, w.typeSize(x))
		}
		return n + 1
	case ast.MapKind:
		k, v := 1, 1
		for _, ent := range e.AsMap().Entries() {
			me := ent.AsMapEntry()
			k = max(k, w.typeSize(me.Key()))
			v = max(v, w.typeSize(me.Value()))
		}
		return 1 + k + v
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.typeSize(f.AsStructField().Value())
		}
		return 1
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		rng := w.typeSize(c.IterRange())
		init := w.typeSize(c.AccuInit())
		w.scopes[c.AccuVar()] = append(w.scopes[c.AccuVar()], init)
		w.scopes[c.IterVar()] = append(w.scopes[c.IterVar()], rng)
		if c.HasIterVar2() {
			w.scopes[c.IterVar2()] = append(w.scopes[c.IterVar2()], rng)
		}
		n := max(rng, init, w.typeSize(c.LoopCondition()), w.typeSize(c.LoopStep()))
		if c.HasIterVar2() {
			w.scopes[c.IterVar2()] = w.scopes[c.IterVar2()][:len(w.scopes[c.IterVar2()])-1]
		}
		w.scopes[c.IterVar()] = w.scopes[c.IterVar()][:len(w.scopes[c.IterVar()])-1]
		n = max(n, w.typeSize(c.Result()))
		w.scopes[c.AccuVar()] = w.scopes[c.AccuVar()][:len(w.scopes[c.AccuVar()])-1]
		return n
	}
	return 1
}

// isConstBool reports whether expr parses to the literal want. Only short texts can be a literal
// (with parentheses, spaces and a comment): longer ones are not parsed.
func isConstBool(env *cel.Env, expr string, want bool) bool {
	if len(expr) > 256 {
		return false
	}
	parsed, iss := env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return false
	}
	e := parsed.NativeRep().Expr()
	if e.Kind() != ast.LiteralKind {
		return false
	}
	return e.AsLiteral() == types.Bool(want)
}

// activation resolves the CEL variables of one evaluation lazily.
type activation struct {
	tool     string
	toolVal  ref.Val
	input    map[string]any
	inputCEL map[string]any // input with scalars pre-converted, built on first use
	passport *cPassport
	limits   map[string]any
	call     *lazyMap // the call variable, built on first use
	// guardScript is the guard's analysis of guardInput's command, reused by call.commands.
	guardScript commandAnalysis
	guardInput  map[string]any
	req         Request
	reqVal      map[string]any
	now         time.Time
}

// setInput changes the input seen by later evaluations.
func (a *activation) setInput(m map[string]any) {
	a.input = m
	a.inputCEL = nil
	a.call = nil
}

// celScalars returns a copy of m whose top-level strings, numbers and booleans are already CEL
// values, so expressions reading the same field in many rules do not convert it each time.
func celScalars(m map[string]any) map[string]any {
	if len(m) == 0 {
		return emptyMap
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch t := v.(type) {
		case string:
			out[k] = types.String(t)
		case float64:
			out[k] = types.Double(t)
		case bool:
			out[k] = types.Bool(t)
		case int:
			out[k] = types.Int(t)
		case int64:
			out[k] = types.Int(t)
		default:
			out[k] = v
		}
	}
	return out
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varTool:
		if a.toolVal == nil {
			a.toolVal = types.String(a.tool)
		}
		return a.toolVal, true
	case varInput:
		if a.inputCEL == nil {
			a.inputCEL = celScalars(a.input)
		}
		return a.inputCEL, true
	case varPassport:
		return a.passport.celValue(), true
	case varLimits:
		if a.limits == nil {
			return emptyMap, true
		}
		return a.limits, true
	case varCall:
		if a.call == nil {
			var analysis commandAnalysis
			if a.guardScript.script != nil && sameMap(a.input, a.guardInput) {
				analysis = a.guardScript
			}
			a.call = &lazyMap{fields: &callVal{input: a.input, analysis: analysis}}
		}
		return a.call, true
	case varRequest:
		if a.reqVal == nil {
			a.reqVal = requestValue(&a.req, a.tool)
		}
		return a.reqVal, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// emptyMap is the value of absent maps; it is never mutated.
var emptyMap = map[string]any{}

func requestValue(r *Request, tool string) map[string]any {
	hook := r.Hook
	if hook == "" {
		hook = HookPreToolCall
	}
	m := map[string]any{
		"tool_name":   types.String(tool),
		"thread_id":   types.String(r.ThreadID),
		"call_id":     types.String(r.CallID),
		"is_subagent": types.Bool(r.IsSubagent),
		"hook":        types.String(hook),
		"agent_id":    types.String(r.AgentID),
		"passport":    types.String(r.Passport),
	}
	if !r.Timestamp.IsZero() {
		m["timestamp"] = r.Timestamp
	}
	return m
}

// deadlineCheckCost is the estimated cost evaluated between two looks at the clock: expressions
// cheaper than that together are not worth one.
const deadlineCheckCost = 100_000

// celRun evaluates the expressions of one decision under its deadline: the clock starts at the
// first evaluation; before an expression is evaluated the deadline is checked if the expressions
// evaluated since the last check (this one included) may cost deadlineCheckCost, and comprehensions
// (the only loops) are interrupted when it passes. A single call cannot be interrupted; its cost is
// bounded by MaxExpressionCost.
type celRun struct {
	parent    context.Context
	limit     time.Duration
	deadline  time.Time // zero until the first evaluation
	unchecked uint64
	ctx       context.Context // parent with the deadline, built for the first comprehension
	cancel    context.CancelFunc
	// plain is the execution frame shared by the plain programs (no loops, no cost tracking:
	// nothing of theirs lives in a frame), so that each evaluation does not take one from cel-go's
	// pool and give it back; loops is the one shared by the programs with comprehensions, bound to
	// ctx (their interrupt checks read it), so that the context is derived once per decision.
	plain, loops sharedFrame
	// memo keeps the results of shared programs (celProgram.shared) for the decision's input: every
	// CEL function is pure and the other variables do not change within a decision, so a second
	// place evaluating the same expression (a cluster policy and a namespace policy with the same
	// rule) gets the first result. forget clears it when the input changes.
	memo  [celMemoSlots]celMemo
	nmemo int
}

// sharedFrame is a cel-go execution frame for one activation, reused across evaluations.
type sharedFrame struct {
	f   *interpreter.ExecutionFrame
	act *activation
}

// get returns the frame of act.
func (sf *sharedFrame) get(act *activation) (*interpreter.ExecutionFrame, error) {
	return sf.frame(act, nil)
}

// getBound returns the frame of act bound to ctx (comprehensions check it every interruptEvery
// iterations).
func (sf *sharedFrame) getBound(act *activation, ctx context.Context) (*interpreter.ExecutionFrame, error) {
	return sf.frame(act, func(f *interpreter.ExecutionFrame) error { return f.SetContext(ctx, interruptEvery) })
}

func (sf *sharedFrame) frame(act *activation, bind func(*interpreter.ExecutionFrame) error) (*interpreter.ExecutionFrame, error) {
	if sf.f != nil && sf.act == act {
		return sf.f, nil
	}
	sf.release()
	f, err := interpreter.NewExecutionFrame(act)
	if err != nil {
		return nil, fmt.Errorf("execution frame: %w", err)
	}
	if bind != nil {
		if err := bind(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("execution frame: %w", err)
		}
	}
	sf.f, sf.act = f, act
	return f, nil
}

// release gives the frame back to cel-go.
func (sf *sharedFrame) release() {
	if sf.f != nil {
		sf.f.Close()
		sf.f, sf.act = nil, nil
	}
}

// celMemoSlots bounds the results a decision keeps.
const celMemoSlots = 16

// celMemo is one kept result.
type celMemo struct {
	p   *celProgram
	out ref.Val
	err error
}

// forget drops the kept results (the input changed).
func (r *celRun) forget() {
	clear(r.memo[:r.nmemo])
	r.nmemo = 0
}

func (r *celRun) eval(p *celProgram, act *activation) (ref.Val, error) {
	if !p.shared {
		return r.evalProgram(p, act)
	}
	for i := range r.memo[:r.nmemo] {
		if m := &r.memo[i]; m.p == p {
			return m.out, m.err
		}
	}
	out, err := r.evalProgram(p, act)
	if r.nmemo < celMemoSlots {
		r.memo[r.nmemo] = celMemo{p: p, out: out, err: err}
		r.nmemo++
	}
	return out, err
}

// evalProgram evaluates p (see celRun).
func (r *celRun) evalProgram(p *celProgram, act *activation) (ref.Val, error) {
	r.unchecked = addSat(r.unchecked, p.cost)
	switch {
	case r.deadline.IsZero():
		r.deadline = time.Now().Add(r.limit)
		r.unchecked = p.cost
	case p.loops || r.unchecked >= deadlineCheckCost:
		r.unchecked = 0
		if !time.Now().Before(r.deadline) {
			return nil, fmt.Errorf("evaluation deadline of %s exceeded", r.limit)
		}
	}
	if !p.loops && !p.tracked {
		f, err := r.plain.get(act)
		if err != nil {
			return nil, err
		}
		out, _, err := p.prg.Eval(f)
		return out, err
	}
	if !p.loops {
		out, _, err := p.prg.Eval(act)
		return out, err
	}
	if r.ctx == nil {
		parent := r.parent
		if parent == nil {
			parent = context.Background()
		}
		r.loops.release()
		r.ctx, r.cancel = context.WithDeadline(parent, r.deadline)
	}
	f, err := r.loops.getBound(act, r.ctx)
	if err != nil {
		return nil, err
	}
	// As cel.Program.ContextEval does with a frame of its own.
	out, _, err := p.prg.Eval(f)
	if err != nil && errors.Is(err, interpreter.InterruptError{}) {
		return out, fmt.Errorf("%w: %w", err, context.Cause(r.ctx))
	}
	return out, err
}

// evalBool evaluates a bool program.
func (r *celRun) evalBool(p *celProgram, act *activation) (bool, error) {
	out, err := r.eval(p, act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("expression returned %s, want bool", out.Type().TypeName())
	}
	return bool(b), nil
}

// extend moves the deadline by d (time spent outside CEL, in an external evaluator).
func (r *celRun) extend(d time.Duration) {
	if r.deadline.IsZero() {
		return
	}
	r.deadline = r.deadline.Add(d)
	if r.cancel != nil {
		r.loops.release() // bound to the context about to be cancelled
		r.cancel()
		r.ctx, r.cancel = nil, nil
	}
}

// close releases the deadline context and the execution frames.
func (r *celRun) close() {
	r.loops.release()
	if r.cancel != nil {
		r.cancel()
	}
	r.plain.release()
}

// celToNative converts a CEL value to plain JSON-compatible Go values.
func celToNative(v ref.Val) (any, error) {
	switch t := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(t), nil
	case types.Int:
		return int64(t), nil
	case types.Uint:
		return uint64(t), nil
	case types.Double:
		if math.IsNaN(float64(t)) || math.IsInf(float64(t), 0) {
			return nil, fmt.Errorf("%v cannot be represented in JSON", float64(t))
		}
		return float64(t), nil
	case types.String:
		return string(t), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString([]byte(t)), nil
	case types.Timestamp:
		return t.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return t.String(), nil
	}
	if types.IsError(v) {
		return nil, fmt.Errorf("evaluation error: %v", v)
	}
	switch t := v.(type) {
	case traits.Mapper:
		out := map[string]any{}
		it := t.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is not a string", k)
			}
			val, err := celToNative(t.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(ks)] = val
		}
		return out, nil
	case traits.Lister:
		out := []any{}
		it := t.Iterator()
		for it.HasNext() == types.True {
			val, err := celToNative(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value type %s", v.Type().TypeName())
}
