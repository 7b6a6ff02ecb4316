package policy

import (
	"math"
	"regexp/syntax"
	"strconv"
	"strings"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/tollgate-dev/tollgate/internal/policy/hosts"
	"github.com/tollgate-dev/tollgate/internal/policy/paths"
	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// CEL cost budgets. Costs are in CEL's units (as Kubernetes estimates CRD validation rules: about 0.1
// per byte of a string scan, 1 per simple operation; roughly 50–100 ns each on current hardware).
const (
	// MaxExpressionCost bounds the estimated cost of one expression (admission) and its actual cost
	// at run time (cel.CostLimit on every program): the value of Kubernetes' per-expression limit.
	MaxExpressionCost = 10_000_000
	// MaxPolicyCost bounds the sum of the estimated costs of a policy's expressions.
	MaxPolicyCost = 100_000_000
)

// Declared sizes: what the cost estimates assume of the values expressions read. They are upper
// bounds of what a decision can carry, not limits the engine enforces on requests: a larger value
// (a decider run with a larger --max-body-bytes, a bundle built outside the API server) is still
// bounded at run time by MaxExpressionCost and the evaluation deadline.
const (
	// DeclaredRequestBytes bounds every string and the entry count of every list and map read from a
	// request (tool, input, call, request): the decider's default request body limit (1 MiB).
	DeclaredRequestBytes = 1 << 20
	// DeclaredObjectBytes bounds the free-form parts of a passport (capability params, limits): the
	// API server's largest object (1.5 MiB, etcd's default request limit).
	DeclaredObjectBytes = 3 << 19
)

// sizeSchema declares the size of a value and of what it contains: string length (in code points)
// or entry count (lists, maps) in max; fields of a map with known keys; elem for list items, map
// values and any unnamed field; keys for map keys. A nil *sizeSchema is unknown.
type sizeSchema struct {
	max    uint64
	fields map[string]*sizeSchema
	elem   *sizeSchema
	keys   *sizeSchema
}

// field returns the schema of s.name (or s["name"]).
func (s *sizeSchema) field(name string) *sizeSchema {
	if s == nil {
		return nil
	}
	if f, ok := s.fields[name]; ok {
		return f
	}
	return s.elem
}

// item returns the schema of an element reached by a non-constant index.
func (s *sizeSchema) item() *sizeSchema {
	if s == nil {
		return nil
	}
	if s.elem == nil && len(s.fields) > 0 {
		// A record: any of its fields.
		u := &sizeSchema{}
		for _, f := range s.fields {
			u = u.union(f)
		}
		return u
	}
	return s.elem
}

// iter returns the schema of a comprehension's single variable over s: list items or map keys; a
// dyn range may be either.
func (s *sizeSchema) iter(kind types.Kind) *sizeSchema {
	if s == nil {
		return nil
	}
	switch kind {
	case types.ListKind:
		return s.item()
	case types.MapKind:
		return s.keyOrField()
	}
	// dyn: a schema without keys or fields is not a map; without items, not a list.
	it, k := s.item(), s.keyOrField()
	switch {
	case k == nil:
		return it
	case it == nil:
		return k
	}
	return it.union(k)
}

func (s *sizeSchema) keyOrField() *sizeSchema {
	if s.keys != nil {
		return s.keys
	}
	if len(s.fields) > 0 {
		longest := 0
		for k := range s.fields {
			longest = max(longest, len(k))
		}
		return &sizeSchema{max: uint64(longest)}
	}
	return nil
}

// union is a schema covering both a and b (nil when either is unknown, or too deep to compare).
func (a *sizeSchema) union(b *sizeSchema) *sizeSchema { return a.unionDepth(b, 0) }

func (a *sizeSchema) unionDepth(b *sizeSchema, depth int) *sizeSchema {
	if a == nil || b == nil || depth > 8 {
		return nil
	}
	if a == b {
		return a
	}
	u := &sizeSchema{max: max(a.max, b.max)}
	u.elem = unionPart(a.elem, b.elem, depth)
	u.keys = unionPart(a.keys, b.keys, depth)
	if len(a.fields)+len(b.fields) > 0 {
		u.fields = make(map[string]*sizeSchema, len(a.fields)+len(b.fields))
		for k, f := range a.fields {
			u.fields[k] = f
		}
		for k, f := range b.fields {
			if g, ok := u.fields[k]; ok {
				u.fields[k] = g.unionDepth(f, depth+1)
			} else {
				u.fields[k] = f
			}
		}
	}
	return u
}

// unionPart is the union of a part (elements, keys) that one of two schemas may lack: a string has
// no elements, so the union's elements are the other's.
func unionPart(a, b *sizeSchema, depth int) *sizeSchema {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return a.unionDepth(b, depth+1)
}

// jsonSchema is free-form JSON of at most n bytes: every string, list and map in it is at most n.
func jsonSchema(n uint64) *sizeSchema {
	s := &sizeSchema{max: n, keys: &sizeSchema{max: n}}
	s.elem = s
	return s
}

func fixed(n uint64) *sizeSchema { return &sizeSchema{max: n} }

func recordSchema(fields map[string]*sizeSchema) *sizeSchema {
	return &sizeSchema{max: uint64(len(fields)), fields: fields}
}

// The declared sizes of the variables and of shell.commands(), built once (immutable).
var (
	requestJSON = jsonSchema(DeclaredRequestBytes)
	objectJSON  = jsonSchema(DeclaredObjectBytes)

	// shellWordList is a list of words of one analysed command.
	shellWordList = &sizeSchema{max: shell.DefaultMaxWords, elem: fixed(shell.DefaultMaxBytes)}

	// shellCommandsResult is the value of shell.commands(s): at most MaxCommands commands whose word
	// lists hold at most MaxWords words (flags: a word's single-letter flags are split, sorted and
	// deduplicated, so at most MaxWords + 256) of at most MaxBytes each.
	shellCommandsResult = &sizeSchema{max: shell.DefaultMaxCommands, elem: recordSchema(map[string]*sizeSchema{
		celKeyName:    fixed(shell.DefaultMaxBytes),
		"program":     fixed(shell.DefaultMaxBytes),
		"dynamic":     fixed(1),
		"args":        shellWordList,
		"flags":       {max: shell.DefaultMaxWords + 256, elem: fixed(shell.DefaultMaxBytes)},
		"positionals": shellWordList,
		"redirects": {max: shell.DefaultMaxWords, elem: recordSchema(map[string]*sizeSchema{
			"op": fixed(3), "target": fixed(shell.DefaultMaxBytes), "write": fixed(1)})},
		"wrappers": {max: shell.DefaultMaxCommands, elem: fixed(shell.DefaultMaxBytes)},
		"via":      fixed(shell.DefaultMaxBytes),
		"code":     fixed(32),
	})}

	// celRoots are the declared sizes of the CEL variables.
	celRoots = map[string]*sizeSchema{
		varTool:  fixed(DeclaredRequestBytes),
		varInput: requestJSON,
		varCall: recordSchema(map[string]*sizeSchema{
			"paths":    {max: MaxCallPaths, elem: fixed(paths.MaxPathLen)},
			"urls":     {max: MaxCallURLs, elem: fixed(hosts.MaxURLLen)},
			"command":  fixed(DeclaredRequestBytes),
			"commands": shellCommandsResult,
		}),
		varRequest: recordSchema(map[string]*sizeSchema{
			"tool_name":   fixed(DeclaredRequestBytes),
			"thread_id":   fixed(DeclaredRequestBytes),
			"call_id":     fixed(DeclaredRequestBytes),
			"is_subagent": fixed(1),
			"hook":        fixed(16),
			"agent_id":    fixed(DeclaredRequestBytes),
			"passport":    fixed(DeclaredRequestBytes),
			"timestamp":   fixed(1),
		}),
		// The passport as the CRD bounds it (names 253, agent ids 128, 64 capabilities, 32
		// regions, 64 service accounts; labels as Kubernetes bounds them); params and limits are
		// free-form.
		varPassport: recordSchema(map[string]*sizeSchema{
			"name":            fixed(253),
			"namespace":       fixed(63),
			"labels":          {max: 256 << 10, keys: fixed(317), elem: fixed(63)},
			"agentID":         fixed(253),
			"owner":           recordSchema(map[string]*sizeSchema{"id": fixed(253), "type": fixed(16)}),
			"assuranceLevel":  fixed(8),
			"status":          fixed(16),
			"capabilities":    {max: 64, keys: fixed(128), elem: objectJSON},
			"limits":          {max: 64, keys: fixed(128), elem: objectJSON},
			"regions":         {max: 32, elem: fixed(64)},
			"serviceAccounts": {max: 64, elem: fixed(253)},
			"expiresAt":       fixed(1),
		}),
		varLimits: objectJSON,
	}
)

// Costs of the guard's functions (CEL units). shell.commands does bounded work per call whatever its
// length (brace expansion is bounded by MaxWords, nested strings by MaxDepth) plus work linear in the
// string with a large factor; the path functions parse at most MaxPathLen bytes.
const (
	shellCallCost  = 100_000 // analysis work independent of length (expansion, nesting)
	shellByteCost  = 1.0     // per byte of the analysed string (a traversal is 0.1)
	pathByteCost   = 1.0     // per byte of a path or path pattern
	regexInstCost  = common.RegexStringLengthCostFactor
	maxRegexTextIn = 1 << 16 // constant regexes longer than this are not analysed (CEL bounds them anyway)
)

// costEstimator estimates the cost of one checked expression against the declared sizes: the
// string extensions estimate themselves (cel-go's model charges replace, split and join for what
// they build); the Kubernetes library's estimator prices url(), ip() and cidr(); this one prices the
// guard's functions, the URL accessors' results and matches() by its RE2 program. It also reports
// actual call costs at run time (the same formulas on actual sizes), so the runtime CostLimit and
// the estimate agree.
type costEstimator struct {
	lib   library.CostEstimator
	sizes map[int64]*sizeSchema // declared size of expressions, by id (estimation only)
}

// newCostEstimator returns an estimator for the checked AST a (nil for run-time use).
func newCostEstimator(a *ast.AST) *costEstimator {
	e := &costEstimator{}
	e.lib.SizeEstimator = e
	if a != nil {
		e.sizes = declaredSizes(a)
	}
	return e
}

// runtimeCost is the estimator shared by every program for actual call costs.
var runtimeCost = newCostEstimator(nil)

// EstimateSize implements checker.CostEstimator.
func (e *costEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	var s *sizeSchema
	if x := n.Expr(); x != nil {
		s = e.sizes[x.ID()]
	} else {
		s = schemaAt(n.Path())
	}
	if s == nil {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: s.max}
}

// schemaAt walks a CEL field path (variable, then field names, @items, @values, @keys).
func schemaAt(path []string) *sizeSchema {
	if len(path) == 0 {
		return nil
	}
	s := celRoots[path[0]]
	for _, p := range path[1:] {
		if s == nil {
			return nil
		}
		switch p {
		case "@items", "@values":
			s = s.item()
		case "@keys":
			s = s.keyOrField()
		case "@indices":
			return fixed(1)
		default:
			s = s.field(p)
		}
	}
	return s
}

func (e *costEstimator) size(n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := e.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

// EstimateCallCost implements checker.CostEstimator.
func (e *costEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	switch function {
	case "shell.commands":
		if len(args) == 1 {
			sz := e.size(args[0])
			return &checker.CallEstimate{
				CostEstimate: checker.CostEstimate{Min: 1, Max: shellCost(sz.Max)},
				ResultSize:   &checker.SizeEstimate{Min: 0, Max: shell.DefaultMaxCommands},
			}
		}
	case "path.canonical", "path.sensitiveRead", "path.sensitiveWrite", "path.matches":
		var n uint64
		for _, a := range args {
			n = addSat(n, min(e.size(a).Max, paths.MaxPathLen))
		}
		est := &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: pathCost(n)}}
		if function == "path.canonical" {
			est.ResultSize = &checker.SizeEstimate{Min: 0, Max: paths.MaxPathLen}
		}
		return est
	case "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		// url accessors: nominal cost (the library's), and a part of the URL.
		if target != nil {
			sz := e.size(*target)
			return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}, ResultSize: &sz}
		}
	case overloads.Matches:
		var str, re checker.AstNode
		switch {
		case target != nil && len(args) == 1:
			str, re = *target, args[0]
		case target == nil && len(args) == 2:
			str, re = args[0], args[1]
		}
		if str != nil {
			if insts, ok := constRegexInsts(re); ok {
				// RE2 runs in time linear in the text times the program size.
				strCost := e.size(str).Add(checker.SizeEstimate{Min: 1, Max: 1}).MultiplyByCostFactor(common.StringTraversalCostFactor)
				return &checker.CallEstimate{CostEstimate: strCost.Multiply(checker.CostEstimate{Min: 1, Max: uint64(math.Ceil(float64(insts) * regexInstCost))})}
			}
		}
	}
	return e.lib.EstimateCallCost(function, overloadID, target, args)
}

