package policy

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tollgate-dev/tollgate/internal/budget"
)

// Hostile policies and requests (issue 12): each is rejected at compile with a field path, or
// answered within a bounded time and allocation.

// joinN joins n copies of s with sep.
func joinN(s, sep string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = s
	}
	return strings.Join(parts, sep)
}

// hostileWhen returns the largest expression of a costly-to-check shape (dynamic indexes, whose
// type checking grows fastest with size) that compiles, with key k so that expressions differ.
func hostileWhen(tb testing.TB, k string) string {
	tb.Helper()
	cc, err := newCELCompiler()
	if err != nil {
		tb.Fatal(err)
	}
	best := ""
	for n := 1; ; n++ {
		e := joinN("input['"+k+"']['b']['c'] == 1", " || ", n)
		if _, _, msg := cc.parse(e); msg != "" {
			break
		}
		best = e
	}
	if _, msg := cc.compileUncached(best, true); msg != "" {
		tb.Fatal(msg)
	}
	return best
}

// checkWork is the check work of an expression.
func checkWork(tb testing.TB, expr string) int {
	tb.Helper()
	cc, err := newCELCompiler()
	if err != nil {
		tb.Fatal(err)
	}
	_, w, msg := cc.parse(expr)
	if msg != "" {
		tb.Fatal(msg)
	}
	return w
}

// worstAdmissiblePolicy is the most expensive policy to compile that compiles: 256 rules (the CRD's
// limit) with distinct `when`s of the costliest shape known up to the per-policy budgets, then
// distinct small modify values up to them, and input patterns of large programs up to theirs.
func worstAdmissiblePolicy(tb testing.TB, tag string) PolicySpec {
	tb.Helper()
	spec := PolicySpec{InputGuards: &InputGuards{}}
	// Renaming a key or changing a literal does not change an expression's check work.
	template := hostileWhen(tb, tag+"k0")
	bigWork, smallWork := checkWork(tb, template), checkWork(tb, "'0'")
	bytes, work := 0, 0
	fits := func(e string, w int) bool {
		if bytes+len(e) > MaxPolicyExpressionBytes || work+w > MaxPolicyCheckWork {
			return false
		}
		bytes, work = bytes+len(e), work+w
		return true
	}
	for i := range 256 {
		r := Rule{Name: "r" + strconv.Itoa(i), Tools: []string{"bash", "tool-" + strconv.Itoa(i)}, Action: ActionDeny}
		if when := strings.ReplaceAll(template, "'"+tag+"k0'", "'"+tag+"k"+strconv.Itoa(i)+"'"); fits(when, bigWork) {
			r.When = when
		}
		spec.Rules = append(spec.Rules, r)
	}
	// Small distinct expressions, each costing at least the fixed work, as modify values.
	for i := range spec.Rules {
		r := &spec.Rules[i]
		if r.When != "" {
			continue
		}
		var set []InputField
		for j := range 32 {
			if v := "'" + tag + strconv.Itoa(i*32+j) + "'"; fits(v, smallWork) {
				set = append(set, InputField{Path: "f" + strconv.Itoa(j), Value: v})
			}
		}
		if len(set) == 0 {
			break
		}
		r.Action, r.Modify = ActionModify, &InputPatch{Set: set}
	}
	// Words with counted gaps: a literal start, large programs, up to the per-policy budget.
	insts := 0
	for i := range 128 {
		p := fmt.Sprintf(`\b%sw%d\b[^.\n]{0,100}\b(previous|prior|above)\b[^.\n]{0,100}\b(instructions|rules)\b`, tag, i)
		sc, err := compileScanner(p)
		if err != nil {
			tb.Fatal(err)
		}
		if insts += sc.insts; insts > MaxPolicyPatternInsts {
			break
		}
		spec.InputGuards.Patterns = append(spec.InputGuards.Patterns, InputPattern{Name: "p" + strconv.Itoa(i), Pattern: p, RiskLevel: RiskHigh})
	}
	return spec
}

func TestHostileWorstAdmissiblePolicy(t *testing.T) {
	spec := worstAdmissiblePolicy(t, "")
	if fe := ValidatePolicy(spec); len(fe) > 0 {
		t.Fatalf("the worst admissible policy does not compile: %v", fe)
	}
	c := budget.Check(t, "admitting the worst admissible policy", budget.Admission, func() {
		PolicyWarnings(spec)
		_ = ValidatePolicy(spec)
	})
	t.Logf("worst admissible policy (256 rules, %d input patterns): %s", len(spec.InputGuards.Patterns), c)
}

