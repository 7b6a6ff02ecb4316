package policy

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestDeclaredSizes(t *testing.T) {
	tests := []struct {
		path []string
		want uint64 // 0: unknown
	}{
		{[]string{"tool"}, DeclaredRequestBytes},
		{[]string{"input"}, DeclaredRequestBytes},
		{[]string{"input", "command"}, DeclaredRequestBytes},
		{[]string{"input", "a", "@items", "b", "@keys"}, DeclaredRequestBytes},
		{[]string{"call", "paths"}, MaxCallPaths},
		{[]string{"call", "paths", "@items"}, 4096},
		{[]string{"call", "urls", "@items"}, 8192},
		{[]string{"request", "hook"}, 16},
		{[]string{"passport", "name"}, 253},
		{[]string{"passport", "capabilities"}, 64},
		{[]string{"passport", "capabilities", "@values", "x"}, DeclaredObjectBytes},
		{[]string{"passport", "labels", "@keys"}, 317},
		{[]string{"limits", "allowed_commands", "@items"}, DeclaredObjectBytes},
		{[]string{"@items"}, 0},
		{[]string{"nosuch"}, 0},
	}
	for _, tt := range tests {
		s := schemaAt(tt.path)
		switch {
		case tt.want == 0 && s != nil:
			t.Errorf("%v: declared %d, want unknown", tt.path, s.max)
		case tt.want != 0 && (s == nil || s.max != tt.want):
			t.Errorf("%v: %+v, want %d", tt.path, s, tt.want)
		}
	}
}

// TestEstimates pins the cost model: what realistic expressions cost against the declared sizes,
// and that those the README shows fit the budget.
func TestEstimates(t *testing.T) {
	tests := []struct {
		expr     string
		min, max uint64 // the estimate's range; max 0: rejected
	}{
		{`tool == "bash"`, 1, 10},
		{`passport.assuranceLevel == "L0" && request.is_subagent`, 1, 10},
		{`has(input.command) && input.command.startsWith("rm ")`, 1, 10},
		{`has(input.command) && input.command.contains("curl")`, 1e5, 2e5},
		{`has(input.command) && input.command.matches("^(shutdown|reboot|halt)\\b")`, 1e5, 1e6},
		{`shell.commands(call.command).size() > 3`, 1e5, 2e5},
		{"call.command != '' && shell.commands(call.command).exists(c, c.name == 'git' && 'push' in c.positionals && 'force' in c.flags)", 1e6, 1e7},
		{"call.urls.exists(u, !url(u).getHostname().endsWith('.example.com'))", 1e4, 1e6},
		{"call.paths.exists(p, path.matches(p, '/workspace/**') == false)", 1e6, 1e7},
		{"call.paths.exists(p, path.sensitiveRead(p))", 1e6, 1e7},
		{"passport.labels.exists(k, k.startsWith('team'))", 1e5, 1e7},
		{"input.command.replace('a', 'b') != ''", 1e6, 1e7},
		{"input.command.replace('a', input.command) != ''", 0, 0},
		{"input.command.split(' ').exists(w, w.contains(input.command))", 0, 0},
		{"input.a.all(x, input.b.all(y, x == y))", 0, 0},
		{"input.command.matches('[a-z]{0,500}x')", 0, 0},
		{"input.command + input.command + input.command == ''", 1e5, 1e6},
		{"'%s-%s'.format([input.a, input.b]).contains('x')", 0, 0}, // format builds a string of unknown size
	}
	cc, err := newCELCompiler()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		p, msg := cc.compileUncached(tt.expr, true)
		switch {
		case tt.max == 0:
			if msg == "" || !strings.Contains(msg, "estimated cost") {
				t.Errorf("%s: %v %q, want rejected for its estimated cost", tt.expr, p, msg)
			}
		case msg != "":
			t.Errorf("%s: %s", tt.expr, msg)
		case p.cost < tt.min || p.cost > tt.max:
			t.Errorf("%s: estimated %s, want %s…%s", tt.expr, formatCost(p.cost), formatCost(tt.min), formatCost(tt.max))
		}
	}
}

// TestSamplesFitTheBudgets: the sample policies (and so the README's examples) compile.
func TestSamplesFitTheBudgets(t *testing.T) {
	files, err := filepath.Glob("../../config/samples/*guardrailpolicy*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			Spec PolicySpec `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fe := ValidatePolicy(obj.Spec); len(fe) > 0 {
			t.Errorf("%s: %v", filepath.Base(f), fe)
		}
	}
}