// CallCost implements interpreter.ActualCostEstimator: the cost of a call at run time.
func (e *costEstimator) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	var c uint64
	switch function {
	case "shell.commands":
		c = shellCost(actualSize(args...))
	case "path.canonical", "path.sensitiveRead", "path.sensitiveWrite", "path.matches":
		var n uint64
		for _, a := range args {
			n = addSat(n, min(actualSize(a), paths.MaxPathLen))
		}
		c = pathCost(n)
	default:
		return e.lib.CallCost(function, overloadID, args, result)
	}
	return &c
}

func shellCost(n uint64) uint64 {
	return addSat(shellCallCost, uint64(math.Ceil(float64(min(n, shell.DefaultMaxBytes))*shellByteCost)))
}

func pathCost(n uint64) uint64 { return 1 + uint64(math.Ceil(float64(n)*pathByteCost)) }

// actualSize is the size of the first argument (strings: code points are bounded by bytes, which is
// what the work depends on).
func actualSize(args ...ref.Val) uint64 {
	if len(args) == 0 {
		return 0
	}
	switch v := args[0].(type) {
	case types.String:
		return uint64(len(v))
	case traits.Sizer:
		if n, ok := v.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 1
}

// constRegexInsts returns the RE2 program size of a constant regex argument.
func constRegexInsts(n checker.AstNode) (int, bool) {
	x := n.Expr()
	if x == nil || x.Kind() != ast.LiteralKind {
		return 0, false
	}
	s, ok := x.AsLiteral().(types.String)
	if !ok || len(s) > maxRegexTextIn {
		return 0, false
	}
	insts, err := regexInsts(string(s), syntax.Perl)
	if err != nil {
		return 0, false
	}
	return insts, true
}

// regexInsts is the size of the RE2 program of pattern.
func regexInsts(pattern string, flags syntax.Flags) (int, error) {
	re, err := syntax.Parse(pattern, flags)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	return len(prog.Inst), nil
}

func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// declaredSizes finds the declared size of every expression of a that reads a variable (through
// fields, indexes and comprehension variables) or shell.commands(): the schema of the value it
// yields. Expressions computed otherwise are left to CEL's own size tracking.
func declaredSizes(a *ast.AST) map[int64]*sizeSchema {
	d := &sizer{a: a, of: map[int64]*sizeSchema{}, scopes: map[string][]*sizeSchema{}}
	d.visit(a.Expr())
	return d.of
}

type sizer struct {
	a      *ast.AST
	of     map[int64]*sizeSchema
	scopes map[string][]*sizeSchema
}

func (d *sizer) push(name string, s *sizeSchema) { d.scopes[name] = append(d.scopes[name], s) }
func (d *sizer) pop(name string)                 { d.scopes[name] = d.scopes[name][:len(d.scopes[name])-1] }

func (d *sizer) visit(e ast.Expr) *sizeSchema {
	var s *sizeSchema
	switch e.Kind() {
	case ast.IdentKind:
		name := e.AsIdent()
		if st := d.scopes[name]; len(st) > 0 {
			s = st[len(st)-1]
		} else {
			s = celRoots[name]
		}
	case ast.SelectKind:
		sel := e.AsSelect()
		op := d.visit(sel.Operand())
		if !sel.IsTestOnly() {
			s = op.field(sel.FieldName())
		}
	case ast.CallKind:
		s = d.visitCall(e)
	case ast.ListKind:
		for _, x := range e.AsList().Elements() {
			d.visit(x)
		}
	case ast.MapKind:
		for _, ent := range e.AsMap().Entries() {
			me := ent.AsMapEntry()
			d.visit(me.Key())
			d.visit(me.Value())
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			d.visit(f.AsStructField().Value())
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		rng := d.visit(c.IterRange())
		d.visit(c.AccuInit())
		d.push(c.AccuVar(), nil)
		kind := d.a.GetType(c.IterRange().ID()).Kind()
		if c.HasIterVar2() {
			if kind == types.ListKind {
				d.push(c.IterVar(), fixed(1))
			} else {
				d.push(c.IterVar(), rng.keyOrFieldSafe())
			}
			d.push(c.IterVar2(), rng.item())
		} else {
			d.push(c.IterVar(), rng.iter(kind))
		}
		d.visit(c.LoopCondition())
		d.visit(c.LoopStep())
		if c.HasIterVar2() {
			d.pop(c.IterVar2())
		}
		d.pop(c.IterVar())
		d.visit(c.Result())
		d.pop(c.AccuVar())
	}
	if s != nil {
		d.of[e.ID()] = s
	}
	return s
}

func (s *sizeSchema) keyOrFieldSafe() *sizeSchema {
	if s == nil {
		return nil
	}
	return s.keyOrField()
}

func (d *sizer) visitCall(e ast.Expr) *sizeSchema {
	call := e.AsCall()
	if call.IsMemberFunction() {
		d.visit(call.Target())
	}
	args := call.Args()
	as := make([]*sizeSchema, len(args))
	for i, x := range args {
		as[i] = d.visit(x)
	}
	switch call.FunctionName() {
	case operators.Index:
		if len(args) == 2 {
			if k, ok := constString(args[1]); ok {
				return as[0].field(k)
			}
			return as[0].item()
		}
	case "dyn":
		if len(as) == 1 {
			return as[0]
		}
	case "shell.commands":
		return shellCommandsResult
	}
	return nil
}

func constString(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// formatCost writes a cost estimate the way budgets are documented: 2.1e9, 4.2e6, 950.
func formatCost(c uint64) string {
	if c == math.MaxUint64 {
		return "unbounded"
	}
	if c < 10_000 {
		return strconv.FormatUint(c, 10)
	}
	s := strconv.FormatFloat(float64(c), 'e', 1, 64) // 2.1e+09
	mant, exp, _ := strings.Cut(s, "e")
	exp = strings.TrimLeft(strings.TrimPrefix(exp, "+"), "0")
	mant = strings.TrimSuffix(mant, ".0")
	return mant + "e" + exp
}
