package policy_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/manifest"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
)

func benchDecide(b *testing.B, bundle policy.Bundle, req policy.Request) {
	b.Helper()
	// A long evaluation deadline (the same code path as the default) lets the benchmark run under
	// valgrind --tool=callgrind, whose slowdown would exceed the default 50 ms on the first call.
	snap, err := policy.Compile(bundle, policy.WithEvalDeadline(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if d := snap.Decide(ctx, req); d.Decision != policy.DecisionAllow {
		b.Fatalf("decision = %s (%v), want allow", d.Decision, d.Reasons)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		snap.Decide(ctx, req)
	}
}

// BenchmarkDecideNameRules100 is target (a): one passport, a 100-rule name-only policy (≤ 1 µs).
func BenchmarkDecideNameRules100(b *testing.B) {
	benchDecide(b, policytest.OnePolicyBundle(policytest.NameRules(100)),
		policytest.ToolRequest("agent", "tool-50"))
}

// BenchmarkDecideCELRules20 is target (b): 20 rules with CEL conditions, all evaluated (≤ 5 µs).
func BenchmarkDecideCELRules20(b *testing.B) {
	benchDecide(b, policytest.OnePolicyBundle(policytest.CELRules(20)),
		policytest.ToolRequest("agent", "bash"))
}

// BenchmarkDecideCELRules20Distinct is target (b) with 20 distinct conditions: no rule reuses
// another's result.
func BenchmarkDecideCELRules20Distinct(b *testing.B) {
	benchDecide(b, policytest.OnePolicyBundle(policytest.CELRulesDistinct(20)),
		policytest.ToolRequest("agent", "bash"))
}

// BenchmarkDecideLargeSnapshot is target (c): 10,000 passports and 1,000 policies (within 2× of (a)).
func BenchmarkDecideLargeSnapshot(b *testing.B) {
	benchDecide(b, policytest.LargeBundle(10_000, 1_000),
		policytest.ToolRequest("agent-7777", "tool-50"))
}

// BenchmarkCompileLarge compiles target (c) (≤ 2 s, ≤ 200 MiB heap).
func BenchmarkCompileLarge(b *testing.B) {
	bundle := policytest.LargeBundle(10_000, 1_000)
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		snap, err := policy.Compile(bundle)
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
		runtime.KeepAlive(snap)
	}
	b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
}

// BenchmarkCompilePolicy is what the admission webhook pays to validate one realistic policy.
func BenchmarkCompilePolicy(b *testing.B) {
	spec := policytest.Sample().Policies[0].Spec
	if fe := policy.ValidatePolicy(spec); len(fe) > 0 {
		b.Fatal(fe)
	}
	b.ReportAllocs()
	for b.Loop() {
		if fe := policy.ValidatePolicy(spec); len(fe) > 0 {
			b.Fatal(fe)
		}
		policy.PolicyWarnings(spec)
	}
}

// chatText is a realistic user message: prose and code with the words the built-in input patterns
// start with (you, act, show, print, new, real, do, no, ignore, override, <, [, ###), none of them
// completing a match.
const chatText = `Could you show me why the new build fails? I think the real problem is in the parser: do not
ignore whitespace in the diff, and print the stack trace so we can act on it. There is no cache yet.

### Steps
1. Run <code>make test</code> and [open the report](report.html).
2. If you see "override" warnings, check the @Override annotations in Parser.java.

` + "```" + `java
@Override
public String toString() { return "Parser[" + name + "]"; } // show the name, no new lines
` + "```" + `
Thanks, that should act as a repro. Do you need the full log? Please display the summary only.
`

// BenchmarkInputGuards1MB is a 1 MiB pre_llm_call message screened with the built-in patterns (the
// issue's target: ≤ 20 ms).
func BenchmarkInputGuards1MB(b *testing.B) {
	msg := strings.Repeat(chatText, (1<<20)/len(chatText)+1)[:1<<20]
	bundle := policytest.OnePolicyBundle(nil)
	req := policy.Request{Passport: "agent", Hook: policy.HookPreLLMCall,
		Messages: []policy.Message{{Role: "user", Content: msg}}}
	b.SetBytes(int64(len(msg)))
	benchDecide(b, bundle, req)
}

// samplesBundle is config/samples' namespace bundle (the coding-agent passport and the policies).
func samplesBundle(b *testing.B) policy.Bundle {
	b.Helper()
	set, err := manifest.Load(filepath.Join("..", "..", "config", "samples"))
	if err != nil {
		b.Fatal(err)
	}
	bundles, err := set.Bundles()
	if err != nil || len(bundles) == 0 {
		b.Fatalf("sample bundles: %v (%d)", err, len(bundles))
	}
	return bundles[0]
}

// shellSampleCommand is the command of make bench's row 1d; %d makes it new for the cold variant.
const shellSampleCommand = "git diff --stat HEAD~1 | head -50 && grep -rn TODO internal/p%d/ | wc -l"

// BenchmarkDecideShellSample is row 1d: a shell call under the sample passport, its analysis and
// verdict cached as an agent repeating a command finds them (≤ 15 µs).
func BenchmarkDecideShellSample(b *testing.B) {
	benchDecide(b, samplesBundle(b), policy.Request{Passport: "coding-agent", ToolName: "bash",
		ToolInput: map[string]any{"command": fmt.Sprintf(shellSampleCommand, 7)}})
}

// BenchmarkDecideShellSampleCold is row 1d with a command never seen before on every call (≤ 15 µs).
func BenchmarkDecideShellSampleCold(b *testing.B) {
	snap, err := policy.Compile(samplesBundle(b), policy.WithEvalDeadline(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]policy.Request, 1<<14)
	for i := range reqs {
		reqs[i] = policy.Request{Passport: "coding-agent", ToolName: "bash",
			ToolInput: map[string]any{"command": fmt.Sprintf(shellSampleCommand, i)}}
	}
	ctx := context.Background()
	if d := snap.Decide(ctx, reqs[len(reqs)-1]); d.Decision != policy.DecisionAllow {
		b.Fatalf("decision = %s (%v), want allow", d.Decision, d.Reasons)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		snap.Decide(ctx, reqs[i%len(reqs)])
		i++
	}
}