// TestHostileWarnings: the warnings of the policy the CRD allows whose shadowing analysis is the
// largest (256 unconditional rules of 64 globs, each almost covered by every earlier rule) take a
// bounded time.
func TestHostileWarnings(t *testing.T) {
	var spec PolicySpec
	for i := range 256 {
		tools := make([]string, 0, 64)
		for j := range 63 {
			tools = append(tools, "tool_"+strconv.Itoa(j)+"_*")
		}
		tools = append(tools, "z"+strconv.Itoa(i))
		spec.Rules = append(spec.Rules, Rule{Name: "r" + strconv.Itoa(i), Tools: tools, Action: ActionAllow})
	}
	c := budget.Check(t, "warnings of a policy of 256 × 64 globs", budget.Admission, func() {
		PolicyWarnings(spec)
		_ = ValidatePolicy(spec)
	})
	t.Logf("256 rules × 64 globs: %s", c)
}

// BenchmarkCompileWorstPolicy is what admitting the worst admissible policy costs (warnings and
// compile, as the webhook does).
func BenchmarkCompileWorstPolicy(b *testing.B) {
	spec := worstAdmissiblePolicy(b, "")
	b.ReportAllocs()
	for b.Loop() {
		PolicyWarnings(spec)
		if fe := ValidatePolicy(spec); len(fe) > 0 {
			b.Fatal(fe)
		}
	}
}

