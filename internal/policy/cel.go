package policy

import (
	"encoding/base64"
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

// celCostLimit bounds the runtime cost of one expression evaluation.
const celCostLimit = 100_000

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

// celCompiler compiles expressions against one environment, reusing programs for identical text.
type celCompiler struct {
	env   *cel.Env
	cache map[celKey]celResult
}

type celKey struct {
	expr     string
	wantBool bool
}

type celResult struct {
	prg cel.Program
	msg string
}

func newCELCompiler() (*celCompiler, error) {
	env, err := baseCELEnv()
	if err != nil {
		return nil, err
	}
	return &celCompiler{env: env, cache: map[celKey]celResult{}}, nil
}

// compile checks expr; wantBool requires a bool (or dyn, checked at runtime) result. On failure the
// returned message describes the problem.
func (c *celCompiler) compile(expr string, wantBool bool) (cel.Program, string) {
	k := celKey{expr, wantBool}
	if r, ok := c.cache[k]; ok {
		return r.prg, r.msg
	}
	prg, msg := c.compileUncached(expr, wantBool)
	c.cache[k] = celResult{prg, msg}
	return prg, msg
}

func (c *celCompiler) compileUncached(expr string, wantBool bool) (cel.Program, string) {
	if strings.TrimSpace(expr) == "" {
		return nil, "expression is empty"
	}
	checked, iss := c.env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, celIssueMessage(iss.Err().Error())
	}
	if wantBool {
		out := checked.OutputType()
		if !out.IsExactType(types.BoolType) && !out.IsExactType(types.DynType) {
			return nil, fmt.Sprintf("expression must evaluate to bool, not %s", out)
		}
	}
	// Without comprehensions an expression has no loops: its cost is bounded by its size times the
	// request size, so the (costly) runtime cost tracking is only needed for comprehensions.
	popts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if hasComprehension(checked) {
		popts = append(popts, cel.CostLimit(celCostLimit))
	}
	prg, err := c.env.Program(checked, popts...)
	if err != nil {
		return nil, celIssueMessage(err.Error())
	}
	return prg, ""
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

// isConstBool reports whether expr parses to the literal want.
func isConstBool(env *cel.Env, expr string, want bool) bool {
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
	call     map[string]any // the call variable, built on first use
	req      Request
	reqVal   map[string]any
	now      time.Time
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
			a.call = callValue(a.input)
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

// evalBool evaluates a bool program.
func evalBool(prg cel.Program, act *activation) (bool, error) {
	out, _, err := prg.Eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("expression returned %s, want bool", out.Type().TypeName())
	}
	return bool(b), nil
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
