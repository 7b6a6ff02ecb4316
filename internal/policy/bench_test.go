package policy_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/policy/policytest"
)

func benchDecide(b *testing.B, bundle policy.Bundle, req policy.Request, want string) {
	b.Helper()
	snap, err := policy.Compile(bundle)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if d := snap.Decide(ctx, req); d.Decision != want {
		b.Fatalf("decision = %s (%v), want %s", d.Decision, d.Reasons, want)
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
		policytest.ToolRequest("agent", "tool-50"), policy.DecisionAllow)
}

// BenchmarkDecideCELRules20 is target (b): 20 rules with CEL conditions, all evaluated (≤ 5 µs).
func BenchmarkDecideCELRules20(b *testing.B) {
	benchDecide(b, policytest.OnePolicyBundle(policytest.CELRules(20)),
		policytest.ToolRequest("agent", "bash"), policy.DecisionAllow)
}

// BenchmarkDecideLargeSnapshot is target (c): 10,000 passports and 1,000 policies (within 2× of (a)).
func BenchmarkDecideLargeSnapshot(b *testing.B) {
	benchDecide(b, policytest.LargeBundle(10_000, 1_000),
		policytest.ToolRequest("agent-7777", "tool-50"), policy.DecisionAllow)
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
	if fe := policy.CompilePolicy(spec); len(fe) > 0 {
		b.Fatal(fe)
	}
	b.ReportAllocs()
	for b.Loop() {
		if fe := policy.CompilePolicy(spec); len(fe) > 0 {
			b.Fatal(fe)
		}
		policy.PolicyWarnings(spec)
	}
}