func TestHostilePolicies(t *testing.T) {
	replaceChain := "input.command" + strings.Repeat(".replace('a','aaaaaaaaaa')", 150) + " == ''"
	long := func(n int) []Rule {
		rules := make([]Rule, 0, n)
		for i := range n {
			// about 3,950 characters each, within the CRD's 4,096, distinct.
			when := "input.command == '" + strconv.Itoa(i) + strings.Repeat("x", 3900) + "' || tool == 'x'"
			rules = append(rules, Rule{Name: "r" + strconv.Itoa(i), Tools: []string{"bash"}, When: when, Action: ActionDeny})
		}
		return rules
	}
	tests := []struct {
		name string
		spec PolicySpec
		path string // the first error's path
		msg  string // a part of its message
	}{
		{"replace chain (issue 12)", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: replaceChain, Action: ActionDeny}}},
			"spec.rules[0].when", "estimated cost"},
		{"replace by the input", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "input.command.replace('a', input.command) != ''", Action: ActionDeny}}},
			"spec.rules[0].when", "estimated cost 1.1e12 exceeds the budget 1e7"},
		{"two replaces", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "input.command.replace('a','aaaaaaaaaa').replace('a','aaaaaaaaaa') != ''", Action: ActionDeny}}},
			"spec.rules[0].when", "estimated cost"},
		{"modify value", PolicySpec{Rules: []Rule{{Name: "m", Tools: []string{"bash"}, Action: ActionModify,
			Modify: &InputPatch{Set: []InputField{{Path: "command", Value: "input.command + input.command.replace('', input.command)"}}}}}},
			"spec.rules[0].modify.set[0].value", "estimated cost"},
		{"requirement", PolicySpec{Requires: []Requirement{{Name: "q", Expression: "input.a.all(x, input.b.all(y, x == y))", Code: "oap.policy_denied"}}},
			"spec.requires[0].expression", "estimated cost"},
		{"quadratic regex", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "input.command.matches('[a-z ]{0,1000}x[a-z ]{0,1000}y')", Action: ActionDeny}}},
			"spec.rules[0].when", "estimated cost"},
		{"regex from the request", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "input.command.matches(input.pattern)", Action: ActionDeny}}},
			"spec.rules[0].when", "estimated cost"},
		{"nested types explode", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "input.a" + strings.Repeat(".map(x, [{x: [x]}])", 16) + " == []", Action: ActionDeny}}},
			"spec.rules[0].when", "nests"},
		{"deep list", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: strings.Repeat("[", 120) + "input.a" + strings.Repeat("]", 120) + " == []", Action: ActionDeny}}},
			"spec.rules[0].when", "nests"},
		{"too many operations", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: joinN("input['a']['b']['c'] == 1", " || ", 140), Action: ActionDeny}}},
			"spec.rules[0].when", "operations"},
		{"too long", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "tool == '" + strings.Repeat("x", 5000) + "'", Action: ActionDeny}}},
			"spec.rules[0].when", "at most 4096 characters"},
		{"256 rules of 3,950 characters (issue 12)", PolicySpec{Rules: long(256)},
			"spec.rules[8].when", "per-policy budget"},
		{"policy cost", PolicySpec{Rules: func() []Rule {
			var rules []Rule
			for i := range 40 {
				rules = append(rules, Rule{Name: "r" + strconv.Itoa(i), Tools: []string{"bash"}, Action: ActionDeny,
					When: fmt.Sprintf("call.command != '' && shell.commands(call.command).exists(c, c.name == 'x%d' && 'p' in c.positionals && 'f' in c.flags)", i)})
			}
			return rules
		}()}, "spec.rules[22].when", "over the per-policy budget 1e8"},
		{"undeclared references", PolicySpec{Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: joinN("a", " || ", 100), Action: ActionDeny}}},
			"spec.rules[0].when", "and 95 more"},
		{"counted repetition (issue 12)", PolicySpec{InputGuards: &InputGuards{Patterns: []InputPattern{{Name: "p", Pattern: `[a-z ]{0,1000}x[a-z ]{0,1000}y`, RiskLevel: RiskHigh}}}},
			"spec.inputGuards.patterns[0].pattern", "counted repetition of 1000, more than 100"},
		{"pattern program", PolicySpec{InputGuards: &InputGuards{Patterns: []InputPattern{{Name: "p", Pattern: `x(\w{0,30}){0,30}`, RiskLevel: RiskHigh}}}},
			"spec.inputGuards.patterns[0].pattern", "RE2 instructions, more than 500"},
		{"pattern without a literal start", PolicySpec{InputGuards: &InputGuards{Patterns: []InputPattern{{Name: "p", Pattern: `.*secret`, RiskLevel: RiskHigh}}}},
			"spec.inputGuards.patterns[0].pattern", "must begin with literal text"},
		{"pattern of any word", PolicySpec{InputGuards: &InputGuards{Patterns: []InputPattern{{Name: "p", Pattern: `\w+\s+mode`, RiskLevel: RiskHigh}}}},
			"spec.inputGuards.patterns[0].pattern", "must begin with literal text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fe field.ErrorList
			c := budget.Check(t, tt.name, budget.Admission, func() { fe = ValidatePolicy(tt.spec) })
			if len(fe) == 0 {
				t.Fatal("compiled; want an error")
			}
			if fe[0].Field != tt.path || !strings.Contains(ErrorMessage(fe[0]), tt.msg) {
				t.Fatalf("first error %q: %q; want %s: …%s…", fe[0].Field, ErrorMessage(fe[0]), tt.path, tt.msg)
			}
			if len(ErrorMessage(fe[0])) > 2048 {
				t.Errorf("message of %d bytes", len(ErrorMessage(fe[0])))
			}
			t.Logf("%s (%s)", fe[0], c)
		})
	}
}