func TestFormatCost(t *testing.T) {
	tests := []struct {
		c    uint64
		want string
	}{
		{0, "0"}, {950, "950"}, {10_000, "1e4"}, {2_100_000_000, "2.1e9"}, {MaxExpressionCost, "1e7"},
		{4_194_304, "4.2e6"}, {math.MaxUint64, "unbounded"},
	}
	for _, tt := range tests {
		if got := formatCost(tt.c); got != tt.want {
			t.Errorf("formatCost(%d) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

// TestDeadlineBetweenExpressions: expressions without loops are not interrupted, but none starts
// after the deadline.
func TestDeadlineBetweenExpressions(t *testing.T) {
	var rules []Rule
	for i := range 10 {
		rules = append(rules, Rule{Name: "r" + string(rune('a'+i)), Tools: []string{"bash"}, Action: ActionDeny,
			When: "input.command.contains('" + strings.Repeat("z", i+1) + "y')"})
	}
	p := passport("dev", nil, CapCommandExecute)
	p.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{"allowed_commands": []any{"ls"}}}
	for _, tt := range []struct {
		deadline time.Duration
		code     string
	}{{time.Nanosecond, CodeEvaluatorError}, {time.Minute, CodeAllowed}} {
		snap, err := Compile(Bundle{Namespace: "agents", Passports: []Passport{p},
			Policies: []Policy{{Name: "p", Spec: PolicySpec{Rules: rules}}}}, WithEvalDeadline(tt.deadline))
		if err != nil {
			t.Fatal(err)
		}
		d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash",
			ToolInput: map[string]any{"command": "ls " + strings.Repeat("z", 1000)}})
		if d.Reasons[0].Code != tt.code {
			t.Errorf("deadline %v: %v, want %s", tt.deadline, d.Reasons, tt.code)
		}
	}
}

// TestDeadlineExcludesEvaluators: time spent in an external evaluator does not count against the
// deadline of the CEL expressions evaluated after it.
func TestDeadlineExcludesEvaluators(t *testing.T) {
	slow := EvaluatorFunc(func(ctx context.Context, _ Request) (Verdict, error) {
		time.Sleep(30 * time.Millisecond)
		return Verdict{Decision: DecisionAllow}, nil
	})
	p := passport("dev", nil, CapCommandExecute)
	p.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{"allowed_commands": []any{"ls"}}}
	b := Bundle{Namespace: "agents", Passports: []Passport{p}, Policies: []Policy{
		{Name: "first", Spec: PolicySpec{Priority: 10, ExternalEvaluator: &ExternalEvaluatorSpec{URL: "https://eval.example"},
			Rules: []Rule{{Name: "r", Tools: []string{"bash"}, When: "input.command == 'x'", Action: ActionDeny}}}},
		{Name: "second", Spec: PolicySpec{
			Rules: []Rule{{Name: "loop", Tools: []string{"bash"}, When: "input.items.all(x, x == 'a')", Action: ActionDeny}}}},
	}}
	snap, err := Compile(b, WithEvalDeadline(10*time.Millisecond), WithEvaluators(func(ExternalEvaluatorSpec) Evaluator { return slow }))
	if err != nil {
		t.Fatal(err)
	}
	d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash",
		ToolInput: map[string]any{"command": "ls", "items": []any{"b"}}})
	if !d.Allow {
		t.Fatalf("decision %v, want allowed", d.Reasons)
	}
}