// TestHostileBundles: the most expensive bundle that compiles (as many worst policies as the
// per-bundle budgets allow) compiles within a bounded time; one over them is refused with a reason
// at the first policy over a budget, within a bounded time too.
func TestHostileBundles(t *testing.T) {
	worst := Bundle{Namespace: "agents", Passports: []Passport{passport("dev", nil, CapCommandExecute)}}
	for p := range MaxBundleCheckWork / MaxPolicyCheckWork {
		tag := "b" + strconv.Itoa(p)
		worst.Policies = append(worst.Policies, Policy{Name: "p" + strconv.Itoa(p), Spec: worstAdmissiblePolicy(t, tag)})
	}
	var snap *Snapshot
	var err error
	c := budget.Check(t, "compiling the worst admissible bundle", Limits2s, func() { snap, err = Compile(worst) })
	if err != nil {
		t.Fatalf("the worst admissible bundle does not compile: %v", err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("worst admissible bundle (%d worst policies): %s; heap in use after compiling %.0f MiB", len(worst.Policies), c, float64(ms.HeapAlloc)/(1<<20))
	runtime.KeepAlive(snap)

	over := worst
	over.Policies = append(append([]Policy(nil), worst.Policies...), Policy{Name: "extra", Spec: worstAdmissiblePolicy(t, "x")})
	for i := range 20 {
		over.Policies = append(over.Policies, Policy{Name: "more" + strconv.Itoa(i), Spec: worstAdmissiblePolicy(t, "m"+strconv.Itoa(i))})
	}
	c = budget.Check(t, "compiling a bundle over budget", Limits2s, func() { _, err = Compile(over) })
	ce, ok := err.(*CompileError)
	if !ok {
		t.Fatalf("err = %v, want *CompileError", err)
	}
	first := ce.Errors()[0]
	if !strings.HasPrefix(first.Field, "policies[extra].spec.") || !strings.Contains(ErrorMessage(first), "per-bundle budget") {
		t.Fatalf("first error %s", first)
	}
	t.Logf("%s (%s, %d errors)", first, c, len(ce.Errors()))
}

// Limits2s bounds compiling a whole bundle.
var Limits2s = budget.Limits{Time: 2 * time.Second, Bytes: 384 << 20}

// TestHostileRequests: calls that hit the runtime cost limit or the deadline fail as the policy's
// failurePolicy says, within a bounded time. The limit binds on values larger than the declared
// sizes (a decider run with a larger body limit, the library): here a 10 MiB string.
func TestHostileRequests(t *testing.T) {
	bigList := make([]any, 2_000_000)
	for i := range bigList {
		bigList[i] = "a"
	}
	big := strings.Repeat("x", 10<<20)
	compares := Rule{Name: "compares", Tools: []string{"bash"}, Action: ActionDeny,
		When: joinN("input.a == input.b", " && ", 30)}
	loop := Rule{Name: "loop", Tools: []string{"bash"}, Action: ActionDeny, When: "input.items.all(x, x.startsWith('a'))"}
	strs := map[string]any{"command": "ls", "a": big, "b": big}
	tests := []struct {
		name     string
		rule     Rule
		fail     string
		deadline time.Duration
		input    map[string]any
		decision string
		code     string
		msg      string
	}{
		{"runtime cost limit, closed", compares, FailClosed, time.Minute, strs, DecisionDeny, CodeEvaluatorError, "cost limit exceeded"},
		{"runtime cost limit, open", compares, FailOpen, time.Minute, strs, DecisionAllow, CodeAllowed, ""},
		{"deadline, closed", loop, FailClosed, time.Millisecond, map[string]any{"command": "ls", "items": bigList}, DecisionDeny, CodeEvaluatorError, "deadline"},
		{"deadline, open", loop, FailOpen, time.Millisecond, map[string]any{"command": "ls", "items": bigList}, DecisionAllow, CodeAllowed, ""},
		{"within bounds", loop, FailClosed, time.Minute, map[string]any{"command": "ls", "items": []any{"a", "b"}}, DecisionAllow, CodeAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := PolicySpec{FailurePolicy: tt.fail, Rules: []Rule{tt.rule}}
			p := passport("dev", nil, CapCommandExecute)
			p.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{"allowed_commands": []any{"ls"}}}
			snap, err := Compile(Bundle{Namespace: "agents", Passports: []Passport{p},
				Policies: []Policy{{Name: "p", Spec: spec}}}, WithEvalDeadline(tt.deadline))
			if err != nil {
				t.Fatal(err)
			}
			var d Decision
			budget.Check(t, tt.name, budget.Request, func() {
				d = snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash", ToolInput: tt.input})
			})
			if d.Decision != tt.decision || d.Reasons[0].Code != tt.code || !strings.Contains(d.Reasons[0].Message, tt.msg) {
				t.Fatalf("decision %s %v; want %s %s …%s…", d.Decision, d.Reasons, tt.decision, tt.code, tt.msg)
			}
			if tt.fail == FailOpen && (d.Metadata == nil || len(d.Metadata.Warnings) == 0 ||
				d.Metadata.Warnings[0].Reason.Code != CodeEvaluatorError) {
				t.Fatalf("failurePolicy Open: want an evaluator_error warning, got %+v", d.Metadata)
			}
		})
	}
}

// hostileMessages are pre_llm_call messages crafted to make screening slow.
func hostileMessages() map[string]string {
	mb := func(unit string) string { return strings.Repeat(unit, (1<<20)/len(unit)+1)[:1<<20] }
	return map[string]string{
		"trigger words":           mb("ignore the "),
		"trigger and needed word": mb("ignore the xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx instructions "),
		"short trigger":           mb("you "),
		"system tags":             mb("<|<|[ [ ### "),
		"whitespace":              "you" + strings.Repeat(" ", 1<<20-3),
		"no trigger":              mb("lorem ipsum dolor sit amet "),
	}
}