// TestSharedFrameAcrossProgramKinds: one decision evaluates plain, cost-tracked and looping
// programs and a modification, and the plain ones share one execution frame. Every program must
// see the input as it is at its turn: the last policy denies only when it sees the modified input,
// and a fresh decision after it sees the original input again.
func TestSharedFrameAcrossProgramKinds(t *testing.T) {
	cc, err := newCELCompiler()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]func(*celProgram) bool{
		`input.command.startsWith("zz")`:                               func(p *celProgram) bool { return !p.loops && !p.tracked },
		`input.command.replace('a', 'b').replace('c', 'd') == 'never'`: func(p *celProgram) bool { return p.tracked },
		`[1, 2, 3].exists(x, x == size(input.command))`:                func(p *celProgram) bool { return p.loops },
		`input.command == "reset" && tool == "bash"`:                   func(p *celProgram) bool { return !p.loops && !p.tracked },
		`input.command != "reset" && input.command != ""`:              func(p *celProgram) bool { return !p.loops && !p.tracked },
	}
	for expr, want := range kinds {
		p, msg := cc.compileUncached(expr, true)
		if msg != "" || !want(p) {
			t.Fatalf("%s: %q, loops %v tracked %v: not the kind the test needs", expr, msg, p != nil && p.loops, p != nil && p.tracked)
		}
	}
	dev := passport("dev", nil, CapCommandExecute)
	dev.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{"allowed_commands": []any{"*"}}}
	bundle := Bundle{Version: BundleVersion, Namespace: "agents", Passports: []Passport{dev}, Policies: []Policy{
		{Name: "first", Namespace: "agents", Spec: PolicySpec{Priority: 20, Rules: []Rule{
			{Name: "plain", Tools: []string{"bash"}, When: `input.command.startsWith("zz")`, Action: ActionDeny, Code: "t.plain"},
			{Name: "tracked", Tools: []string{"bash"}, When: `input.command.replace('a', 'b').replace('c', 'd') == 'never'`, Action: ActionDeny, Code: "t.tracked"},
			{Name: "loop", Tools: []string{"bash"}, When: `[1, 2, 3].exists(x, x == size(input.command))`, Action: ActionDeny, Code: "t.loop"},
			{Name: "reset", Tools: []string{"bash"}, When: `input.command != "reset" && input.command != ""`, Action: ActionModify,
				Modify: &InputPatch{Set: []InputField{{Path: "command", Value: `"reset"`}}}},
		}}},
		{Name: "second", Namespace: "agents", Spec: PolicySpec{Priority: 10, Rules: []Rule{
			{Name: "sees-reset", Tools: []string{"bash"}, When: `input.command == "reset" && tool == "bash"`, Action: ActionDeny, Code: "t.saw_reset"},
		}}},
	}}
	snap, err := Compile(bundle, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, tc := range []struct{ cmd, code string }{{"git status", "t.saw_reset"}, {"zz top", "t.plain"}, {"ab", "t.loop"}} {
			d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": tc.cmd}})
			if d.Decision != DecisionDeny || d.Reasons[0].Code != tc.code {
				t.Fatalf("%q: %s %v, want deny %s", tc.cmd, d.Decision, d.Reasons, tc.code)
			}
		}
	}
}

// TestSharedExpressionResults: an expression two policies use is evaluated once per decision and
// input. The first policy's rule does not match "x", then the policy changes the input to "y": the
// second policy, with the same expression, must see "y" and deny.
func TestSharedExpressionResults(t *testing.T) {
	const seesY = `input.command == "y" && tool == "bash"`
	dev := passport("dev", nil, CapCommandExecute)
	dev.Spec.Limits = map[string]any{CapCommandExecute: map[string]any{"allowed_commands": []any{"*"}}}
	bundle := Bundle{Version: BundleVersion, Namespace: "agents", Passports: []Passport{dev}, Policies: []Policy{
		{Name: "first", Namespace: "agents", Spec: PolicySpec{Priority: 20, Rules: []Rule{
			{Name: "sees-y", Tools: []string{"bash"}, When: seesY, Action: ActionDeny, Code: "t.first_saw_y"},
			{Name: "to-y", Tools: []string{"bash"}, When: `input.command == "x"`, Action: ActionModify,
				Modify: &InputPatch{Set: []InputField{{Path: "command", Value: `"y"`}}}},
		}}},
		{Name: "second", Namespace: "agents", Spec: PolicySpec{Priority: 10, Rules: []Rule{
			{Name: "sees-y", Tools: []string{"bash"}, When: seesY, Action: ActionDeny, Code: "t.second_saw_y"},
		}}},
	}}
	snap, err := Compile(bundle, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cmd, decision, code string }{
		{"x", DecisionDeny, "t.second_saw_y"}, {"y", DecisionDeny, "t.first_saw_y"}, {"z", DecisionAllow, CodeAllowed},
	} {
		d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": tc.cmd}})
		if d.Decision != tc.decision || d.Reasons[0].Code != tc.code {
			t.Errorf("%q: %s %v, want %s %s", tc.cmd, d.Decision, d.Reasons, tc.decision, tc.code)
		}
	}
}