func TestHostileMessages(t *testing.T) {
	custom := PolicySpec{InputGuards: &InputGuards{BlockThreshold: RiskHigh, Patterns: []InputPattern{
		{Name: "gaps", Pattern: `x[a-z ]{0,100}y[a-z ]{0,100}z`, RiskLevel: RiskHigh},
		{Name: "words", Pattern: `\bignore\b.*\bsecrets?\b`, RiskLevel: RiskHigh},
	}}}
	snap, err := Compile(Bundle{Namespace: "agents",
		Passports: []Passport{passport("dev", map[string]string{"team": "dev"}), passport("plain", nil)},
		Policies:  []Policy{{Name: "custom", Spec: withSelector(custom, "team", "dev")}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := hostileMessages()
	msgs["gaps"] = strings.Repeat("x "+strings.Repeat("a", 98)+" y ", (1<<20)/104)
	for name, msg := range msgs {
		for _, pp := range []string{"dev", "plain"} {
			t.Run(name+"/"+pp, func(t *testing.T) {
				var d Decision
				c := budget.Check(t, name, budget.Request, func() {
					d = snap.Decide(context.Background(), Request{Passport: pp, Hook: HookPreLLMCall,
						Messages: []Message{{Role: "user", Content: msg}}})
				})
				// Screened in full (allowed, or denied for a match) or not screened in time (denied).
				if !d.Allow && d.Reasons[0].Code != CodePromptInjection {
					t.Fatalf("decision %v", d.Reasons)
				}
				t.Logf("%s: %s", d.Reasons[0].Message, c)
			})
		}
	}
}

func withSelector(spec PolicySpec, k, v string) PolicySpec {
	spec.PassportSelector = sel(k, v)
	return spec
}

// TestUnscreenedMessages: a message the guards cannot screen is denied (fail closed) by enforcing
// policies and recorded by DryRun ones.
func TestUnscreenedMessages(t *testing.T) {
	tooLong := strings.Repeat("a", MaxScanBytes+1)
	slow := hostileMessages()["trigger and needed word"]
	tests := []struct {
		name     string
		spec     *PolicySpec // nil: no policy (the built-in guards)
		deadline time.Duration
		msg      string
		allow    bool
		dryRun   bool
		reason   string
	}{
		{"too long, built-in guards", nil, 0, tooLong, false, false, "more than the 1048576"},
		{"too long, enforcing policy", &PolicySpec{}, 0, tooLong, false, false, "could not screen"},
		{"too long, DryRun policy", &PolicySpec{EnforcementAction: EnforcementDryRun}, 0, tooLong, true, true, ""},
		{"too long, no patterns", &PolicySpec{InputGuards: &InputGuards{DisableDefaultPatterns: true}}, 0, tooLong, true, false, ""},
		{"deadline", &PolicySpec{}, time.Millisecond, slow, false, false, "deadline"},
		{"in time", &PolicySpec{}, time.Minute, slow, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Bundle{Namespace: "agents", Passports: []Passport{passport("dev", nil)}}
			if tt.spec != nil {
				b.Policies = []Policy{{Name: "p", Spec: *tt.spec}}
			}
			snap, err := Compile(b, WithEvalDeadline(tt.deadline))
			if err != nil {
				t.Fatal(err)
			}
			d := snap.Decide(context.Background(), Request{Passport: "dev", Hook: HookPreLLMCall,
				Messages: []Message{{Role: "user", Content: tt.msg}}})
			if d.Allow != tt.allow || (!tt.allow && (d.Reasons[0].Code != CodePromptInjection || !strings.Contains(d.Reasons[0].Message, tt.reason))) {
				t.Fatalf("decision %v %v", d.Allow, d.Reasons)
			}
			if tt.dryRun && (d.Metadata == nil || len(d.Metadata.DryRun) != 1 || d.Metadata.DryRun[0].Reason.Code != CodePromptInjection) {
				t.Fatalf("DryRun: want the would-be deny in metadata, got %+v", d.Metadata)
			}
			if !tt.allow && (d.Metadata == nil || d.Metadata.Risk == nil || !d.Metadata.Risk.HasRisk) {
				t.Fatalf("want a risk assessment with a risk, got %+v", d.Metadata)
			}
		})
	}
}
